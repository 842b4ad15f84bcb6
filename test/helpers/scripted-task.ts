/**
 * A StrategyTask answered from a script, for unit tests of troop strategies (the bundled six and a
 * third party's): each step's output comes from a function of who is asked, with what, in which
 * role, so a test can make a member fail, a vote tie or a decomposition come back invalid, and then
 * check the strategy's control flow. `structured` parses and checks the output against its schema
 * and asks once more, as the real runtime does. The troop suite in test/contract drives the real
 * runtime through the daemon; this is only for a strategy's own logic.
 */

import { readManifest } from "../../kernel/host/plugin-manifest.js";
import type { RecordedError, TroopStep } from "../../lib/troops/records.js";
import type { PluginApi, SparPlugin, StrategyTask, TroopMember, TroopStrategy } from "../../sdk/index.js";
import { formatSchemaErrors, validatorFor } from "../../sdk/index.js";
import type { PluginManifest } from "../../sdk/plugin-manifest.js";
import { KERNEL_VERSION } from "../../sdk/version.js";

/** One call of `step` as the script sees it. */
export interface ScriptedCall {
  fighterId: string;
  input: string;
  role: string;
}

/** A step's output, or the error it fails with. */
export type ScriptedReply = string | RecordedError;

export interface ScriptedTaskOptions {
  task?: string;
  leader?: TroopMember;
  members: TroopMember[];
  max_parallel?: number;
  /** The rotation counter's first value (round robin). */
  rotation?: number;
  /** Answers each step; `abort` cancels the task as if POST …/cancel arrived while this step ran. */
  reply(call: ScriptedCall, abort: () => void): ScriptedReply;
}

/** The task, what it was asked, how many steps ran at once at most, and a way to cancel it. */
export interface ScriptedTask {
  task: StrategyTask;
  calls: ScriptedCall[];
  steps: TroopStep[];
  maxActive(): number;
  abort(): void;
}

/** A member named `name`, id `id-<name>`, with whatever else the test gives. */
export function member(name: string, extra: Partial<Omit<TroopMember, "name">> = {}): TroopMember {
  return { id: `id-${name}`, name, description: "", capabilities: [], skills: [], ...extra };
}

const NO_USAGE = { input_tokens: 0, output_tokens: 0 };

/** Builds a StrategyTask whose steps answer from `options.reply`. */
export function scriptedTask(options: ScriptedTaskOptions): ScriptedTask {
  const controller = new AbortController();
  const abort = () => controller.abort();
  const calls: ScriptedCall[] = [];
  const steps: TroopStep[] = [];
  let active = 0;
  let most = 0;
  let rotation = options.rotation ?? 0;
  const leader = options.leader ?? member("leader");

  const step = async (fighterId: string, input: string, role: string): Promise<TroopStep> => {
    const call = { fighterId, input, role };
    calls.push(call);
    active += 1;
    most = Math.max(most, active);
    // One turn of the event loop, so steps started together are in flight together.
    await new Promise((resolve) => setImmediate(resolve));
    const reply = options.reply(call, abort);
    active -= 1;
    const failed: RecordedError | null = controller.signal.aborted
      ? { code: "CANCELLED", message: "the task was cancelled" }
      : typeof reply === "string"
        ? null
        : reply;
    const recorded: TroopStep = {
      fighter_id: fighterId,
      role,
      input,
      output: failed ? null : (reply as string),
      error: failed,
      bout_id: null,
      started_at: "2026-01-01T00:00:00.000Z",
      finished_at: "2026-01-01T00:00:01.000Z",
      usage: NO_USAGE,
    };
    steps.push(recorded);
    return recorded;
  };

  // As the runtime does: a turn that failed is not asked again; output that is not JSON passing the
  // schema keeps its text, gets a VALIDATION_FAILED error, and is asked for once more.
  const structured = async <T>(
    fighterId: string,
    input: string,
    schema: Record<string, unknown>,
    role: string,
  ): Promise<{ value?: T; step: TroopStep }> => {
    const validate = validatorFor(schema);
    let prompt = input;
    let last: TroopStep | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      last = await step(fighterId, prompt, role);
      if (last.output === null) return { step: last };
      let problem: string;
      try {
        const value: unknown = JSON.parse(last.output);
        if (validate(value)) return { value: value as T, step: last };
        problem = formatSchemaErrors(validate.errors, "answer");
      } catch (err) {
        problem = (err as Error).message;
      }
      last.error = { code: "VALIDATION_FAILED", message: `not the JSON asked for: ${problem}` };
      prompt = `${input}\n\nYour last answer could not be used (${problem}). Answer again with JSON only.`;
    }
    return { step: last as TroopStep };
  };

  const task: StrategyTask = {
    troop: {
      id: "troop-1",
      name: "scripted",
      leader: leader.id,
      members: options.members.map((m) => m.id),
      strategy: "scripted",
      created_at: "2026-01-01T00:00:00.000Z",
    },
    task: options.task ?? "Write a haiku about the sea.",
    leader,
    members: options.members,
    signal: controller.signal,
    max_parallel: options.max_parallel ?? 4,
    step,
    structured,
    rotate: async () => rotation++,
  };
  return { task, calls, steps, maxActive: () => most, abort };
}

/**
 * The strategy a plugin taps for `name`, found by applying the plugin to a hooks object holding only
 * `strategy.resolve` (all a strategy plugin uses). Undefined when the plugin does not answer to it.
 */
export async function resolveStrategy(plugin: SparPlugin, name: string): Promise<TroopStrategy | undefined> {
  const taps: ((name: string) => TroopStrategy | undefined | Promise<TroopStrategy | undefined>)[] = [];
  const hooks = { strategy: { resolve: { tap: (fn: (typeof taps)[number]) => taps.push(fn) } } };
  await plugin.apply({ id: plugin.id, hooks } as unknown as PluginApi, {});
  for (const tap of taps) {
    const found = await tap(name);
    if (found) return found;
  }
  return undefined;
}

/** A plugin folder's plugin.json, validated as the plugin host validates it (schema, id, kernel range). */
export function checkedManifest(dir: string): PluginManifest {
  return readManifest(dir, KERNEL_VERSION);
}
