/** Options every command receives from cac. */
export interface GlobalOptions {
  json?: boolean;
}

/**
 * Runs a command's action: errors become one line on stderr and exit code 1, never a stack trace.
 * A SparError from the daemon shows its code so scripts can tell failures apart.
 */
export async function runAction(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (err) {
    const e = err as Error & { code?: unknown };
    const code = typeof e.code === "string" && /^[A-Z_]+$/.test(e.code) ? ` (${e.code})` : "";
    process.stderr.write(`spar: ${printable(e.message)}${code}\n`);
    process.exitCode = 1;
  }
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
