import { preparePrompt, promptRequest } from "../../lib/prompt-prepare.js";
import { cancelledError } from "../../sdk/cancel.js";
import { canonicalJson } from "../../sdk/canonical.js";
import type { EventBus } from "../../sdk/events.js";
import type { MoveCallInfo, MoveOutcome, RingHooks } from "../../sdk/hooks.js";
import type { FighterMessageResult } from "../../sdk/services.js";
import { contextTokens, messageTokens } from "../../sdk/tokens.js";
import type {
  ChatMessage,
  FighterRow,
  LlmDriver,
  ModelSettings,
  MoveDeclaration,
  MoveHandler,
  TaintSource,
  ToolCall,
  Usage,
} from "../../sdk/types.js";
import { callProvider, policyFor } from "../provider-call.js";
import { runMove } from "./move-call.js";

export interface TurnInput {
  fighter: FighterRow;
  bout_id: string;
  turn_id: string;
  /** Who started the bout (`user` for a user's own): `MoveCallInfo.origin`. */
  origin: string;
  /** The untrusted content the turn has taken in (its message's, then its moves'): grows as it runs. */
  taint: TaintSource[];
  model: ModelSettings;
  /** The fighter's prompt cache key when its provider's cache is on (lib/prompt-cache.ts). */
  cacheKey?: string;
  history: ChatMessage[];
  user: ChatMessage & { role: "user" };
  /** The moves offered to the model (those the fighter holds a grant for). */
  offered: MoveDeclaration[];
  /** Every declared move, so a call to one the fighter lacks is refused by capability, not as unknown. */
  declared: ReadonlyMap<string, MoveDeclaration>;
  maxIterations: number;
  loopGuardRepeats: number;
  toolTimeoutMs: number;
  /** A tool result longer than this reaches the model (and the bout) cut, with a marker. */
  maxToolResultChars: number;
  /** How long a move that ignores cancellation is waited for before it is abandoned. */
  cancelGraceMs: number;
  /** The turn's cancellation: reaches the provider call and every move. */
  signal: AbortSignal;
  /** Fighters waiting on this turn, this one's included last: handed to moves for nested calls. */
  chain: readonly string[];
  /** The fighters in the chain before this one, outermost first: every move must be theirs too. */
  callers: readonly FighterRow[];
  /** The fighter's workspace folder, created on first use. */
  workspace: () => string;
  onDelta?: (text: string) => void;
  onApproval?: MoveCallInfo["onApproval"];
  request_id?: string;
  /** A turn taken up again after waiting for an approval: its steps so far and the calls still to run. */
  resumed?: { steps: ChatMessage[]; pending: ToolCall[] };
}

/** What the turn did so far: kept up to date as it runs, so a failure still knows what it spent. */
export interface TurnProgress {
  usage: Usage;
  iterations: number;
  model: string;
  tool_calls: { name: string; ok: boolean }[];
}

export interface TurnDeps {
  hooks: RingHooks;
  events: EventBus;
  driver(settings: ModelSettings): Promise<LlmDriver>;
  move(name: string): Promise<MoveHandler | undefined>;
  /** Commits a step (an assistant message with its tool calls, a tool result) as it happens. */
  commit(messages: ChatMessage[]): Promise<void>;
}

export interface TurnOutput {
  result: Omit<FighterMessageResult, "bout_id" | "turn_id">;
  /** The last step, not yet committed: the caller commits it with the turn's end. */
  final: ChatMessage[];
  /** Every message of the turn, the user's first, the final step included. */
  messages: ChatMessage[];
  /**
   * The estimated context of the bout's next prompt: the last prompt as prepared (system with the
   * plugins' additions, history, this turn) and what the turn added after it.
   */
  context_tokens: number;
}

/**
 * One turn of the agent loop (DESIGN §4 step 3): prompt, call the model, run the tool calls it asks
 * for, repeat until it stops asking, `maxIterations` is reached, or the loop guard sees the same
 * call with the same arguments `loopGuardRepeats` times. Every step but the last is committed as it
 * happens (a tool that ran is never forgotten); a cancelled turn stops before its next model call
 * and answers the calls it did not run, so no tool call is ever left without a result.
 */
export async function runTurn(input: TurnInput, deps: TurnDeps, progress: TurnProgress): Promise<TurnOutput> {
  const { fighter, bout_id, signal } = input;
  const turn: ChatMessage[] = [input.user];
  const repeats = new Map<string, number>();
  const driver = await deps.driver(input.model);
  progress.model ||= input.model.model;
  let response = "";
  /** The last prompt's estimate, and how many of the turn's messages it held. */
  let prepared = { tokens: 0, seen: 0 };
  /** The turn took in untrusted content: the message's own first, then each move's, as it comes. */
  const tainted = (source: TaintSource) =>
    deps.events.publish({
      kind: "turn.tainted",
      fighter_id: fighter.id,
      bout_id,
      turn_id: input.turn_id,
      source,
    });
  for (const source of input.taint) tainted(source);
  const finish = (stop_reason: FighterMessageResult["stop_reason"], final: ChatMessage[]): TurnOutput => ({
    result: {
      response,
      usage: { ...progress.usage },
      iterations: progress.iterations,
      tool_calls: progress.tool_calls,
      model: progress.model,
      stop_reason,
      ...(input.taint.length > 0 ? { taint: [...input.taint] } : {}),
    },
    final,
    messages: [...turn, ...final.filter((m) => !turn.includes(m))],
    context_tokens: [...turn.slice(prepared.seen), ...final.filter((m) => !turn.includes(m))].reduce(
      (n, m) => n + messageTokens(m),
      prepared.tokens,
    ),
  });

  /** Runs the model's calls in order; the turn's end when the loop guard stops it. */
  const runCalls = async (calls: ToolCall[], resumed = false): Promise<TurnOutput | undefined> => {
    for (const [index, call] of calls.entries()) {
      const rest = calls.slice(index + 1);
      if (signal.aborted) {
        await deps.commit(unanswered([call, ...rest], "cancelled: the turn was cancelled before it ran"));
        throw cancelledError(signal);
      }
      const signature = `${call.name}\u0000${canonicalJson(call.arguments)}`;
      const seen = (repeats.get(signature) ?? 0) + 1;
      repeats.set(signature, seen);
      const outcome = await runMove(call, input, deps, resumed);
      if (outcome.taint) {
        input.taint.push(outcome.taint);
        tainted(outcome.taint);
      }
      progress.tool_calls.push({ name: call.name, ok: outcome.ok });
      const result = toolResult(call, outcome);
      turn.push(result);
      await deps.commit([result]);
      if (signal.aborted) {
        await deps.commit(unanswered(rest, "cancelled: the turn was cancelled before it ran"));
        throw cancelledError(signal);
      }
      if (seen >= input.loopGuardRepeats) {
        response = `Stopped: the model called ${call.name} with the same arguments ${seen} times in one turn.`;
        // Answer the remaining calls so no tool_call is left without a result in the stored history.
        const final = [
          ...unanswered(rest, "skipped: the turn was stopped"),
          { role: "assistant" as const, content: response },
        ];
        return finish("loop_guard", final);
      }
    }
    return undefined;
  };
  if (input.resumed) {
    turn.push(...input.resumed.steps);
    const stopped = await runCalls(input.resumed.pending, true);
    if (stopped) return stopped;
  }

  while (progress.iterations < input.maxIterations) {
    if (signal.aborted) throw cancelledError(signal);
    progress.iterations += 1;
    const prompt = promptRequest(
      await preparePrompt(
        deps.hooks,
        {
          system: fighter.manifest.system_prompt,
          messages: [...input.history, ...turn],
          tools: input.offered,
        },
        { fighter, bout_id },
      ),
      input.cacheKey,
      turn.length,
    );
    const added = prompt.context ? `${prompt.system}\n\n${prompt.context}` : prompt.system;
    prepared = { tokens: contextTokens(added, prompt.messages), seen: turn.length };
    const onDelta = (text: string) => {
      input.onDelta?.(text);
      deps.events.publish({
        kind: "message.delta",
        fighter_id: fighter.id,
        bout_id,
        text,
        request_id: input.request_id,
      });
    };
    const reply = await callProvider(
      driver,
      { model: input.model, ...prompt, onDelta, signal },
      policyFor(input.model),
    );
    progress.usage.input_tokens += reply.usage.input_tokens;
    progress.usage.output_tokens += reply.usage.output_tokens;
    progress.model = reply.model || progress.model;
    response = reply.text;
    const assistant: ChatMessage = {
      role: "assistant",
      content: reply.text,
      ...(reply.tool_calls.length ? { tool_calls: reply.tool_calls } : {}),
    };
    turn.push(assistant);
    if (reply.tool_calls.length === 0) return finish("end", [assistant]);
    await deps.commit([assistant]);

    const stopped = await runCalls(reply.tool_calls);
    if (stopped) return stopped;
  }
  response = `Stopped after ${input.maxIterations} iterations without a final answer.${response ? ` Last reply: ${response}` : ""}`;
  return finish("max_iterations", [{ role: "assistant", content: response }]);
}

function toolResult(call: ToolCall, outcome: MoveOutcome): ChatMessage {
  return {
    role: "tool",
    tool_call_id: call.id,
    name: call.name,
    content: outcome.content,
    ...(outcome.ok ? {} : { is_error: true }),
  };
}

function unanswered(calls: ToolCall[], why: string): ChatMessage[] {
  return calls.map((call) => toolResult(call, { ok: false, content: why }));
}
