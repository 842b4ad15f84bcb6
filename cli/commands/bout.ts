import { SparError } from "../../sdk/errors.js";
import type { BoutRecord } from "../../sdk/types.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/**
 * `spar bout list`: a fighter's bouts (conversations), the most recently active first, as the daemon
 * lists them. `spar chat` continues the first one unless told `--new` or `--bout <id>`.
 */
export async function bout(action: string, options: GlobalOptions & { fighter: string }): Promise<void> {
  if (action !== "list") throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for bout`);
  const path = `/api/v1/fighters/${encodeURIComponent(options.fighter)}/bouts`;
  const { bouts } = await api<{ bouts: BoutRecord[] }>("GET", path);
  if (options.json) return printJson({ bouts });
  if (bouts.length === 0) {
    process.stdout.write(`${options.fighter} has no bouts yet; spar chat starts one\n`);
    return;
  }
  const rows = bouts.map((b) => [b.id, b.created_at, b.updated_at, String(b.message_count)]);
  process.stdout.write(`${table([["ID", "CREATED", "UPDATED", "MESSAGES"], ...rows])}\n`);
}
