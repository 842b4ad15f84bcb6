import { isSparError, SparError } from "../sdk/errors.js";
import type { OptionSpec, ParsedOptions } from "./command-spec.js";

/** Options every command receives (cli/parse.ts gives each declared option its declared type). */
export interface GlobalOptions {
  json?: boolean;
}

/**
 * A failed command, reported once: one line `spar: <message> (<CODE>)` on stderr, or with `--json`
 * `{"error":{"code","message"}}` on stdout, so a script reading stdout always gets JSON. Exit code 1
 * (unless the command chose another). Never a stack trace.
 */
export function reportError(err: unknown, json: boolean): void {
  const e = (err instanceof Error ? err : new Error(String(err))) as Error & {
    code?: unknown;
    extra?: unknown;
  };
  const code = typeof e.code === "string" && /^[A-Z_]+$/.test(e.code) ? e.code : undefined;
  if (json) {
    const extra = typeof e.extra === "object" && e.extra !== null ? e.extra : {};
    printJson({ error: { ...extra, code: code ?? "INTERNAL", message: e.message } });
  } else {
    process.stderr.write(`spar: ${printable(e.message)}${code ? ` (${code})` : ""}\n`);
  }
  if (!process.exitCode) process.exitCode = 1;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Left-aligned columns for list output. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/**
 * Text from a model (or a provider's error) made safe for a terminal: every control character but
 * newline and tab is shown as a visible symbol instead of acting (ESC starts sequences that retitle,
 * clear or rewrite the screen; CR overwrites a line). Character by character, so a sequence split
 * across streamed pieces is neutralized all the same.
 */
export function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => {
    const code = c.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    return code === 0x7f ? "\u2421" : "\ufffd";
  });
}

/**
 * The daemon's refusal of a request field, told in the words of the option the user typed: the
 * daemon says `"body.bout_id" must be a bout id` or `?limit must be …`, which is HTTP; the user wrote
 * `--bout`. A refusal names its field in `path` (`/body/bout_id`, `/querystring/limit`); the option
 * whose request field that is (OptionSpec.field, else the flag's name) takes its place in the message.
 * Anything else passes through unchanged. Every command's errors come through here (cli/index.ts), before reportError.
 */
export function inTermsOfOptions(err: unknown, declared: OptionSpec[], given: ParsedOptions): unknown {
  if (!isSparError(err, "VALIDATION_FAILED") || typeof err.extra.path !== "string") return err;
  const at = /^\/(body|querystring|params)\/([^/]+)$/.exec(err.extra.path);
  if (!at) return err;
  const [, where, field] = at as unknown as [string, string, string];
  const option = declared.find((o) => o.value && (o.field ?? o.flag.slice(2).replaceAll("-", "_")) === field);
  if (!option) return err;
  const named = [`"${where}.${field}"`, `?${field}`].find((reference) => err.message.includes(reference));
  let message = named ? err.message.replace(named, option.flag) : `${option.flag}: ${err.message}`;
  const value = given[camel(option.flag)];
  if (typeof value === "string" && !message.includes(JSON.stringify(value))) {
    message += `, not ${JSON.stringify(value)}`;
  }
  return new SparError(err.code, message, { ...err.extra, option: option.flag });
}

/** `--key-id` → `keyId`, as the parser names options. */
function camel(flag: string): string {
  return flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}
