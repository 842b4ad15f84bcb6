import { resolveHome } from "../../lib/home.js";
import { type GlobalOptions, printJson } from "../output.js";
import { initHome } from "./init-home.js";

/** `spar init`: never interactive, so it works the same with and without a TTY. */
export async function init(options: GlobalOptions): Promise<void> {
  const result = initHome(resolveHome());
  if (options.json) return printJson(result);
  const model = `${result.default_model.provider} / ${result.default_model.model}`;
  if (result.created.length === 0) {
    process.stdout.write(`Spar is already set up in ${result.home}\n`);
    return;
  }
  process.stdout.write(
    `Set up Spar in ${result.home}\n` +
      result.created.map((f) => `  created ${f}\n`).join("") +
      `Default model: ${model}\n` +
      "Next: spar start\n",
  );
}
