import type { BudgetStatus } from "../../sdk/index.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/** Money as the currency shows it, to the micro-unit when it needs to; tokens as integers. */
function figure(row: BudgetStatus, amount: number): string {
  if (row.unit === "tokens") return String(amount);
  const text = amount.toFixed(6).replace(/0{1,4}$/, "");
  return row.currency === "USD" ? `$${text}` : `${text} ${row.currency}`;
}

/** `spar budgets`: every budget, its limit, what its period has spent and holds, when it resets. */
export async function budgets(options: GlobalOptions): Promise<void> {
  const body = await api<{ budgets: BudgetStatus[] }>("GET", "/api/v1/budgets");
  if (options.json) return printJson(body);
  if (body.budgets.length === 0) {
    process.stdout.write("No budgets: set [budgets.global] in config.toml, or a fighter's manifest budget\n");
    return;
  }
  const rows = body.budgets.map((b) => [
    b.budget,
    figure(b, b.limit),
    figure(b, b.spent),
    figure(b, b.reserved),
    b.limit > 0 ? `${Math.floor((b.spent * 100) / b.limit)}%` : "-",
    b.resets_at,
    b.on_exceed,
  ]);
  process.stdout.write(
    `${table([["BUDGET", "LIMIT", "SPENT", "RESERVED", "USED", "RESETS AT", "ON EXCEED"], ...rows])}\n`,
  );
}
