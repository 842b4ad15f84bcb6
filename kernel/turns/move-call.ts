import { callerGrants } from "../../lib/fighter-chain.js";
import { observeMoves } from "../../lib/observe-points.js";
import { cancelledError, isCancelled } from "../../sdk/cancel.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import type { MoveCallInfo, MoveOutcome } from "../../sdk/hooks.js";
import { formatSchemaErrors, validatorFor } from "../../sdk/schema.js";
import type { MoveDeclaration, TaintSource, ToolCall } from "../../sdk/types.js";
import { matchGrants } from "../fighters/fighter-manifest.js";
import type { TurnDeps, TurnInput } from "./agent-loop.js";

/**
 * One tool call of a turn (DESIGN §4 steps 3–4): the declaration, `move.beforeCall` (the kernel's
 * capability check among its taps), the input's schema, the move itself within `tool_timeout_s`
 * and the turn's cancellation, then `move.afterCall`, whatever the outcome. Every failure becomes
 * an error result for the model, never an exception.
 */
export async function runMove(
  call: ToolCall,
  input: TurnInput,
  deps: TurnDeps,
  resumed = false,
): Promise<MoveOutcome> {
  const { fighter, bout_id } = input;
  deps.events.publish({
    kind: "move.called",
    fighter_id: fighter.id,
    bout_id,
    name: call.name,
    call_id: call.id,
  });
  const outcome = await attempt(call, input, deps, resumed);
  deps.events.publish({
    kind: "move.result",
    fighter_id: fighter.id,
    bout_id,
    name: call.name,
    call_id: call.id,
    ok: outcome.ok,
  });
  return outcome;
}

const attempt = observeMoves(attemptMove);
async function attemptMove(
  call: ToolCall,
  input: TurnInput,
  deps: TurnDeps,
  resumed: boolean,
): Promise<MoveOutcome> {
  const declaration = input.declared.get(call.name);
  if (!declaration) return toolError("MOVE_NOT_FOUND", `no move named ${call.name}`);
  const info: MoveCallInfo = {
    call,
    fighter: input.fighter,
    bout_id: input.bout_id,
    turn_id: input.turn_id,
    origin: input.origin,
    capability: declaration.capability,
    ...(declaration.server ? { server: declaration.server } : {}),
    effects: declaration.effects ?? "external",
    destructive: declaration.destructive === true,
    grants: matchGrants(input.fighter.manifest.capabilities ?? [], declaration),
    callers: callerGrants(input.callers, (grants) => matchGrants(grants, declaration)),
    workspace: input.workspace(),
    taint: [...input.taint],
    signal: input.signal,
    ...(resumed ? { resumed } : {}),
    ...(input.onApproval ? { onApproval: input.onApproval } : {}),
  };
  // Every outcome, failures included, passes afterCall: an error's text may need redacting too.
  const outcome = await deps.hooks.move.afterCall.promise(
    await execute(call, declaration, info, input, deps),
    info,
  );
  return { ...outcome, content: capped(outcome.content, input.maxToolResultChars) };
}

/**
 * A result past `max` characters is cut, and says so in words the model can act on; the bout keeps
 * what the model saw. Cut on a code-point boundary, never inside a surrogate pair.
 */
export function capped(content: string, max: number): string {
  if (content.length <= max) return content;
  let end = max;
  const last = content.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${content.slice(0, end)}\n[truncated: the first ${end} of ${content.length} characters; ask for less (a range, a filter, a smaller page) to see the rest]`;
}

async function execute(
  call: ToolCall,
  declaration: MoveDeclaration,
  info: MoveCallInfo,
  input: TurnInput,
  deps: TurnDeps,
): Promise<MoveOutcome> {
  if (call.raw_arguments !== undefined) {
    return toolError("VALIDATION_FAILED", `arguments for ${call.name} are not valid JSON`);
  }
  // What the move marked its result with (context.untrusted), on its value or its error alike.
  let taint: TaintSource | undefined;
  const marked = (outcome: MoveOutcome): MoveOutcome => (taint ? { ...outcome, taint } : outcome);
  try {
    const refusal = await deps.hooks.move.beforeCall.promise(info);
    if (refusal) return toolError(refusal.code, refusal.message);
    const validate = validatorFor(declaration.input_schema);
    if (!validate(call.arguments)) {
      return toolError("VALIDATION_FAILED", `${call.name}: ${formatSchemaErrors(validate.errors, "input")}`);
    }
    const handler = await deps.move(call.name);
    if (!handler) return toolError("MOVE_NOT_FOUND", `no plugin provides move ${call.name}`);
    const value = await bounded(call.name, input, (signal) =>
      handler.run(call.arguments, {
        fighter: input.fighter,
        bout_id: input.bout_id,
        turn_id: input.turn_id,
        origin: input.origin,
        signal,
        chain: input.chain,
        grants: info.grants,
        callers: info.callers,
        workspace: info.workspace,
        taint: info.taint,
        untrusted: (source) => {
          taint ??= source;
        },
      }),
    );
    return marked({ ok: true, content: typeof value === "string" ? value : JSON.stringify(value) });
  } catch (err) {
    if (isCancelled(err) || input.signal.aborted)
      return toolError("CANCELLED", cancelledError(input.signal).message);
    const code = isSparError(err) ? err.code : "INTERNAL";
    return marked(toolError(code, (err as Error).message));
  }
}

/**
 * Runs a move with a signal that fires when the turn is cancelled or the move's time is up. A move
 * past its time is MOVE_TIMEOUT; one that ignores a cancellation is abandoned after the grace.
 */
async function bounded<T>(
  name: string,
  input: TurnInput,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timers: NodeJS.Timeout[] = [];
  const onCancel = () => controller.abort(input.signal.reason);
  input.signal.addEventListener("abort", onCancel, { once: true });
  const deadline = new Promise<never>((_, reject) => {
    timers.push(
      setTimeout(() => {
        const error = new SparError(
          "MOVE_TIMEOUT",
          `${name} did not finish within ${input.toolTimeoutMs / 1000} s`,
        );
        controller.abort(error);
        reject(error);
      }, input.toolTimeoutMs),
    );
  });
  let give: (() => void) | undefined;
  const abandoned = new Promise<never>((_, reject) => {
    give = () => timers.push(setTimeout(() => reject(cancelledError(input.signal)), input.cancelGraceMs));
    if (input.signal.aborted) give();
    else input.signal.addEventListener("abort", give, { once: true });
  });
  try {
    return await Promise.race([work(controller.signal), deadline, abandoned]);
  } finally {
    for (const timer of timers) clearTimeout(timer);
    input.signal.removeEventListener("abort", onCancel);
    if (give) input.signal.removeEventListener("abort", give);
  }
}

export function toolError(code: string, message: string): MoveOutcome {
  return { ok: false, content: JSON.stringify({ error: { code, message } }), error: { code, message } };
}
