import { isSparError } from "./errors.js";
import type { EventBus } from "./events.js";
import type { MoveCallInfo, RingHooks } from "./hooks.js";
import { callProvider, policyFor } from "./provider-call.js";
import { formatSchemaErrors, validatorFor } from "./schema.js";
import type { FighterMessageResult } from "./services.js";
import type {
  ChatMessage,
  FighterRow,
  LlmDriver,
  ModelSettings,
  MoveDeclaration,
  MoveHandler,
  ToolCall,
  Usage,
} from "./types.js";

export interface TurnInput {
  fighter: FighterRow;
  bout_id: string;
  model: ModelSettings;
  history: ChatMessage[];
  user: ChatMessage & { role: "user" };
  /** The moves offered to the model (those the fighter holds a grant for). */
  offered: MoveDeclaration[];
  /** Every declared move, so a call to one the fighter lacks is refused by capability, not as unknown. */
  declared: ReadonlyMap<string, MoveDeclaration>;
  maxIterations: number;
  loopGuardRepeats: number;
  toolTimeoutMs: number;
  onDelta?: (text: string) => void;
  request_id?: string;
}

export interface TurnDeps {
  hooks: RingHooks;
  events: EventBus;
  driver(settings: ModelSettings): Promise<LlmDriver>;
  move(name: string): Promise<MoveHandler | undefined>;
}

export interface TurnOutput {
  result: Omit<FighterMessageResult, "bout_id">;
  /** Every message of the turn, the user's first, in order: the caller commits them together. */
  messages: ChatMessage[];
}

/**
 * One turn of the agent loop (DESIGN §4 step 3): prompt, call the model, run the tool calls it asks
 * for, repeat until it stops asking, `maxIterations` is reached, or the loop guard sees the same
 * call with the same arguments `loopGuardRepeats` times. Nothing is stored here.
 */
export async function runTurn(input: TurnInput, deps: TurnDeps): Promise<TurnOutput> {
  const { fighter, bout_id } = input;
  const turn: ChatMessage[] = [input.user];
  const usage: Usage = { input_tokens: 0, output_tokens: 0 };
  const toolCalls: { name: string; ok: boolean }[] = [];
  const repeats = new Map<string, number>();
  const driver = await deps.driver(input.model);
  let model = input.model.model;
  let iterations = 0;
  let response = "";

  while (iterations < input.maxIterations) {
    iterations += 1;
    const prompt = await deps.hooks.turn.prepare.promise(
      { system: fighter.manifest.system_prompt, messages: [...input.history, ...turn] },
      { fighter, bout_id },
    );
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
      {
        model: input.model,
        system: prompt.system,
        messages: prompt.messages,
        tools: input.offered.map((m) => ({
          name: m.name,
          description: m.description,
          input_schema: m.input_schema,
        })),
        onDelta,
      },
      policyFor(input.model),
    );
    usage.input_tokens += reply.usage.input_tokens;
    usage.output_tokens += reply.usage.output_tokens;
    model = reply.model || model;
    response = reply.text;
    turn.push({
      role: "assistant",
      content: reply.text,
      ...(reply.tool_calls.length ? { tool_calls: reply.tool_calls } : {}),
    });
    if (reply.tool_calls.length === 0) {
      return {
        result: { response, usage, iterations, tool_calls: toolCalls, model, stop_reason: "end" },
        messages: turn,
      };
    }

    for (const call of reply.tool_calls) {
      const signature = `${call.name}\u0000${stableJson(call.arguments)}`;
      const seen = (repeats.get(signature) ?? 0) + 1;
      repeats.set(signature, seen);
      const outcome = await runMove(call, input, deps);
      toolCalls.push({ name: call.name, ok: outcome.ok });
      turn.push({
        role: "tool",
        tool_call_id: call.id,
        name: call.name,
        content: outcome.content,
        ...(outcome.ok ? {} : { is_error: true }),
      });
      if (seen >= input.loopGuardRepeats) {
        // Answer the remaining calls so no tool_call is left without a result in the stored history.
        for (const rest of reply.tool_calls.slice(reply.tool_calls.indexOf(call) + 1)) {
          turn.push({
            role: "tool",
            tool_call_id: rest.id,
            name: rest.name,
            content: "skipped: the turn was stopped",
            is_error: true,
          });
        }
        response = `Stopped: the model called ${call.name} with the same arguments ${seen} times in one turn.`;
        turn.push({ role: "assistant", content: response });
        return {
          result: { response, usage, iterations, tool_calls: toolCalls, model, stop_reason: "loop_guard" },
          messages: turn,
        };
      }
    }
  }
  response = `Stopped after ${input.maxIterations} iterations without a final answer.${response ? ` Last reply: ${response}` : ""}`;
  turn.push({ role: "assistant", content: response });
  return {
    result: { response, usage, iterations, tool_calls: toolCalls, model, stop_reason: "max_iterations" },
    messages: turn,
  };
}

/** Runs one tool call; every failure becomes an error result for the model, never an exception. */
async function runMove(
  call: ToolCall,
  input: TurnInput,
  deps: TurnDeps,
): Promise<{ ok: boolean; content: string }> {
  const { fighter, bout_id } = input;
  deps.events.publish({
    kind: "move.called",
    fighter_id: fighter.id,
    bout_id,
    name: call.name,
    call_id: call.id,
  });
  const outcome = await attemptMove(call, input, deps);
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

async function attemptMove(
  call: ToolCall,
  input: TurnInput,
  deps: TurnDeps,
): Promise<{ ok: boolean; content: string }> {
  const declaration = input.declared.get(call.name);
  if (!declaration) return toolError("MOVE_NOT_FOUND", `no move named ${call.name}`);
  if (call.raw_arguments !== undefined) {
    return toolError("VALIDATION_FAILED", `arguments for ${call.name} are not valid JSON`);
  }
  const info: MoveCallInfo = {
    call,
    fighter: input.fighter,
    bout_id: input.bout_id,
    capability: declaration.capability,
  };
  try {
    const refusal = await deps.hooks.move.beforeCall.promise(info);
    if (refusal) return toolError(refusal.code, refusal.message);
    const validate = validatorFor(declaration.input_schema);
    if (!validate(call.arguments)) {
      return toolError("VALIDATION_FAILED", `${call.name}: ${formatSchemaErrors(validate.errors, "input")}`);
    }
    const handler = await deps.move(call.name);
    if (!handler) return toolError("MOVE_NOT_FOUND", `no plugin provides move ${call.name}`);
    const value = await withDeadline(input.toolTimeoutMs, (signal) =>
      handler.run(call.arguments, { fighter: input.fighter, bout_id: input.bout_id, signal }),
    );
    const content = typeof value === "string" ? value : JSON.stringify(value);
    return await deps.hooks.move.afterCall.promise({ ok: true, content }, info);
  } catch (err) {
    const code = isSparError(err) ? err.code : "INTERNAL";
    return toolError(code, (err as Error).message);
  }
}

/** Runs `work` with an abort signal that fires, and a rejection that wins, after `ms`. */
async function withDeadline<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`timed out after ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function toolError(code: string, message: string): { ok: false; content: string } {
  return { ok: false, content: JSON.stringify({ error: { code, message } }) };
}

/** JSON with sorted keys, so `{a,b}` and `{b,a}` count as the same call for the loop guard. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
