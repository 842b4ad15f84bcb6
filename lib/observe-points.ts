/**
 * The kernel's measuring points (sdk/observe.ts), kept out of the kernel: each wraps a function of
 * the message path once, at creation, and the wrapper costs one length check per call while nothing
 * observes (no closure, no object).
 */
import { isCancelled } from "../sdk/cancel.js";
import { isSparError } from "../sdk/errors.js";
import type { MoveOutcome } from "../sdk/hooks.js";
import { type ObservedEnd, observe, observing } from "../sdk/observe.js";
import type { MessageOptions } from "../sdk/services.js";
import type { LlmRequest, LlmResponse, ModelSettings, ToolCall } from "../sdk/types.js";
import { costMicros, type Price } from "./pricing.js";

/** The kind of a turn's origin: `user`, `channel`, `gorilla`, `schedule`, `fighter`, `troop-task`. */
export function originKind(opts: Pick<MessageOptions, "origin" | "chain">): string {
  if (opts.chain && opts.chain.length > 0) return "fighter";
  const origin = opts.origin ?? "user";
  const colon = origin.indexOf(":");
  return colon < 0 ? origin : origin.slice(0, colon);
}

/** How a turn ended, by what it threw: refused before it was recorded, cancelled, or failed. */
function turnEnd(started: { turn_id?: string }, error: unknown): ObservedEnd {
  const code = isSparError(error) ? error.code : error === undefined ? undefined : "INTERNAL";
  const outcome =
    error === undefined
      ? "completed"
      : !started.turn_id
        ? "refused"
        : isCancelled(error)
          ? "cancelled"
          : "failed";
  return { outcome, ...(code ? { error_code: code } : {}), ...started };
}

/**
 * A turn's sender (message-path.ts `send`) as an observed `turn`: from its admission (a refusal
 * there, a quota's, is `refused`) to its end.
 */
export function observeTurns<L extends { row: { name: string } }, K, R, T>(
  send: (live: L, text: string, opts: MessageOptions, keyed?: K, resume?: R) => Promise<T>,
): (live: L, text: string, opts: MessageOptions, keyed?: K, resume?: R) => Promise<T> {
  return (live, text, opts, keyed, resume) => {
    if (!observing()) return send(live, text, opts, keyed, resume);
    const started: { turn_id?: string } = {};
    const traced: MessageOptions = {
      ...opts,
      started: (ids) => {
        started.turn_id = ids.turn_id;
        opts.started?.(ids);
      },
    };
    return observe(
      { kind: "turn", fighter: live.row.name, origin: originKind(opts) },
      () => send(live, text, traced, keyed, resume),
      (_value, error) => turnEnd(started, error),
    );
  };
}

/** Refusals by policy (a grant, a rule, an operator) are `denied`; calls that never ran are `refused`. */
const DENIED = new Set([
  "CAPABILITY_DENIED",
  "FORBIDDEN",
  "APPROVAL_DENIED",
  "APPROVAL_EXPIRED",
  "APPROVAL_STALE",
]);
const REFUSED = new Set(["VALIDATION_FAILED", "MOVE_NOT_FOUND", "APPROVAL_REQUIRED"]);

/** A move call's outcome label: `ok`, `denied`, `refused` or `error`. */
export function moveOutcome(outcome: MoveOutcome): ObservedEnd {
  if (outcome.ok) return { outcome: "ok" };
  const code = outcome.error?.code ?? "INTERNAL";
  const label = DENIED.has(code) ? "denied" : REFUSED.has(code) ? "refused" : "error";
  return { outcome: label, error_code: code };
}

/** A tool call's runner (move-call.ts) as an observed `move_call`. */
export function observeMoves<I, D>(
  attempt: (call: ToolCall, input: I, deps: D, resumed: boolean) => Promise<MoveOutcome>,
): (call: ToolCall, input: I, deps: D, resumed: boolean) => Promise<MoveOutcome> {
  return (call, input, deps, resumed) => {
    if (!observing()) return attempt(call, input, deps, resumed);
    return observe(
      { kind: "move_call", move: call.name },
      () => attempt(call, input, deps, resumed),
      (outcome, error) =>
        outcome ? moveOutcome(outcome) : { outcome: "error", error_code: errorCode(error) },
    );
  };
}

/** The code of what was thrown (`INTERNAL` for anything but a SparError). */
export function errorCode(error: unknown): string {
  return isSparError(error) ? error.code : "INTERNAL";
}

/** One request to a model as an observed `model_call`: its usage, cost (when priced) and stop reason. */
export function observeModelCall(
  settings: ModelSettings,
  request: LlmRequest,
  price: Price | undefined,
  work: () => Promise<LlmResponse>,
): Promise<LlmResponse> {
  return observe(
    {
      kind: "model_call",
      provider: settings.provider,
      model: settings.model,
      streaming: request.onDelta !== undefined,
    },
    work,
    (reply, error) => {
      if (!reply) return { outcome: "error", error_code: errorCode(error) };
      const cost = price ? costMicros(price, reply.usage) : undefined;
      return {
        outcome: "ok",
        input_tokens: reply.usage.input_tokens,
        output_tokens: reply.usage.output_tokens,
        ...(cost !== undefined && price ? { cost_micros: cost, currency: price.currency } : {}),
        response_model: reply.model || settings.model,
        finish_reason: reply.stop_reason,
      };
    },
  );
}
