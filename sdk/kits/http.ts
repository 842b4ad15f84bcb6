/**
 * `spar/sdk/http`: what an HTTP layer needs beside its framework: checking a signed request (RFC
 * 9421 signatures and the content digest, as `spar/sign` makes them), telling loopback callers and
 * Host headers apart, showing a key's scope, a bout's origin and filtering by it, and reading a
 * page's `limit` and `before`. The Arena (arena-http) and plugins' own routes use these.
 *
 * @example
 * import { digestMatches, signatureKeyId, verifyRequest } from "spar/sdk/http";
 */
/**
 * The API's records as JSON Schemas, for a route's `response` (lib/api-records.ts): a titled one
 * is a named type in the OpenAPI document.
 *
 * @example
 * routes.add({ ..., operationId: "listTroops", response: { "200": listOf("troops", TROOP_SCHEMA) } });
 */
export {
  APPROVAL_RULE_SCHEMA,
  APPROVAL_SCHEMA,
  BOUT_SCHEMA,
  BUDGET_STATUS_SCHEMA,
  FIGHTER_MANIFEST,
  FIGHTER_SCHEMA,
  FREE_OBJECT,
  GORILLA_LIST_SCHEMA,
  GORILLA_RUN_SCHEMA,
  GORILLA_SCHEMA,
  listOf,
  MESSAGE_REPLY_SCHEMA,
  MESSAGE_SCHEMA,
  openAnswer,
  PAGE_QUERY,
  record,
  SKILL_SCHEMA,
  TROOP_SCHEMA,
  TROOP_TASK_SCHEMA,
  TURN_SCHEMA,
} from "../../lib/api-records.js";
export { originFilter, originMatches, shownBout, USER_ORIGIN } from "../../lib/bout-origins.js";
export {
  digestMatches,
  type SignableRequest,
  signatureKeyId,
  type VerifyOptions,
  type VerifyResult,
  verifyRequest,
} from "../../lib/http-signatures.js";
export { formatScope } from "../../lib/keys.js";
export { isLoopbackAddress, isLoopbackHost, isLoopbackHostHeader } from "../../lib/loopback.js";
export { pageOf } from "../../lib/paging.js";
export { portInUse } from "../../lib/port-owner.js";
