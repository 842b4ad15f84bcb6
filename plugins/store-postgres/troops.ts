/**
 * Troops and their tasks. A task's text and body (result, steps, votes, reason) are sealed; its
 * status, error, usage and times are plain columns, so ending the tasks a stopped daemon left
 * behind is one UPDATE. The rotation counter advances in one UPDATE … RETURNING, atomic across daemons.
 */
import { randomUUID } from "node:crypto";
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
import { inTransaction, isUniqueViolation } from "./connection.js";
import type { StoreContext, StoreData } from "./context.js";

interface TaskDbRow {
  seq: number;
  id: string;
  troop_id: string;
  task: Buffer;
  strategy: string;
  status: TroopTaskStatus;
  body: Buffer;
  error_code: string | null;
  error_message: string | null;
  partial: boolean;
  input_tokens: number;
  output_tokens: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

const TROOP_COLUMNS = "id, name, leader, members, strategy, created_at";
const TASK_COLUMNS =
  "seq, id, troop_id, task, strategy, status, body, error_code, error_message, partial, input_tokens, " +
  "output_tokens, created_at, started_at, finished_at";
const NEWEST = "ORDER BY created_at DESC, seq DESC";

export function createTroops(ctx: StoreContext): StoreData["troops"] {
  const { pool, cipher, now } = ctx;
  const toTask = (row: TaskDbRow): TroopTaskRecord => {
    const body = JSON.parse(cipher.open("troop_tasks.body", row.body)) as TaskBody;
    return {
      id: row.id,
      troop_id: row.troop_id,
      task: cipher.open("troop_tasks.task", row.task),
      strategy: row.strategy,
      status: row.status,
      result: body.result,
      steps: body.steps,
      ...(body.votes !== undefined ? { votes: body.votes } : {}),
      ...(body.reason !== undefined ? { reason: body.reason } : {}),
      error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? "" },
      partial: row.partial,
      usage: { input_tokens: row.input_tokens, output_tokens: row.output_tokens },
      created_at: row.created_at,
      started_at: row.started_at,
      finished_at: row.finished_at,
    };
  };
  const troopWhere = async (where: string, value: string) =>
    (await pool.query<TroopRecord>(`SELECT ${TROOP_COLUMNS} FROM troops WHERE ${where}`, [value])).rows[0];
  const taskRow = async (id: string) =>
    (await pool.query<TaskDbRow>(`SELECT ${TASK_COLUMNS} FROM troop_tasks WHERE id = $1`, [id])).rows[0];

  return {
    async create(troop) {
      const row: TroopRecord = {
        id: randomUUID(),
        name: text(troop.name, "name"),
        leader: text(troop.leader, "leader"),
        members: members(troop.members),
        strategy: text(troop.strategy, "strategy"),
        created_at: now(),
      };
      try {
        await pool.query(`INSERT INTO troops (${TROOP_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)`, [
          row.id,
          row.name,
          row.leader,
          JSON.stringify(row.members),
          row.strategy,
          row.created_at,
        ]);
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new SparError("CONFLICT", `a troop named ${row.name} already exists`, { name: row.name });
        }
        throw err;
      }
      return row;
    },
    // An id first: a name that happens to be another troop's id never hides that troop.
    get: async (idOrName) =>
      (await troopWhere("id = $1", idOrName)) ?? (await troopWhere("name = $1", idOrName)),
    list: async () =>
      (await pool.query<TroopRecord>(`SELECT ${TROOP_COLUMNS} FROM troops ORDER BY name`)).rows,
    async update(id, changes) {
      const current = await troopWhere("id = $1", id);
      if (!current) throw new SparError("TROOP_NOT_FOUND", `no troop with id ${String(id)}`);
      const row: TroopRecord = {
        ...current,
        ...(changes.name !== undefined ? { name: text(changes.name, "name") } : {}),
        ...(changes.leader !== undefined ? { leader: text(changes.leader, "leader") } : {}),
        ...(changes.members !== undefined ? { members: members(changes.members) } : {}),
        ...(changes.strategy !== undefined ? { strategy: text(changes.strategy, "strategy") } : {}),
      };
      try {
        const updated = await pool.query(
          "UPDATE troops SET name = $2, leader = $3, members = $4, strategy = $5 WHERE id = $1",
          [id, row.name, row.leader, JSON.stringify(row.members), row.strategy],
        );
        if (updated.rowCount === 0) throw new SparError("TROOP_NOT_FOUND", `no troop with id ${id}`);
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new SparError("CONFLICT", `a troop named ${row.name} already exists`, { name: row.name });
        }
        throw err;
      }
      return row;
    },
    remove: (id) =>
      inTransaction(pool, async (client) => {
        await client.query("DELETE FROM troop_tasks WHERE troop_id = $1", [id]);
        return ((await client.query("DELETE FROM troops WHERE id = $1", [id])).rowCount ?? 0) > 0;
      }),
    async rotate(id) {
      const row = await pool.query<{ before: number }>(
        "UPDATE troops SET rotation = rotation + 1 WHERE id = $1 RETURNING rotation - 1 AS before",
        [id],
      );
      const before = row.rows[0]?.before;
      if (before === undefined) throw new SparError("TROOP_NOT_FOUND", `no troop with id ${id}`);
      return before;
    },
    tasks: {
      async create(task) {
        const troopId = task.troop_id;
        if (typeof troopId !== "string" || !(await troopWhere("id = $1", troopId))) {
          throw new SparError("TROOP_NOT_FOUND", `no troop with id ${String(troopId)}`);
        }
        const body: TaskBody = { result: null, steps: [] };
        const row = await pool.query<TaskDbRow>(
          `INSERT INTO troop_tasks (id, troop_id, task, strategy, status, body, created_at)
           VALUES ($1, $2, $3, $4, 'pending', $5, $6) RETURNING ${TASK_COLUMNS}`,
          [
            randomUUID(),
            troopId,
            cipher.seal("troop_tasks.task", taskText(task.task)),
            text(task.strategy, "strategy"),
            cipher.seal("troop_tasks.body", JSON.stringify(body)),
            now(),
          ],
        );
        return toTask(row.rows[0] as TaskDbRow);
      },
      async save(task) {
        const s = taskState(task);
        const saved = await pool.query(
          `UPDATE troop_tasks SET status = $2, body = $3, error_code = $4, error_message = $5, partial = $6,
             input_tokens = $7, output_tokens = $8, started_at = $9, finished_at = $10
           WHERE id = $1`,
          [
            s.id,
            s.status,
            cipher.seal("troop_tasks.body", s.body),
            s.error_code,
            s.error_message,
            s.partial,
            s.input_tokens,
            s.output_tokens,
            s.started_at,
            s.finished_at,
          ],
        );
        if (saved.rowCount === 0)
          throw new SparError("NOT_FOUND", `no troop task with id ${String(task.id)}`);
      },
      async get(id) {
        const row = await taskRow(id);
        return row ? toTask(row) : undefined;
      },
      async list(troopId, page) {
        const limit = count(page.limit, 1, "limit");
        if (page.before === undefined) {
          return (
            await pool.query<TaskDbRow>(
              `SELECT ${TASK_COLUMNS} FROM troop_tasks WHERE troop_id = $1 ${NEWEST} LIMIT $2`,
              [troopId, limit],
            )
          ).rows.map(toTask);
        }
        const cursor = await taskRow(page.before);
        if (!cursor || cursor.troop_id !== troopId) {
          throw new SparError("NOT_FOUND", `troop ${troopId} has no task ${page.before}`);
        }
        return (
          await pool.query<TaskDbRow>(
            `SELECT ${TASK_COLUMNS} FROM troop_tasks WHERE troop_id = $1 AND (created_at, seq) < ($2, $3) ${NEWEST} LIMIT $4`,
            [troopId, cursor.created_at, cursor.seq, limit],
          )
        ).rows.map(toTask);
      },
      async abandon(error, at) {
        const recorded = recordedError(error, "error");
        if (recorded === null) throw invalid("error must be { code, message } with both strings");
        const ended = await pool.query(
          `UPDATE troop_tasks SET status = 'failed', error_code = $1, error_message = $2, finished_at = $3
           WHERE status IN ('pending', 'running')`,
          [recorded.code, recorded.message, isoTime(at, "now")],
        );
        return ended.rowCount ?? 0;
      },
    },
  };
}
