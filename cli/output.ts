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
