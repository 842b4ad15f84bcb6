/**
 * The troop runtime: troops created, shown and disbanded; tasks recorded, run by their strategy
 * plugin (imported on the first task that names it) and waited for or polled; cancellation; and, at
 * start, tasks a stopped daemon left unfinished recorded `failed`.
 */

import {
  type BudgetLimits,
  type EventBus,
  type Logger,
  type RingServices,
  SparError,
  type TroopStrategy,
} from "../../sdk/index.js";
import type { TroopRecord, TroopTaskRecord } from "../../sdk/kits/troops.js";
import { type ActiveTask, cancelTask, runTask } from "./task-run.js";
import type { TroopData } from "./troop-data.js";

export interface TroopsSettings {
  max_parallel: number;
  max_members: number;
}

/**
 * A troop as the API shows it: the record, the names of its fighters that still exist, and the ids
 * of those that do not (killed since; the troop takes no task until `edit` replaces them).
 */
export interface TroopView extends TroopRecord {
  names: Record<string, string>;
  missing: string[];
}

/** What a troop may be told to change (PATCH /api/v1/troops/:id); at least one of them. */
export interface TroopChanges {
  name?: string;
  leader?: string;
  members?: string[];
  strategy?: string;
  /** Replaces the troop's budget; `{}` removes it. */
  budget?: BudgetLimits;
}

export interface TroopRuntimeDeps {
  ring: RingServices;
  /** Troops and their tasks, in the plugin's own collections. */
  troops: TroopData;
  events: EventBus;
  log: Logger;
  settings: TroopsSettings;
}

/** A strategy name as compared: case, `-` and `_` ignored (`LeaderWorker`, `leader-worker`, `leader_worker`). */
const strategyKey = (name: string) => name.toLowerCase().replace(/[-_\s]/g, "");

export type TroopRuntime = ReturnType<typeof createTroopRuntime>;

export function createTroopRuntime({ ring, troops, events, log, settings }: TroopRuntimeDeps) {
  /** Tasks running in this process, by id. */
  const active = new Map<string, ActiveTask>();
  let stopping = false;

  async function troopOf(idOrName: string): Promise<TroopRecord> {
    const troop = await troops.get(idOrName);
    if (!troop) throw new SparError("TROOP_NOT_FOUND", `no troop with id or name "${idOrName}"`);
    return troop;
  }

  async function view(troop: TroopRecord): Promise<TroopView> {
    const names: Record<string, string> = {};
    const missing: string[] = [];
    for (const id of new Set([troop.leader, ...troop.members])) {
      const fighter = await ring.fighters.get(id).catch(() => undefined);
      if (fighter?.id === id) names[id] = fighter.name;
      else missing.push(id);
    }
    return { ...troop, names, missing };
  }

  /**
   * A task for a troop whose leader or member was killed would spend tokens on its first steps and
   * then fail: it is refused before anything is recorded or any model is called.
   */
  function refuseIncomplete(troop: TroopView): void {
    if (troop.missing.length === 0) return;
    const roles = troop.missing.map((id) => `${id === troop.leader ? "leader" : "member"} ${id}`);
    throw new SparError(
      "TROOP_INCOMPLETE",
      `troop "${troop.name}" cannot take a task: its ${roles.join(", ")} no longer exist${troop.missing.length === 1 ? "s" : ""}; ` +
        `replace ${troop.missing.length === 1 ? "it" : "them"} with spar troop edit ${troop.name} --leader <fighter> / --members <a,b,c> ` +
        `(PATCH /api/v1/troops/${troop.id})`,
      { missing: troop.missing },
    );
  }

  /** The leader's and members' ids, each resolved from an id or a name, checked as for a new troop. */
  async function fighters(leaderRef: string, memberRefs: string[]) {
    if (memberRefs.length > settings.max_members) {
      throw new SparError(
        "VALIDATION_FAILED",
        `a troop has at most ${settings.max_members} members ([troops] max_members), not ${memberRefs.length}`,
      );
    }
    const leader = await fighterId(leaderRef);
    const members: string[] = [];
    for (const member of memberRefs) {
      const id = await fighterId(member);
      if (members.includes(id)) {
        throw new SparError(
          "VALIDATION_FAILED",
          `"${member}" is listed twice in members; list each fighter once`,
        );
      }
      members.push(id);
    }
    return { leader, members };
  }

  /** The wire name a requested strategy means, or VALIDATION_FAILED listing those there are. */
  function strategyName(requested: string): string {
    const available = ring.strategies.names();
    const found = available.find((name) => strategyKey(name) === strategyKey(requested));
    if (!found) {
      throw new SparError(
        "VALIDATION_FAILED",
        `unknown strategy "${requested}"; available: ${available.join(", ") || "none (no strategy plugin is enabled)"}`,
        { available },
      );
    }
    return found;
  }

  async function strategyFor(name: string): Promise<TroopStrategy> {
    const strategy = await ring.strategies.resolve(name);
    if (!strategy) {
      throw new SparError("CONFIG_INVALID", `no enabled plugin provides the troop strategy "${name}"`);
    }
    return strategy;
  }

  async function fighterId(idOrName: string): Promise<string> {
    return (await ring.fighters.get(idOrName)).id;
  }

  function taskOf(troop: TroopRecord, task: TroopTaskRecord | undefined, taskId: string): TroopTaskRecord {
    if (!task || task.troop_id !== troop.id) {
      throw new SparError("NOT_FOUND", `troop "${troop.name}" has no task ${taskId}`);
    }
    return task;
  }

  return {
    async create(body: {
      name: string;
      leader: string;
      members: string[];
      strategy: string;
      budget?: BudgetLimits;
    }) {
      const strategy = strategyName(body.strategy);
      const { leader, members } = await fighters(body.leader, body.members);
      const troop = await troops.create({ name: body.name, leader, members, strategy, budget: body.budget });
      events.publish({
        kind: "troop.created",
        troop_id: troop.id,
        name: troop.name,
        strategy,
        leader,
        members,
      });
      return view(troop);
    },

    /**
     * Changes what `changes` names, checked as at creation: a strategy that exists, fighters that
     * exist, each member once, at most `max_members`. The leader or the members not named stay as
     * they were (a killed one included, so the answer's `missing` says what is still to replace).
     * Tasks already running go on with the troop as it was when they started.
     */
    async edit(idOrName: string, changes: TroopChanges): Promise<TroopView> {
      const troop = await troopOf(idOrName);
      const strategy = changes.strategy === undefined ? undefined : strategyName(changes.strategy);
      const resolved =
        changes.leader === undefined && changes.members === undefined
          ? undefined
          : await fighters(changes.leader ?? troop.leader, changes.members ?? troop.members);
      const updated = await troops.update(troop.id, {
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(strategy !== undefined ? { strategy } : {}),
        ...(changes.leader !== undefined && resolved ? { leader: resolved.leader } : {}),
        ...(changes.members !== undefined && resolved ? { members: resolved.members } : {}),
        ...(changes.budget !== undefined ? { budget: changes.budget } : {}),
      });
      events.publish({
        kind: "troop.updated",
        troop_id: updated.id,
        name: updated.name,
        strategy: updated.strategy,
        leader: updated.leader,
        members: updated.members,
      });
      return view(updated);
    },

    async list(): Promise<TroopView[]> {
      return Promise.all((await troops.list()).map(view));
    },

    async get(idOrName: string): Promise<TroopView> {
      return view(await troopOf(idOrName));
    },

    /** Cancels the troop's running tasks, waits for them to end, then deletes it with its tasks. */
    async disband(idOrName: string) {
      const troop = await troopOf(idOrName);
      const mine = [...active.values()].filter((t) => t.record.troop_id === troop.id);
      for (const task of mine) cancelTask(task, "its troop was disbanded");
      await Promise.allSettled(mine.map((t) => t.done));
      await troops.remove(troop.id);
      events.publish({
        kind: "troop.disbanded",
        troop_id: troop.id,
        name: troop.name,
        cancelled_tasks: mine.length,
      });
      return { id: troop.id, name: troop.name, disbanded: true, cancelled_tasks: mine.length };
    },

    /**
     * Records a task and starts it. `wait`: resolves with the ended record; otherwise with the
     * record as it stands once started. A client that leaves does not stop the task.
     */
    async submit(idOrName: string, text: string, wait: boolean): Promise<TroopTaskRecord> {
      if (stopping)
        throw new SparError("INTERRUPTED", "the daemon is stopping; send the task again after it restarts");
      const troop = await troopOf(idOrName);
      refuseIncomplete(await view(troop));
      const strategy = await strategyFor(troop.strategy);
      const record = await troops.tasks.create({
        troop_id: troop.id,
        task: text,
        strategy: troop.strategy,
      });
      const task = runTask(troop, record, strategy, {
        ring,
        troops,
        events,
        log,
        max_parallel: settings.max_parallel,
      });
      active.set(record.id, task);
      const ended = task.done
        .catch((err: unknown) => {
          log.error("troop task could not be recorded", { task: record.id, error: String(err) });
          throw err;
        })
        .finally(() => active.delete(record.id));
      if (wait) return structuredClone(await ended);
      ended.catch(() => undefined);
      return structuredClone(task.record);
    },

    async tasks(idOrName: string, page: { limit: number; before?: string }): Promise<TroopTaskRecord[]> {
      const troop = await troopOf(idOrName);
      return troops.tasks.list(troop.id, page);
    },

    async task(idOrName: string, taskId: string): Promise<TroopTaskRecord> {
      const troop = await troopOf(idOrName);
      const running = active.get(taskId);
      if (running && running.record.troop_id === troop.id) return structuredClone(running.record);
      return taskOf(troop, await troops.tasks.get(taskId), taskId);
    },

    /** Cancels a running task and answers with its record once it has ended (`cancelled`). */
    async cancel(idOrName: string, taskId: string): Promise<TroopTaskRecord> {
      const troop = await troopOf(idOrName);
      const running = active.get(taskId);
      if (!running || running.record.troop_id !== troop.id) {
        const task = taskOf(troop, await troops.tasks.get(taskId), taskId);
        throw new SparError("CONFLICT", `task ${task.id} has already ended (${task.status})`, {
          status: task.status,
        });
      }
      cancelTask(running, "cancelled through the API");
      return structuredClone(await running.done);
    },

    /**
     * At start: tasks the last daemon left unfinished end `failed`. Not in a cluster, where they may
     * be another node's (a task whose node died stays `running`: a known limit, see the README).
     */
    async start(): Promise<void> {
      if (ring.clustered) return;
      const abandoned = await troops.tasks.abandon(
        { code: "INTERRUPTED", message: "daemon restarted before the task ended; its steps so far are kept" },
        new Date().toISOString(),
      );
      if (abandoned > 0)
        log.warn("troop tasks interrupted by the last stop marked failed", { tasks: abandoned });
    },

    /** On shutdown: running tasks are stopped and recorded `failed` (INTERRUPTED) before the store closes. */
    async stop(): Promise<void> {
      stopping = true;
      const running = [...active.values()];
      for (const task of running) {
        task.controller.abort(
          new SparError("INTERRUPTED", "the daemon stopped before the task ended; its steps so far are kept"),
        );
      }
      await Promise.allSettled(running.map((t) => t.done));
    },
  };
}
