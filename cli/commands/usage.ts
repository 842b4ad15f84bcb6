import { SparError } from "../../sdk/errors.js";
import type { UsageReport, UsageTotal } from "../../sdk/services.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson, table } from "../output.js";

export interface UsageOptions extends GlobalOptions {
  fighter?: string;
  by?: string;
  since?: string;
  until?: string;
  tz?: string;
  origin?: string;
  provider?: string;
  model?: string;
  csv?: boolean;
}

/** The request's query parameters, from the options of the same names. */
const PARAMETERS = ["fighter", "by", "since", "until", "tz", "origin", "provider", "model"] as const;

/**
 * `spar usage`: GET /api/v1/usage as a table (cost last, the total last), its body as it is with
 * `--json`, or RFC 4180 CSV with a header row with `--csv`.
 */
export async function usage(options: UsageOptions): Promise<void> {
  if (options.csv && options.json) {
    throw new SparError("VALIDATION_FAILED", "--csv and --json are two outputs: give one of them");
  }
  const query = new URLSearchParams();
  for (const name of PARAMETERS) {
    const value = options[name];
    if (value !== undefined) query.set(name, value);
  }
  const text = query.toString();
  const report = await api<UsageReport>("GET", `/api/v1/usage${text ? `?${text}` : ""}`);
  if (options.json) return printJson(report);
  if (options.csv) return void process.stdout.write(usageCsv(report));
  process.stdout.write(`${usageTable(report, options.by ?? "day")}\n`);
}

const HEAD = ["CALLS", "INPUT", "CACHED", "CACHE WRITE", "OUTPUT", "COST"];

/** The table: a row per group, then TOTAL; a cost with unpriced calls says how many. */
export function usageTable(report: UsageReport, by: string): string {
  const row = (key: string, u: UsageTotal) => [
    key,
    String(u.requests),
    String(u.input_tokens),
    String(u.cached_tokens),
    String(u.cache_write_tokens),
    String(u.output_tokens),
    costText(u),
  ];
  if (report.usage.length === 0) return "No model calls in this range.";
  return table([
    [by.toUpperCase(), ...HEAD],
    ...report.usage.map((u) => row(u.key, u)),
    row("TOTAL", report.total),
  ]);
}

function costText(u: UsageTotal): string {
  if (u.cost === null) return "unpriced";
  const amount = u.currency === "USD" ? `$${u.cost.toFixed(6)}` : `${u.cost.toFixed(6)} ${u.currency}`;
  return u.unpriced_requests > 0 ? `${amount} (+${u.unpriced_requests} of ${u.requests} unpriced)` : amount;
}

const COLUMNS = [
  "requests",
  "input_tokens",
  "output_tokens",
  "cached_tokens",
  "cache_write_tokens",
  "cost",
  "currency",
  "unpriced_requests",
] as const;

/** RFC 4180: a header, CRLF line ends, a field quoted when it holds a comma, a quote or a line end. */
export function usageCsv(report: UsageReport): string {
  const field = (value: string | number | null) => {
    const text = value === null ? "" : String(value);
    return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  const line = (key: string, u: UsageTotal) => [key, ...COLUMNS.map((c) => u[c])].map(field).join(",");
  return `${[
    ["key", ...COLUMNS].join(","),
    ...report.usage.map((u) => line(u.key, u)),
    line("total", report.total),
  ].join("\r\n")}\r\n`;
}
