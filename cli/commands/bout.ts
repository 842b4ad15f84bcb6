import { originFilter } from "../../lib/bout-origins.js";
import { SparError } from "../../sdk/errors.js";
import type { BoutRecord } from "../../sdk/types.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/**
 * `spar bout list`: a fighter's bouts (conversations), the most recently active first, as the daemon
 * lists them, each with its origin (who started it); `--origin` keeps one origin or one kind.
 * `spar chat` continues the first one of origin `user` unless told `--new` or `--bout <id>`.
 */
export async function bout(
  action: string,
  options: GlobalOptions & { fighter: string; origin?: string },
): Promise<void> {
  if (action !== "list") throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for bout`);
  // Checked here too, so the error names the option as typed rather than the API's query.
  if (options.origin !== undefined) originFilter(options.origin, "--origin");
  const query = options.origin !== undefined ? `?origin=${encodeURIComponent(options.origin)}` : "";
  const path = `/api/v1/fighters/${encodeURIComponent(options.fighter)}/bouts${query}`;
  const { bouts } = await api<{ bouts: BoutRecord[] }>("GET", path);
  if (options.json) return printJson({ bouts });
  if (bouts.length === 0) {
    const which = options.origin !== undefined ? ` of origin ${options.origin}` : "";
    process.stdout.write(`${options.fighter} has no bouts${which} yet; spar chat starts one\n`);
    return;
  }
  const rows = bouts.map((b) => [
    b.id,
    b.origin ?? "user",
    b.created_at,
    b.updated_at,
    String(b.message_count),
  ]);
  process.stdout.write(`${table([["ID", "ORIGIN", "CREATED", "UPDATED", "MESSAGES"], ...rows])}\n`);
}
