// The import cost of each provider plugin: what the first message to a fighter on that provider
// pays once, since a plugin's code is only imported on its first activation. Each plugin is imported
// in a fresh process (module caches would hide the cost), after `npm run build`:
//   node bench/provider-import.mjs [runs]
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const runs = Number(process.argv[2] ?? 7);
const root = join(import.meta.dirname, "..");
const plugins = [
  "provider-ollama",
  "provider-openai",
  "provider-openrouter",
  "provider-anthropic",
  "provider-google",
];

// The kernel's SDK surface is already loaded in a running daemon: import it first, outside the timing.
const sdk = pathToFileURL(join(root, "dist", "kernel", "sdk.js")).href;

function once(plugin) {
  const entry = pathToFileURL(join(root, "dist", "plugins", plugin, "index.js")).href;
  const code = `await import(${JSON.stringify(sdk)}); const t = performance.now(); await import(${JSON.stringify(entry)}); process.stdout.write(String(performance.now() - t));`;
  return Number(execFileSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" }));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

console.log(`node ${process.version}, ${runs} fresh processes per plugin\n`);
for (const plugin of plugins) {
  const times = Array.from({ length: runs }, () => once(plugin));
  console.log(
    `${plugin.padEnd(22)} import median ${median(times).toFixed(0).padStart(4)} ms (min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)})`,
  );
}
