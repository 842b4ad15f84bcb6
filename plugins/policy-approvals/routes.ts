/**
 * The approvals routes on the API listener (also answered under `/api/…`): the requests, listed and
 * shown to any key that may read, answered by keys with the `operator` or `admin` scope (the Arena's
 * route table, plugins/arena-http/access.ts), and the rules, config's and those `--always` stored.
 */
import { type EventBus, type RouteRegistry, SparError } from "../../sdk/index.js";
import {
  APPROVAL_RULE_SCHEMA,
  APPROVAL_SCHEMA,
  listOf,
  PAGE_QUERY,
  pageOf,
  record,
} from "../../sdk/kits/http.js";
import type { ApprovalSettings } from "./policy.js";
import { type Records, type RequestStatus, STATUSES } from "./records.js";

const BASE = "/api/v1/approvals";

const ID = {
  type: "object",
  properties: { id: { type: "string", minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9:-]+$" } },
};

/** Who answered: the key that signed the request, or the machine's owner (unsigned, on loopback). */
const answerer = (keyId: string | undefined) => keyId ?? "owner (unsigned loopback)";

function statusOf(query: Record<string, string>): RequestStatus | undefined {
  const status = query.status;
  if (status === undefined || status === "all") return undefined;
  if (!STATUSES.includes(status as RequestStatus)) {
    throw new SparError("VALIDATION_FAILED", `?status must be one of ${[...STATUSES, "all"].join(", ")}`, {
      path: "/querystring/status",
    });
  }
  return status as RequestStatus;
}

export function addApprovalRoutes(
  routes: RouteRegistry,
  deps: { records: Records; settings: ApprovalSettings; events: EventBus },
): void {
  const { records, settings, events } = deps;
  const answered = (request: { id: string; fighter_id: string; status: string; answered_by?: string }) =>
    events.publish({
      kind: "approval.answered",
      request_id: request.id,
      fighter_id: request.fighter_id,
      status: request.status,
      answered_by: request.answered_by ?? "",
    });

  // Before `/:id`, which would take "rules" for an id.
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/rules`,
    operationId: "listApprovalRules",
    summary: "List the approval rules: config.toml's and those stored with always",
    response: { "200": listOf("rules", APPROVAL_RULE_SCHEMA) },
    handler: async () => ({
      body: {
        rules: [
          ...settings.rules.map((rule, n) => ({ id: `config:${n}`, source: "config", ...rule })),
          ...(await records.rules.list()).map((rule) => ({ ...rule, source: "stored", action: "allow" })),
        ],
      },
    }),
  });
  routes.add({
    listener: "api",
    method: "DELETE",
    path: `${BASE}/rules/:id`,
    operationId: "removeApprovalRule",
    summary: "Remove a stored approval rule",
    response: { "200": record(undefined, { removed: {} }, {}, { additionalProperties: true }) },
    params: ID,
    handler: async ({ params }) => {
      const id = params.id as string;
      if (id.startsWith("config:")) {
        throw new SparError(
          "VALIDATION_FAILED",
          `rule ${id} is in config.toml's [[approvals.rules]]: edit the file and restart to remove it`,
          { path: "/params/id" },
        );
      }
      return { body: { removed: await records.rules.remove(id) } };
    },
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: BASE,
    operationId: "listApprovals",
    summary: "List approval requests, newest first",
    query: {
      type: "object",
      properties: {
        ...PAGE_QUERY.properties,
        status: { enum: ["pending", "approved", "denied", "expired", "cancelled", "all"] },
      },
    },
    response: { "200": listOf("approvals", APPROVAL_SCHEMA) },
    handler: async ({ query }) => {
      const page = pageOf(query, "request");
      return { body: { approvals: await records.list({ ...page, ...optional(statusOf(query)) }) } };
    },
  });
  routes.add({
    listener: "api",
    method: "GET",
    path: `${BASE}/:id`,
    operationId: "getApproval",
    summary: "Show an approval request",
    response: { "200": APPROVAL_SCHEMA },
    params: ID,
    handler: async ({ params }) => ({ body: await records.get(params.id as string) }),
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/approve`,
    operationId: "approveRequest",
    summary: "Approve a waiting call (with always, store a rule for it too)",
    response: {
      "200": record(
        undefined,
        { approval: APPROVAL_SCHEMA },
        { rule: { type: "object", additionalProperties: true } },
      ),
    },
    params: ID,
    body: {
      type: "object",
      additionalProperties: false,
      properties: {
        always: {
          type: "boolean",
          description: "also store a rule allowing this fighter this exact call (or `pattern`) from now on",
        },
        pattern: {
          type: "string",
          minLength: 1,
          maxLength: 4096,
          description: "with always: a glob over the call's main argument instead of the exact call",
        },
      },
    },
    handler: async ({ params, body, keyId }) => {
      const { always, pattern } = (body ?? {}) as { always?: boolean; pattern?: string };
      if (pattern !== undefined && !always) {
        throw new SparError("VALIDATION_FAILED", "pattern goes with always: true (the rule it stores)", {
          path: "/body/pattern",
        });
      }
      const outcome = await records.answer(
        params.id as string,
        {
          approve: true,
          ...(always ? { always } : {}),
          ...(pattern !== undefined ? { pattern } : {}),
          by: answerer(keyId),
        },
        answered,
      );
      answered(outcome.request);
      return { body: { approval: outcome.request, ...(outcome.rule ? { rule: outcome.rule } : {}) } };
    },
  });
  routes.add({
    listener: "api",
    method: "POST",
    path: `${BASE}/:id/deny`,
    operationId: "denyRequest",
    summary: "Deny a waiting call",
    response: { "200": record(undefined, { approval: APPROVAL_SCHEMA }) },
    params: ID,
    body: {
      type: "object",
      additionalProperties: false,
      properties: {
        reason: {
          type: "string",
          minLength: 1,
          maxLength: 1000,
          description: "why, for the model (it is told) and the record",
        },
      },
    },
    handler: async ({ params, body, keyId }) => {
      const { reason } = (body ?? {}) as { reason?: string };
      const outcome = await records.answer(
        params.id as string,
        { approve: false, ...(reason !== undefined ? { reason } : {}), by: answerer(keyId) },
        answered,
      );
      answered(outcome.request);
      return { body: { approval: outcome.request } };
    },
  });
}

function optional<T>(status: T | undefined): { status?: T } {
  return status === undefined ? {} : { status };
}
