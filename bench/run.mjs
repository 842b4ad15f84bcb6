// npm run bench [-- part …] [--profile] [--write] [--messages N]
// Runs the benchmarks of the built daemon (npm run build first) against a fake model server, prints
// each figure beside its baseline and writes bench/RESULTS.md (after a run of every part, or with
// --write). Parts: startup overhead observability throughput ws soak listing prompt sandbox skills recall; opt-in:
// openclaw (BENCH_OPENCLAW=1) and profile (also --profile).
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { listing } from "./parts/listing.mjs";
import { observability } from "./parts/observability.mjs";
import { openclaw } from "./parts/openclaw.mjs";
import { overhead } from "./parts/overhead.mjs";
import { profile } from "./parts/profile.mjs";
import { prompt } from "./parts/prompt.mjs";
import { recall } from "./parts/recall.mjs";
import { sandbox } from "./parts/sandbox.mjs";
import { skills } from "./parts/skills.mjs";
import { soak } from "./parts/soak.mjs";
import { startup } from "./parts/startup.mjs";
import { throughput } from "./parts/throughput.mjs";
import { ws } from "./parts/ws-latency.mjs";
import { ROOT } from "./suite/daemon.mjs";
import { machine } from "./suite/machine.mjs";
import { printPart, writeReport } from "./suite/report.mjs";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    profile: { type: "boolean", default: false },
    write: { type: "boolean", default: false },
    messages: { type: "string", default: "500" },
    help: { type: "boolean", short: "h", default: false },
  },
});

/** Each part, what it is given, and how much it runs (said in the output and the report). */
const counts = {
  startup: { runs: 7, cliRuns: 15 },
  overhead: { messages: Number(values.messages), warmup: 50 },
  observability: { messages: Number(values.messages), warmup: 50 },
  throughput: { fighterCounts: [1, 10, 100, 1000], clients: 64, roundMs: 3000, rounds: 5, warmup: 200 },
  ws: { turns: 120, warmup: 10, chunks: 20, gapMs: 2 },
  soak: { warmup: 1000, turns: 10_000, every: 1000, fighters: 100, clients: 16 },
  listing: { fighters: 10_000, gets: 9 },
  prompt: {},
  sandbox: { runs: 100 },
  skills: { passes: 5 },
  openclaw: { runs: 5, turns: 30 },
  recall: { users: 4, turns: 300, seed: 1, memories: 100_000 },
  profile: { burst: 3000, fighters: 100, clients: 64 },
};
const parts = {
  startup,
  overhead,
  observability,
  throughput,
  ws,
  soak,
  listing,
  prompt,
  sandbox,
  skills,
  openclaw,
  profile,
  recall,
};
const DEFAULT_PARTS = [
  "startup",
  "overhead",
  "observability",
  "throughput",
  "ws",
  "soak",
  "listing",
  "prompt",
  "sandbox",
  "skills",
  "recall",
];

if (values.help) {
  console.log(
    `npm run bench [-- part …] [--profile] [--write] [--messages N]\nparts: ${Object.keys(parts).join(", ")}`,
  );
  process.exit(0);
}
if (!(Number.isInteger(counts.overhead.messages) && counts.overhead.messages > 0)) {
  console.error(`bench: --messages wants a positive whole number, not "${values.messages}"`);
  process.exit(1);
}
const unknown = positionals.filter((p) => !(p in parts));
if (unknown.length) {
  console.error(`bench: unknown part ${unknown.join(", ")}; parts: ${Object.keys(parts).join(", ")}`);
  process.exit(1);
}
if (!existsSync(join(ROOT, "dist", "cli", "index.js"))) {
  console.error("bench: dist/ is missing: run npm run build first");
  process.exit(1);
}

let chosen = positionals.length ? [...new Set(positionals)] : values.profile ? [] : DEFAULT_PARTS;
if (values.profile && !chosen.includes("profile")) chosen = [...chosen, "profile"];
const full = positionals.length === 0 && !values.profile;

const info = machine();
console.log(
  `Spar benchmarks: ${info.cpu}, ${info.cores} cores, ${info.memory}, node ${info.node}, ${info.checkout}, ${info.date}, load ${info.load}`,
);
console.log(`parts: ${chosen.join(", ")}`);
const results = [];
const started = performance.now();
for (const name of chosen) {
  const t = performance.now();
  try {
    const part = await parts[name](counts[name]);
    part.notes = [...(part.notes ?? []), `(${((performance.now() - t) / 1000).toFixed(0)} s)`];
    printPart(part);
    results.push(part);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // The whole message (a daemon's log tail …) on stderr; its first two lines in the report.
    console.error(message);
    const failed = {
      title: `${name}: FAILED`,
      failed: true,
      notes: [
        `the part failed and measured nothing: ${message.split("\n").filter(Boolean).slice(0, 2).join(" ")}`,
      ],
      figures: [],
    };
    printPart(failed);
    results.push(failed);
    process.exitCode = 1;
  }
}
info.loadAtEnd = loadavg()[0].toFixed(2);
console.log(
  `\ntotal ${((performance.now() - started) / 1000).toFixed(0)} s; load average ${info.load} at the start, ${info.loadAtEnd} at the end`,
);

const countsText = chosen.map((name) => `${name} ${JSON.stringify(counts[name])}`).join("; ");
const measuredSomething = results.some((p) => p.figures.length > 0);
if (chosen.includes("openclaw") && measuredSomething) {
  const file = join(import.meta.dirname, "RESULTS-openclaw.md");
  writeReport(file, {
    machine: info,
    parts: results,
    command: "npm run bench -- openclaw",
    counts: countsText,
  });
  console.log(`wrote ${file}`);
} else if ((full || values.write) && measuredSomething) {
  const file = join(import.meta.dirname, "RESULTS.md");
  const command = full ? "npm run bench" : `npm run bench -- ${process.argv.slice(2).join(" ")}`;
  writeReport(file, { machine: info, parts: results, command, counts: countsText });
  console.log(`wrote ${file}`);
} else if (!chosen.includes("profile")) {
  console.log("bench/RESULTS.md not rewritten (a partial run; add --write to write it)");
}
