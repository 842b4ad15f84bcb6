/**
 * Troops and their tasks in troops-local's own collections (plugin.json `data`, namespace
 * `troops-local`): `troops`, a document per troop with its round-robin counter, and `tasks`, a
 * document per task with its text, its state and what the fighters wrote. The active store keeps
 * them encrypted and durable like the Ring's records. Every read-modify-write (an edit, a rotation, a
 * save, a disband with its tasks) is one `api.data.transaction`: what it read is held until it
 * writes, on one daemon or across a cluster's.
 */
import { randomUUID } from "node:crypto";
import {
  type BudgetLimits,
  badBudgetKey,
  type Doc,
  isSparError,
  type PluginData,
  SparError,
  type TxCollection,
} from "../../sdk/index.js";
import type { RecordedError, TroopRecord, TroopTaskRecord } from "../../sdk/kits/troops.js";
import { count, invalid, isoTime, members, recordedError, taskState, taskText, text } from "./checks.js";

/** Rows one read takes at a time (a listing, the tasks ended at start). */
const PAGE = 1000;
const UNFINISHED = ["pending", "running"];

type TroopFields = Pick<TroopRecord, "name" | "leader" | "members" | "strategy" | "budget">;

export type TroopData = ReturnType<typeof createTroopData>;

export function createTroopData(data: PluginData, now: () => string = () => new Date().toISOString()) {
  const troops = data.troops;
  const tasks = data.tasks;
  if (!troops || !tasks) throw new SparError("PLUGIN_INVALID", "troops-local declares no troops or tasks");
  const tx = (t: Readonly<Record<string, TxCollection>>) => ({
    troops: t.troops as TxCollection,
    tasks: t.tasks as TxCollection,
  });

  /** A name taken (the unique index on `name`, also across daemons): CONFLICT in the words troops always used. */
  const nameTaken = (name: string) => (err: unknown) => {
    if (isSparError(err, "CONFLICT")) {
      throw new SparError("CONFLICT", `a troop named ${name} already exists`, { name });
    }
    throw err;
  };
  const noTroop = (id: unknown) => new SparError("TROOP_NOT_FOUND", `no troop with id ${String(id)}`);

  return {
    /** CONFLICT when the name is taken. */
    async create(troop: TroopFields): Promise<TroopRecord> {
      const doc = {
        id: randomUUID(),
        name: text(troop.name, "name"),
        leader: text(troop.leader, "leader"),
        members: members(troop.members),
        strategy: text(troop.strategy, "strategy"),
        ...budgetOf(troop.budget),
        rotation: 0,
        created_at: now(),
      };
      await troops.insert(doc).catch(nameTaken(doc.name));
      return toTroop(doc);
    },

    /** By id, or by name; an id first, so a name that happens to be another troop's id never hides that troop. */
    async get(idOrName: string): Promise<TroopRecord | undefined> {
      if (typeof idOrName !== "string") return undefined;
      const doc =
        (await troops.get(idOrName)) ?? (await troops.find({ where: { name: idOrName }, limit: 1 }))[0];
      return doc ? toTroop(doc) : undefined;
    },

    /** Every troop, by name. */
    async list(): Promise<TroopRecord[]> {
      const all: Doc[] = [];
      for (let after: string | undefined; ; ) {
        const page = await troops.find({ limit: PAGE, ...(after === undefined ? {} : { after }) });
        all.push(...page);
        if (page.length < PAGE) break;
        after = page[page.length - 1]?.id as string;
      }
      return all.map(toTroop).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },

    /**
     * Changes a troop's name, leader, members or strategy (those given; its id, tasks and rotation
     * stay): TROOP_NOT_FOUND for an unknown id, CONFLICT for a name another troop has.
     */
    async update(id: string, changes: Partial<TroopFields>): Promise<TroopRecord> {
      const change: Doc = {
        ...(changes.name !== undefined ? { name: text(changes.name, "name") } : {}),
        ...(changes.leader !== undefined ? { leader: text(changes.leader, "leader") } : {}),
        ...(changes.members !== undefined ? { members: members(changes.members) } : {}),
        ...(changes.strategy !== undefined ? { strategy: text(changes.strategy, "strategy") } : {}),
      };
      // An empty budget ({}) removes it.
      const budget = changes.budget === undefined ? undefined : budgetOf(changes.budget);
      if (typeof id !== "string") throw noTroop(id);
      const updated = await data
        .transaction(async (t) => {
          const current = await tx(t).troops.get(id);
          if (!current) throw noTroop(id);
          const next: Doc = { ...current, ...change };
          if (budget !== undefined) {
            delete next.budget;
            Object.assign(next, budget);
          }
          tx(t).troops.put(next);
          return next;
        })
        .catch(nameTaken(String(change.name)));
      return toTroop(updated);
    },

    /** Deletes the troop with its tasks, together; false when there was none. */
    remove(id: string): Promise<boolean> {
      return data.transaction(async (t) => {
        const { troops, tasks } = tx(t);
        const found = await troops.get(id);
        tasks.deleteWhere({ troop_id: id });
        if (found) troops.delete(id);
        return found !== undefined;
      });
    },

    /** The troop's rotation counter (round robin), advanced by one, held while it is: the value before. */
    rotate(id: string): Promise<number> {
      return data.transaction(async (t) => {
        const troop = typeof id === "string" ? await tx(t).troops.get(id) : undefined;
        if (!troop) throw noTroop(id);
        const before = troop.rotation as number;
        tx(t).troops.put({ ...troop, rotation: before + 1 });
        return before;
      });
    },

    tasks: {
      /** Records a task `pending` (TROOP_NOT_FOUND for an unknown troop). */
      async create(task: { troop_id: string; task: string; strategy: string }): Promise<TroopTaskRecord> {
        const troopId = task.troop_id;
        if (typeof troopId !== "string") throw noTroop(troopId);
        const doc: Doc = {
          id: randomUUID(),
          troop_id: troopId,
          task: taskText(task.task),
          strategy: text(task.strategy, "strategy"),
          status: "pending",
          steps: [],
          partial: false,
          usage: { input_tokens: 0, output_tokens: 0 },
          created_at: now(),
        };
        await data.transaction(async (t) => {
          // The troop is held: a disband cannot delete it between this read and the insert.
          if (!(await tx(t).troops.get(troopId))) throw noTroop(troopId);
          tx(t).tasks.insert(doc);
        });
        return toTask(doc);
      },

      /** Writes a task's state as it stands (everything but its id, troop, task, strategy and created_at); NOT_FOUND when gone. */
      async save(task: TroopTaskRecord): Promise<void> {
        const state = taskState(task);
        const id = text(task.id, "id");
        await data.transaction(async (t) => {
          const stored = await tx(t).tasks.get(id);
          if (!stored) throw new SparError("NOT_FOUND", `no troop task with id ${id}`);
          const { id: _, troop_id, task: words, strategy, created_at } = stored;
          tx(t).tasks.put({ id, troop_id, task: words, strategy, created_at, ...state });
        });
      },

      async get(id: string): Promise<TroopTaskRecord | undefined> {
        const doc = typeof id === "string" ? await tasks.get(id) : undefined;
        return doc ? toTask(doc) : undefined;
      },

      /** A troop's tasks, newest first, at most `limit`; `before` is a task id of that troop (the page after it). */
      async list(troopId: string, page: { limit: number; before?: string }): Promise<TroopTaskRecord[]> {
        const limit = count(page.limit, 1, "limit");
        if (page.before !== undefined) {
          const cursor = await tasks.get(page.before);
          if (!cursor || cursor.troop_id !== troopId) {
            throw new SparError("NOT_FOUND", `troop ${troopId} has no task ${page.before}`);
          }
        }
        const docs = await tasks.find({
          where: { troop_id: troopId },
          order: { by: ["created_at"], desc: true },
          limit: Math.min(limit, 10_000),
          ...(page.before !== undefined ? { after: page.before } : {}),
        });
        return docs.map(toTask);
      },

      /** At start: tasks a stopped daemon left pending or running become `failed` with `error`, at `now`. How many. */
      async abandon(error: RecordedError, at: string): Promise<number> {
        const recorded = recordedError(error, "error");
        if (recorded === null) throw invalid("error must be { code, message } with both strings");
        const finished_at = isoTime(at, "now");
        let ended = 0;
        for (;;) {
          const n = await data.transaction(async (t) => {
            const left = await tx(t).tasks.find({ where: { status: { in: UNFINISHED } }, limit: PAGE });
            for (const doc of left)
              tx(t).tasks.put({ ...doc, status: "failed", error: recorded, finished_at });
            return left.length;
          });
          ended += n;
          if (n < PAGE) return ended;
        }
      },
    },
  };
}

/** A troop as the API shows it: its rotation counter is the strategy's, not the user's. */
function toTroop(doc: Doc): TroopRecord {
  return {
    id: doc.id as string,
    name: doc.name as string,
    leader: doc.leader as string,
    members: doc.members as string[],
    strategy: doc.strategy as string,
    ...(doc.budget ? { budget: doc.budget as BudgetLimits } : {}),
    created_at: doc.created_at as string,
  };
}

/** A troop's budget as stored: absent when it gives no limit; VALIDATION_FAILED naming a bad key. */
function budgetOf(budget: BudgetLimits | undefined): { budget?: BudgetLimits } {
  if (budget === undefined || Object.keys(budget).length === 0) return {};
  const bad =
    typeof budget === "object" && budget !== null
      ? badBudgetKey(budget as Record<string, unknown>)
      : "budget";
  if (bad) throw invalid(`budget.${bad} must be a finite number from 0`);
  return { budget: { ...budget } };
}

/** A task as recorded: the fields a document leaves out (or a migrated one holds null) are null, or absent, again. */
function toTask(doc: Doc): TroopTaskRecord {
  const task = doc as Partial<TroopTaskRecord>;
  return {
    id: task.id as string,
    troop_id: task.troop_id as string,
    task: task.task as string,
    strategy: task.strategy as string,
    status: task.status as TroopTaskRecord["status"],
    result: task.result ?? null,
    steps: task.steps ?? [],
    ...(task.votes != null ? { votes: task.votes } : {}),
    ...(task.reason != null ? { reason: task.reason } : {}),
    error: task.error ?? null,
    partial: task.partial === true,
    usage: task.usage ?? { input_tokens: 0, output_tokens: 0 },
    created_at: task.created_at as string,
    started_at: task.started_at ?? null,
    finished_at: task.finished_at ?? null,
  };
}
