/**
 * One troop task, run: the record moves from `pending` to `running`, the strategy runs with a
 * `StrategyTask` whose steps are turns of the members in fresh bouts (each recorded on the task as it
 * starts and as it ends), and the record is saved with its status, result and usage once the
 * strategy returns. Cancellation aborts the task's signal: the member turns in flight stop, the
 * strategy starts no more, and the task ends `cancelled` with what it had. A step whose turn was
 * tainted taints every step started after it (its output may be what the next member reads).
 */

import {
  cancellation,
  type EventBus,
  formatSchemaErrors,
  isSparError,
  type Logger,
  type RingServices,
  type StrategyOutcome,
  type StrategyTask,
  type TaintSource,
  type TroopMember,
  type TroopStrategy,
  type Usage,
  validatorFor,
} from "../../sdk/index.js";
import type { RecordedError, TroopRecord, TroopStep, TroopTaskRecord } from "../../sdk/kits/troops.js";
import type { TroopData } from "./troop-data.js";

/** A task being run in this process. */
export interface ActiveTask {
  record: TroopTaskRecord;
  controller: AbortController;
  /** Settles once the task has ended and its record is saved. */
  done: Promise<TroopTaskRecord>;
}

export interface TaskRunDeps {
  ring: RingServices;
  troops: TroopData;
  events: EventBus;
  log: Logger;
  max_parallel: number;
}

const zero = (): Usage => ({ input_tokens: 0, output_tokens: 0 });

/** A failure as the record keeps it: a SparError's code, anything else as INTERNAL. */
export function recorded(err: unknown): RecordedError {
  if (isSparError(err)) return { code: err.code, message: err.message };
  return { code: "INTERNAL", message: err instanceof Error ? err.message : String(err) };
}

/** A troop member as a strategy sees it; a fighter that is gone keeps its id (its steps will fail). */
async function memberOf(ring: RingServices, id: string): Promise<TroopMember> {
  try {
    const f = await ring.fighters.get(id);
    return {
      id: f.id,
      name: f.name,
      description: f.description,
      capabilities: f.capabilities.map((c) => c.type),
      skills: f.skills,
    };
  } catch {
    return { id, name: id, description: "", capabilities: [], skills: [] };
  }
}

/**
 * What a tainted step adds to its task's taint: the member (its output goes on), then the sources
 * its turn had read that the task does not hold yet.
 */
export function stepTaint(
  member: string,
  read: readonly TaintSource[],
  held: readonly TaintSource[],
): TaintSource[] {
  const key = (t: TaintSource) => `${t.kind}\0${t.detail}`;
  const known = new Set(held.map(key));
  return [{ kind: "fighter" as const, detail: member }, ...read].filter((t) => {
    if (known.has(key(t))) return false;
    known.add(key(t));
    return true;
  });
}

/**
 * The JSON a model answered with: the whole output, or the fenced block in it, or the outermost
 * braces, whichever parses first.
 */
export function parseJsonAnswer(text: string): unknown {
  const candidates = [text.trim()];
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text);
  if (fenced?.[1]) candidates.push(fenced[1].trim());
  const open = text.indexOf("{");
  const close = text.lastIndexOf("}");
  if (open >= 0 && close > open) candidates.push(text.slice(open, close + 1));
  for (const candidate of candidates) {
    try {
      return JSON.parse(candidate) as unknown;
    } catch {
      // the next candidate
    }
  }
  throw new Error("the answer is not JSON");
}

/**
 * Whether a task that ended with these steps is missing some of its members' work: a completed one
 * when an answer or a subtask failed (the result was made without it), any other when some step
 * produced output all the same.
 */
export function isPartial(status: TroopTaskRecord["status"], steps: TroopStep[]): boolean {
  if (status === "completed") {
    return steps.some((s) => (s.role === "answer" || s.role === "work") && s.error !== null);
  }
  return steps.some((s) => s.output !== null && s.error === null);
}

/**
 * Starts running a recorded `pending` task with `strategy`. Saves are serialized, each writing the
 * record as it stands, so the stored task follows its steps in order.
 */
export function runTask(
  troop: TroopRecord,
  record: TroopTaskRecord,
  strategy: TroopStrategy,
  deps: TaskRunDeps,
): ActiveTask {
  const { ring, troops, events } = deps;
  const controller = new AbortController();
  const signal = controller.signal;
  let saving: Promise<void> = Promise.resolve();
  /**
   * What the task's steps have taken in so far: a strategy passes one member's output on to the next
   * (or to everyone), so once a step's turn was tainted, every step started after it is too.
   */
  const taint: TaintSource[] = [];
  const save = (): Promise<void> => {
    const snapshot = structuredClone(record);
    saving = saving.then(
      () => troops.tasks.save(snapshot),
      () => troops.tasks.save(snapshot),
    );
    return saving;
  };

  async function step(fighterId: string, input: string, role: string): Promise<TroopStep> {
    const s: TroopStep = {
      fighter_id: fighterId,
      role,
      input,
      output: null,
      error: null,
      bout_id: null,
      started_at: new Date().toISOString(),
      finished_at: null,
      usage: zero(),
    };
    record.steps.push(s);
    void save().catch(() => undefined);
    try {
      if (signal.aborted) throw signal.reason;
      const reply = await ring.fighters.message(fighterId, input, {
        bout: "new",
        signal,
        // The troop task is in the call chain: a member's own fighter_message calls count from it.
        chain: [`troop-task:${record.id}`],
        // No reflection or compaction after a step: a task's model calls are all its steps'.
        aftercare: false,
        ...(taint.length > 0 ? { taint: [...taint] } : {}),
        started: ({ bout_id }) => {
          s.bout_id = bout_id;
        },
      });
      s.output = reply.response;
      s.usage = reply.usage;
      if (reply.taint?.length)
        taint.push(...stepTaint((await memberOf(ring, fighterId)).name, reply.taint, taint));
    } catch (err) {
      s.error = recorded(err);
      if (s.bout_id) s.usage = await usageOf(ring, s.bout_id);
    }
    s.finished_at = new Date().toISOString();
    record.usage.input_tokens += s.usage.input_tokens;
    record.usage.output_tokens += s.usage.output_tokens;
    void save().catch(() => undefined);
    events.publish({
      kind: "troop.step.completed",
      troop_id: troop.id,
      task_id: record.id,
      fighter_id: fighterId,
      role,
      ok: s.error === null,
      usage: s.usage,
      ...(s.error ? { error_code: s.error.code } : {}),
    });
    return s;
  }

  async function structured<T>(
    fighterId: string,
    input: string,
    schema: Record<string, unknown>,
    role: string,
  ): Promise<{ value?: T; step: TroopStep }> {
    const validate = validatorFor(schema);
    let prompt = input;
    let last: TroopStep | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const s = await step(fighterId, prompt, role);
      last = s;
      if (s.output === null) {
        // A turn that failed (quota, provider, cancelled) is not retried: the member could not answer.
        return { step: s };
      }
      let problem: string;
      try {
        const value = parseJsonAnswer(s.output);
        if (validate(value)) return { value: value as T, step: s };
        problem = formatSchemaErrors(validate.errors, "answer");
      } catch (err) {
        problem = (err as Error).message;
      }
      s.error = { code: "VALIDATION_FAILED", message: `not the JSON asked for: ${problem}` };
      void save().catch(() => undefined);
      prompt = `${input}\n\nYour last answer could not be used (${problem}). Answer again with JSON only, exactly as asked.`;
    }
    return { step: last as TroopStep };
  }

  const done = (async (): Promise<TroopTaskRecord> => {
    record.status = "running";
    record.started_at = new Date().toISOString();
    await save();
    events.publish({
      kind: "troop.task.started",
      troop_id: troop.id,
      task_id: record.id,
      strategy: record.strategy,
    });
    let outcome: StrategyOutcome;
    try {
      const [leader, ...members] = await Promise.all(
        [troop.leader, ...troop.members].map((id) => memberOf(ring, id)),
      );
      const task: StrategyTask = {
        troop,
        task: record.task,
        leader: leader as TroopMember,
        members,
        signal,
        max_parallel: deps.max_parallel,
        step,
        structured,
        rotate: () => troops.rotate(troop.id),
      };
      outcome = await strategy.run(task);
    } catch (err) {
      outcome = { error: recorded(err) };
    }
    finish(outcome);
    await save();
    events.publish({
      kind: "troop.task.completed",
      troop_id: troop.id,
      task_id: record.id,
      status: record.status as "completed" | "failed" | "cancelled",
      partial: record.partial,
      usage: record.usage,
      ...(record.error ? { error_code: record.error.code } : {}),
    });
    return record;
  })();

  function finish(outcome: StrategyOutcome): void {
    if (signal.aborted) {
      // Cancelled through the API or by a disband; INTERRUPTED when the daemon is stopping.
      record.error = recorded(signal.reason);
      record.status = record.error.code === "INTERRUPTED" ? "failed" : "cancelled";
    } else if (outcome.error) {
      record.status = "failed";
      record.error = outcome.error;
    } else if (outcome.result === undefined) {
      record.status = "failed";
      record.error = { code: "INTERNAL", message: `the ${record.strategy} strategy returned no result` };
    } else {
      record.status = "completed";
      record.error = null;
    }
    record.result = record.status === "completed" ? (outcome.result ?? null) : null;
    if (outcome.votes) record.votes = outcome.votes;
    if (outcome.reason) record.reason = outcome.reason;
    record.partial = isPartial(record.status, record.steps);
    record.finished_at = new Date().toISOString();
  }

  return { record, controller, done };
}

/** Cancels a running task: its signal is aborted with why. */
export function cancelTask(task: ActiveTask, why: string): void {
  if (!task.controller.signal.aborted) task.controller.abort(cancellation(why));
}

/** What a step that did not complete spent: its bout's turns as recorded. */
async function usageOf(ring: RingServices, boutId: string): Promise<Usage> {
  const usage = zero();
  for (const turn of await ring.bouts.turns(boutId).catch(() => [])) {
    usage.input_tokens += turn.usage.input_tokens;
    usage.output_tokens += turn.usage.output_tokens;
  }
  return usage;
}
