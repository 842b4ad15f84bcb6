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
    process.stderr.write(`spar: ${e.message}${code}\n`);
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
