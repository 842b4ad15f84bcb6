/**
 * The one catalog of Spar's errors. Every error that reaches a caller carries a stable `code`; the
 * HTTP status is looked up from that code, never guessed from message text.
 *
 * @example
 * throw new SparError("FIGHTER_NOT_FOUND", `No fighter with id ${id}`);
 */
export const ERROR_CATALOG = {
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  CAPABILITY_DENIED: 403,
  // Approvals ([approvals]): the operator (or a rule) refused the call; an unattended turn (a gorilla,
  // a schedule) met a call that needs an answer; the request ran out of time before one; the call's
  // files or arguments changed after it was approved (it must be asked again).
  APPROVAL_DENIED: 403,
  APPROVAL_REQUIRED: 403,
  APPROVAL_EXPIRED: 410,
  APPROVAL_STALE: 409,
  NOT_FOUND: 404,
  FIGHTER_NOT_FOUND: 404,
  BOUT_NOT_FOUND: 404,
  GORILLA_NOT_FOUND: 404,
  TROOP_NOT_FOUND: 404,
  MOVE_NOT_FOUND: 404,
  CONFLICT: 409,
  // A troop task refused before any model call: the troop's leader or a member no longer exists.
  TROOP_INCOMPLETE: 409,
  // A turn stopped by its client leaving, POST …/cancel, a WebSocket cancel frame or shutdown.
  CANCELLED: 409,
  // A request that took longer to arrive than the server waits (Node's requestTimeout).
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UPGRADE_REQUIRED: 426,
  // A model call would pass a budget ([budgets], a manifest's or GORILLA.toml's `budget`): the body
  // names the budget, its limit, what is spent and when it resets.
  BUDGET_EXCEEDED: 402,
  RATE_LIMITED: 429,
  // Request headers past Node's limit (16 KB): refused before any route sees the request.
  HEADERS_TOO_LARGE: 431,
  TOO_MANY_CONNECTIONS: 429,
  INTERNAL: 500,
  // The active store is not backed up by Spar (PostgreSQL: pg_dump); the message says what to run.
  BACKUP_UNSUPPORTED: 501,
  PROVIDER_ERROR: 502,
  PROVIDER_TIMEOUT: 504,
  MOVE_TIMEOUT: 504,
  // A turn a stopped daemon left unfinished (recorded as failed at the next start).
  INTERRUPTED: 503,
  // The database is damaged: nothing a retry fixes, but the daemon is there to say so.
  STORE_CORRUPT: 503,
  // The disk holding the data dir is full: the write was refused whole, and service resumes by itself.
  STORAGE_FULL: 507,
  // A move would start a process, and no sandbox can hold it ([sandbox] mode = "required").
  SANDBOX_UNAVAILABLE: 503,
  // The tunnel is down or cannot open (cloudflared missing, not runnable, or failed): `reason` says which.
  TUNNEL_UNAVAILABLE: 503,
  // Start-up and local errors: they stop the daemon or the CLI, so they map to 500 if ever served.
  CONFIG_INVALID: 500,
  PLUGIN_INVALID: 500,
  PLUGIN_FAILED: 500,
  STORE_KEY_INVALID: 500,
  STORE_FAILED: 500,
  // A database older than this release upgrades (the message names its version and what to do).
  STORE_TOO_OLD: 500,
  PORT_IN_USE: 500,
  DAEMON_UNREACHABLE: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

/** Extra fields are sent beside `code` and `message` in the wire shape `{error:{code,message,...}}`. */
export type ErrorExtra = Record<string, string | number | boolean | null | string[]>;

/**
 * A typed Spar error: `code` from the catalog, a message for people, optional extra fields.
 *
 * @example
 * throw new SparError("VALIDATION_FAILED", "body/message must be a string", { path: "/message" });
 */
/** Marks Spar errors across copies of this module (a plugin may bundle its own copy of the SDK). */
const BRAND = Symbol.for("spar.error");

export class SparError extends Error {
  readonly [BRAND] = true;
  readonly code: ErrorCode;
  readonly extra: ErrorExtra;

  constructor(code: ErrorCode, message: string, extra: ErrorExtra = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SparError";
    this.code = code;
    this.extra = extra;
  }

  get status(): number {
    return ERROR_CATALOG[this.code];
  }

  toJSON(): { error: { code: ErrorCode; message: string } & ErrorExtra } {
    return { error: { ...this.extra, code: this.code, message: this.message } };
  }
}

/**
 * True when `value` is a SparError with the given code (or any SparError when no code is given).
 * Checks the brand, not `instanceof`, so an error from another copy of the SDK still counts.
 */
export function isSparError(value: unknown, code?: ErrorCode): value is SparError {
  if (typeof value !== "object" || value === null || !(BRAND in value)) return false;
  return code === undefined || (value as SparError).code === code;
}

/**
 * Refusals whose message is the answer the user reads as it stands (a budget's 402 says which budget
 * is used up and when it resets; the chat, the CLI and a caged gorilla's reason show it): a plugin's
 * tap that throws one is named in the error's fields, not in front of its message.
 */
const REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["BUDGET_EXCEEDED"]);

/**
 * Wraps an error that escaped a plugin's tap so the message says which plugin and which hook.
 * A SparError keeps its code (a plugin may refuse with VALIDATION_FAILED on purpose).
 */
export function wrapPluginError(pluginId: string, hook: string, err: unknown): SparError {
  const inner = err instanceof Error ? err.message : String(err);
  const code: ErrorCode = isSparError(err) ? err.code : "PLUGIN_FAILED";
  const extra: ErrorExtra = isSparError(err) ? { ...err.extra } : {};
  return new SparError(
    code,
    REFUSALS.has(code) ? inner : `plugin ${pluginId} failed in ${hook}: ${inner}`,
    { ...extra, plugin: pluginId, hook },
    { cause: err },
  );
}
