import { SparError } from "../../sdk/errors.js";
import { api } from "../client.js";
import { type GlobalOptions, printable, printJson, table } from "../output.js";

/** A schedule as `GET /api/v1/schedules` shows it (plugins/moves-schedule). */
interface ScheduleView {
  id: string;
  fighter_id: string;
  fighter: string;
  message: string;
  next_run_at: string;
  cron?: string;
  timezone?: string;
  last_run_at?: string;
  last_status?: string;
}

/** The longest message shown in the table; `--json` has the whole of it. */
const MESSAGE_SHOWN = 60;

/**
 * `spar schedule list|remove`: the messages fighters scheduled for themselves (`schedule_add`),
 * which run as turns with no one watching, so the operator can see and stop every one.
 */
export async function schedule(
  action: string,
  id: string | undefined,
  options: GlobalOptions,
): Promise<void> {
  switch (action) {
    case "list": {
      const { schedules } = await api<{ schedules: ScheduleView[] }>("GET", "/api/v1/schedules");
      if (options.json) return printJson({ schedules });
      if (schedules.length === 0) {
        process.stdout.write("No scheduled messages (fighters add them with schedule_add).\n");
        return;
      }
      const rows = schedules.map((s) => [
        s.id,
        printable(s.fighter),
        s.next_run_at,
        s.cron ? `${s.cron} (${s.timezone ?? "UTC"})` : "once",
        s.last_run_at ? `${s.last_status ?? "-"} ${s.last_run_at}` : "-",
        shorten(printable(s.message)),
      ]);
      process.stdout.write(
        `${table([["ID", "FIGHTER", "NEXT RUN", "REPEATS", "LAST RUN", "MESSAGE"], ...rows])}\n`,
      );
      return;
    }
    case "remove": {
      const target = id ?? "";
      const removed = await api<{ removed: string; fighter: string }>(
        "DELETE",
        `/api/v1/schedules/${encodeURIComponent(target)}`,
      );
      if (options.json) return printJson(removed);
      process.stdout.write(`Removed schedule ${removed.removed} (fighter ${printable(removed.fighter)})\n`);
      return;
    }
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for schedule`);
  }
}

function shorten(text: string): string {
  const line = text.replace(/\s+/g, " ");
  return line.length > MESSAGE_SHOWN ? `${line.slice(0, MESSAGE_SHOWN - 1)}…` : line;
}
