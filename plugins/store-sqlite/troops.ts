/**
 * Troops (fighters working on tasks under one strategy) and their tasks. A task's text and what the
 * fighters wrote (result, steps, votes, reason) are rows of the SQLCipher-encrypted database like
 * every message; its status, error, usage and times are plain columns beside them, so that ending
 * the tasks a stopped daemon left behind is one UPDATE.
 */
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3-multiple-ciphers";
import {
  count,
  invalid,
  isoTime,
  members,
  recordedError,
  type TaskBody,
  taskState,
  taskText,
  text,
} from "../../lib/store-checks.js";
import type { TroopRecord, TroopTaskRecord, TroopTaskStatus } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";

interface TroopDbRow {
  id: string;
  name: string;
  leader: string;
  members: string;
  strategy: string;
  created_at: string;
}

interface TaskDbRow {
  seq: number;
  id: string;
  troop_id: string;
  task: string;
  strategy: string;
  status: TroopTaskStatus;
  body: string;
  error_code: string | null;
  error_message: string | null;
  partial: number;
  input_tokens: number;
  output_tokens: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** What a save writes: every column but the task's identity, its text, its strategy and created_at. */
type TaskStateDbRow = Omit<TaskDbRow, "seq" | "troop_id" | "task" | "strategy" | "created_at">;

/** The JSON in `body`: what the fighters produced. */

const TROOP_COLUMNS = "id, name, leader, members, strategy, created_at";
const TASK_COLUMNS =
  "seq, id, troop_id, task, strategy, status, body, error_code, error_message, partial, input_tokens, " +
  "output_tokens, created_at, started_at, finished_at";
// Newest first; seq (the rowid, also the last column of troop_tasks_newest) breaks ties.
const NEWEST = "ORDER BY created_at DESC, seq DESC";

export interface TroopDeps {
  now: () => string;
}

export function createTroops(db: Database.Database, deps: TroopDeps): StoreData["troops"] {
  const { now } = deps;
  const s = {
    insertTroop: db.prepare<[TroopDbRow], void>(
      `INSERT INTO troops (${TROOP_COLUMNS}) VALUES (@id, @name, @leader, @members, @strategy, @created_at)`,
    ),
    troop: db.prepare<[string], TroopDbRow>(`SELECT ${TROOP_COLUMNS} FROM troops WHERE id = ?`),
    troopByName: db.prepare<[string], TroopDbRow>(`SELECT ${TROOP_COLUMNS} FROM troops WHERE name = ?`),
    troops: db.prepare<[], TroopDbRow>(`SELECT ${TROOP_COLUMNS} FROM troops ORDER BY name`),
    updateTroop: db.prepare<[Omit<TroopDbRow, "created_at">], void>(
      "UPDATE troops SET name = @name, leader = @leader, members = @members, strategy = @strategy WHERE id = @id",
    ),
    removeTasks: db.prepare<[string], void>("DELETE FROM troop_tasks WHERE troop_id = ?"),
    removeTroop: db.prepare<[string], void>("DELETE FROM troops WHERE id = ?"),
    // One statement: reading and advancing the counter cannot be split by another call.
    rotate: db
      .prepare<[string], number>(
        "UPDATE troops SET rotation = rotation + 1 WHERE id = ? RETURNING rotation - 1",
      )
      .pluck(),
    insertTask: db.prepare<
      [{ id: string; troop_id: string; task: string; strategy: string; body: string; created_at: string }],
      void
    >(
      `INSERT INTO troop_tasks (id, troop_id, task, strategy, status, body, created_at)
       VALUES (@id, @troop_id, @task, @strategy, 'pending', @body, @created_at)`,
    ),
    task: db.prepare<[string], TaskDbRow>(`SELECT ${TASK_COLUMNS} FROM troop_tasks WHERE id = ?`),
    saveTask: db.prepare<[TaskStateDbRow], void>(
      `UPDATE troop_tasks SET status = @status, body = @body, error_code = @error_code,
         error_message = @error_message, partial = @partial, input_tokens = @input_tokens,
         output_tokens = @output_tokens, started_at = @started_at, finished_at = @finished_at
       WHERE id = @id`,
    ),
    newest: db.prepare<[string, number], TaskDbRow>(
      `SELECT ${TASK_COLUMNS} FROM troop_tasks WHERE troop_id = ? ${NEWEST} LIMIT ?`,
    ),
    after: db.prepare<[string, string, number, number], TaskDbRow>(
      `SELECT ${TASK_COLUMNS} FROM troop_tasks WHERE troop_id = ? AND (created_at, seq) < (?, ?) ${NEWEST} LIMIT ?`,
    ),
    abandon: db.prepare<[string, string, string], void>(
      `UPDATE troop_tasks SET status = 'failed', error_code = ?, error_message = ?, finished_at = ?
       WHERE status IN ('pending', 'running')`,
    ),
  };

  const create = db.transaction((troop: Omit<TroopRecord, "id" | "created_at">): TroopRecord => {
    const row: TroopDbRow = {
      id: randomUUID(),
      name: text(troop.name, "name"),
      leader: text(troop.leader, "leader"),
      members: JSON.stringify(members(troop.members)),
      strategy: text(troop.strategy, "strategy"),
      created_at: now(),
    };
    if (s.troopByName.get(row.name)) {
      throw new SparError("CONFLICT", `a troop named ${row.name} already exists`, { name: row.name });
    }
    s.insertTroop.run(row);
    return toTroop(row);
  });

  const update = db.transaction(
    (
      id: string,
      changes: Partial<Pick<TroopRecord, "name" | "leader" | "members" | "strategy">>,
    ): TroopRecord => {
      const current = s.troop.get(id);
      if (!current) throw new SparError("TROOP_NOT_FOUND", `no troop with id ${String(id)}`);
      const row: TroopDbRow = {
        ...current,
        ...(changes.name !== undefined ? { name: text(changes.name, "name") } : {}),
        ...(changes.leader !== undefined ? { leader: text(changes.leader, "leader") } : {}),
        ...(changes.members !== undefined ? { members: JSON.stringify(members(changes.members)) } : {}),
        ...(changes.strategy !== undefined ? { strategy: text(changes.strategy, "strategy") } : {}),
      };
      const named = s.troopByName.get(row.name);
      if (named && named.id !== id) {
        throw new SparError("CONFLICT", `a troop named ${row.name} already exists`, { name: row.name });
      }
      s.updateTroop.run({
        id: row.id,
        name: row.name,
        leader: row.leader,
        members: row.members,
        strategy: row.strategy,
      });
      return toTroop(row);
    },
  );

  const remove = db.transaction((id: string): boolean => {
    s.removeTasks.run(id);
    return s.removeTroop.run(id).changes > 0;
  });

  const createTask = db.transaction(
    (task: { troop_id: string; task: string; strategy: string }): TroopTaskRecord => {
      const troopId = task.troop_id;
      if (typeof troopId !== "string" || !s.troop.get(troopId)) {
        throw new SparError("TROOP_NOT_FOUND", `no troop with id ${String(troopId)}`);
      }
      const id = randomUUID();
      s.insertTask.run({
        id,
        troop_id: troopId,
        task: taskText(task.task),
        strategy: text(task.strategy, "strategy"),
        body: JSON.stringify({ result: null, steps: [] } satisfies TaskBody),
        created_at: now(),
      });
      return toTask(s.task.get(id) as TaskDbRow);
    },
  );

  return {
    create: (troop) => create.immediate(troop),
    get(idOrName) {
      // An id first: a name that happens to be another troop's id never hides that troop.
      const row = s.troop.get(idOrName) ?? s.troopByName.get(idOrName);
      return row ? toTroop(row) : undefined;
    },
    list: () => s.troops.all().map(toTroop),
    update: (id, changes) => update.immediate(id, changes),
    remove: (id) => remove.immediate(id),
    rotate(id) {
      const before = s.rotate.get(id);
      if (before === undefined) throw new SparError("TROOP_NOT_FOUND", `no troop with id ${id}`);
      return before;
    },
    tasks: {
      create: (task) => createTask.immediate(task),
      save(task) {
        const state = taskState(task);
        if (s.saveTask.run({ ...state, partial: state.partial ? 1 : 0 }).changes === 0) {
          throw new SparError("NOT_FOUND", `no troop task with id ${String(task.id)}`);
        }
      },
      get(id) {
        const row = s.task.get(id);
        return row ? toTask(row) : undefined;
      },
      list(troopId, page) {
        const limit = count(page.limit, 1, "limit");
        if (page.before === undefined) return s.newest.all(troopId, limit).map(toTask);
        const cursor = s.task.get(page.before);
        if (!cursor || cursor.troop_id !== troopId) {
          throw new SparError("NOT_FOUND", `troop ${troopId} has no task ${page.before}`);
        }
        return s.after.all(troopId, cursor.created_at, cursor.seq, limit).map(toTask);
      },
      abandon(error, at) {
        const recorded = recordedError(error, "error");
        if (recorded === null) throw invalid("error must be { code, message } with both strings");
        return s.abandon.run(recorded.code, recorded.message, isoTime(at, "now")).changes;
      },
    },
  };
}

function toTroop(row: TroopDbRow): TroopRecord {
  return {
    id: row.id,
    name: row.name,
    leader: row.leader,
    members: JSON.parse(row.members) as string[],
    strategy: row.strategy,
    created_at: row.created_at,
  };
}

function toTask(row: TaskDbRow): TroopTaskRecord {
  const body = JSON.parse(row.body) as TaskBody;
  return {
    id: row.id,
    troop_id: row.troop_id,
    task: row.task,
    strategy: row.strategy,
    status: row.status,
    result: body.result,
    steps: body.steps,
    ...(body.votes !== undefined ? { votes: body.votes } : {}),
    ...(body.reason !== undefined ? { reason: body.reason } : {}),
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? "" },
    partial: row.partial === 1,
    usage: { input_tokens: row.input_tokens, output_tokens: row.output_tokens },
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}
