import { originFilter } from "../../lib/bout-origins.js";
import { SparError } from "../../sdk/errors.js";
import type { TurnRecord } from "../../sdk/store-rows.js";
import type { BoutRecord, StoredMessage } from "../../sdk/types.js";
import { api } from "../client.js";
import { type GlobalOptions, printable, printJson, table } from "../output.js";

/**
 * `spar bout list`: a fighter's bouts (conversations), the most recently active first, as the daemon
 * lists them, each with its origin (who started it); `--origin` keeps one origin or one kind.
 * `spar chat` continues the first one of origin `user` unless told `--new` or `--bout <id>`.
 * `spar bout show <id>`: one bout's messages in order, and how each turn that did not complete ended.
 */
export async function bout(
  action: string,
  args: string[],
  options: GlobalOptions & { fighter: string; origin?: string },
): Promise<void> {
  if (action === "show") return show(args[0] as string, options);
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

/**
 * A bout as a reader wants it: each message with who said it, and after a turn that failed, was
 * cancelled or was cut off by a stopped daemon (INTERRUPTED), a line saying so. A message sent but
 * never answered shows that way, so a chat a crash cut off can be found again.
 */
async function show(id: string, options: GlobalOptions): Promise<void> {
  const at = `/api/v1/bouts/${encodeURIComponent(id)}`;
  const [{ messages }, { turns }] = await Promise.all([
    api<{ messages: StoredMessage[] }>("GET", `${at}/messages`),
    api<{ turns: TurnRecord[] }>("GET", `${at}/turns`),
  ]);
  if (options.json) return printJson({ bout_id: id, messages, turns });
  const lines: string[] = [];
  const ended = (turnId: string | undefined) => {
    const turn = turns.find((t) => t.id === turnId);
    if (turn?.taint?.length) {
      const sources = turn.taint.map((t) => `${printable(t.detail)} (${t.kind})`).join(", ");
      lines.push(`  [turn tainted by untrusted content: ${sources}]`);
    }
    if (!turn || turn.status === "completed") return;
    const why = turn.error ? `: ${turn.error.message} (${turn.error.code})` : "";
    const status =
      turn.status === "running"
        ? "still running"
        : turn.status === "awaiting_approval"
          ? "waiting for an approval (spar approvals list)"
          : turn.status;
    lines.push(`  [turn ${status}${why}]`);
  };
  messages.forEach((message, index) => {
    lines.push(`${speaker(message)}: ${printable(message.content)}`);
    // After a turn's last message, how the turn ended, when it did not complete.
    if (messages[index + 1]?.turn_id !== message.turn_id) ended(message.turn_id);
  });
  if (lines.length === 0) lines.push("no messages in this bout");
  process.stdout.write(`${lines.join("\n")}\n`);
}

function speaker(message: StoredMessage): string {
  if (message.role === "tool") return `tool ${message.name}`;
  if (message.role === "assistant" && message.tool_calls?.length) {
    return `${message.role} (calls ${message.tool_calls.map((c) => c.name).join(", ")})`;
  }
  return message.role;
}
