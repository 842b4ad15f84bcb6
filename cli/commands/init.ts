import { resolveHome } from "../../lib/home.js";
import { type GlobalOptions, printJson } from "../output.js";
import { initHome } from "./init-home.js";

/**
 * `spar init`: never interactive, so it works the same with and without a TTY. `--fresh` first moves
 * a database that cannot be opened aside (init-fresh.ts), so that a new one is made.
 */
export async function init(options: GlobalOptions & { fresh?: boolean }): Promise<void> {
  const home = resolveHome();
  const moved = options.fresh ? await (await import("./init-fresh.js")).moveDatabaseAside(home) : [];
  const result = initHome(home);
  if (options.json) return printJson(options.fresh ? { ...result, moved } : result);
  const model = `${result.default_model.provider} / ${result.default_model.model}`;
  const lines: string[] = [];
  if (moved.length > 0) {
    lines.push(
      "Moved the unreadable database aside (nothing deleted; rename the files back to use it again):",
    );
    lines.push(...moved.map((m) => `  ${m.from} -> ${m.to}`));
  } else if (options.fresh) {
    lines.push(`No database in ${home}: nothing to move aside`);
  }
  if (result.created.length === 0) {
    lines.push(`Spar is already set up in ${home} (default model: ${model})`);
  } else {
    lines.push(
      `Set up Spar in ${home}`,
      ...result.created.map((f) => `  created ${f}`),
      `Default model: ${model}`,
    );
  }
  if (options.fresh || result.created.length > 0) lines.push("Next: spar start");
  process.stdout.write(`${lines.join("\n")}\n`);
}
