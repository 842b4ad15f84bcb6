// The import cost of each provider plugin: what the first message to a fighter on that provider
// pays once, since a plugin's code is only imported on its first activation. Each plugin is imported
// in a fresh process (module caches would hide the cost), after `npm run build`:
//   node bench/provider-import.mjs [runs]
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { fmtSpread, isMain, printRows, ROOT, row, spread } from "./lib.mjs";

const root = ROOT;
const plugins = ["provider-ollama", "provider-openai", "provider-anthropic", "provider-google"];

// The kernel's SDK surface is already loaded in a running daemon: import it first, outside the timing.
const sdk = pathToFileURL(join(root, "dist", "sdk", "index.js")).href;

function once(plugin) {
  const entry = pathToFileURL(join(root, "dist", "plugins", plugin, "index.js")).href;
  const code = `await import(${JSON.stringify(sdk)}); const t = performance.now(); await import(${JSON.stringify(entry)}); process.stdout.write(String(performance.now() - t));`;
  return Number(execFileSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" }));
}

export async function providerImport({ runs = 7 } = {}) {
  return plugins.map((plugin) => {
    const times = Array.from({ length: runs }, () => once(plugin));
    return row(`import of ${plugin} on first use`, fmtSpread(spread(times), "ms"), "—", {
      note: plugin === plugins[0] ? `median (min–max) of ${runs} fresh processes each` : undefined,
    });
  });
}

if (isMain(import.meta)) {
  console.log(`node ${process.version}\n`);
  printRows(await providerImport({ runs: Number(process.argv[2] ?? 7) }));
}
