/** Messages fighters scheduled for themselves (the schedule moves' substrate). */
import type Database from "better-sqlite3-multiple-ciphers";
import type { ScheduleRecord } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";

interface ScheduleDbRow {
  id: string;
  fighter_id: string;
  message: string;
  cron: string | null;
  timezone: string | null;
  next_run_at: string;
  created_at: string;
  last_run_at: string | null;
  last_status: string | null;
}

const COLUMNS = "id, fighter_id, message, cron, timezone, next_run_at, created_at, last_run_at, last_status";

export function createSchedules(
  db: Database.Database,
  requireLiveFighter: (fighterId: string) => void,
): StoreData["schedules"] {
  const s = {
    insert: db.prepare<[ScheduleDbRow], void>(
      `INSERT INTO schedules (${COLUMNS}) VALUES
        (@id, @fighter_id, @message, @cron, @timezone, @next_run_at, @created_at, @last_run_at, @last_status)`,
    ),
    all: db.prepare<[], ScheduleDbRow>(`SELECT ${COLUMNS} FROM schedules ORDER BY next_run_at, rowid`),
    of: db.prepare<[string], ScheduleDbRow>(
      `SELECT ${COLUMNS} FROM schedules WHERE fighter_id = ? ORDER BY next_run_at, rowid`,
    ),
    ran: db.prepare<[string, string, string, string], void>(
      "UPDATE schedules SET last_run_at = ?, last_status = ?, next_run_at = ? WHERE id = ?",
    ),
    remove: db.prepare<[string], void>("DELETE FROM schedules WHERE id = ?"),
    removeOwn: db.prepare<[string, string], void>("DELETE FROM schedules WHERE id = ? AND fighter_id = ?"),
  };
  return {
    add(record) {
      requireLiveFighter(record.fighter_id);
      s.insert.run({
        id: record.id,
        fighter_id: record.fighter_id,
        message: record.message,
        cron: record.cron ?? null,
        timezone: record.timezone ?? null,
        next_run_at: record.next_run_at,
        created_at: record.created_at,
        last_run_at: record.last_run_at ?? null,
        last_status: record.last_status ?? null,
      });
    },
    list: (fighterId) => (fighterId === undefined ? s.all.all() : s.of.all(fighterId)).map(toRecord),
    ran(id, run) {
      if (run.next_run_at === undefined) s.remove.run(id);
      else s.ran.run(run.at, run.status, run.next_run_at, id);
    },
    remove: (id, fighterId) =>
      (fighterId === undefined ? s.remove.run(id) : s.removeOwn.run(id, fighterId)).changes > 0,
  };
}

function toRecord(row: ScheduleDbRow): ScheduleRecord {
  return {
    id: row.id,
    fighter_id: row.fighter_id,
    message: row.message,
    ...(row.cron ? { cron: row.cron } : {}),
    ...(row.timezone ? { timezone: row.timezone } : {}),
    next_run_at: row.next_run_at,
    created_at: row.created_at,
    ...(row.last_run_at ? { last_run_at: row.last_run_at } : {}),
    ...(row.last_status ? { last_status: row.last_status } : {}),
  };
}
