// What a daemon log entry costs the thread that writes it (the message path's), after `npm run build`:
//   node bench/log-write.mjs [--entries N] [--rounds N]
// Compares, in interleaved rounds: the JSON log to a file (lib/log-file.ts: pino, redaction, the
// environment's secrets scrubbed, batched into rotating-file-stream) beside the line logger that was
// the daemon's only log before (lib/logger.ts, its write discarded, so only its formatting counts).
// Each round logs N request-shaped entries, one event-loop turn apart in groups of 8 (as requests
// come), and reports the time on the calling thread per entry; the file's writes happen off it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { entries: { type: "string", default: "20000" }, rounds: { type: "string", default: "7" } },
});
const N = Number(values.entries);
const dist = new URL("../dist/lib/", import.meta.url);
const { createDaemonLog, secretValues } = await import(new URL("log-file.js", dist).href);
const { createLogger } = await import(new URL("logger.js", dist).href);

const fields = (i) => ({
  req_id: `33b29d3c-5ef2-43b4-8c69-${String(i).padStart(12, "0")}`,
  method: "POST",
  path: "/api/v1/fighters/spar/message",
  status: 200,
  ms: 8.3,
  peer: "127.0.0.1",
  key: "cli",
});
const secrets = secretValues({
  OPENAI_API_KEY: "sk-bench-0123456789abcdef",
  SPAR_MASTER_KEY: "k".repeat(64),
});

/** Nanoseconds on the calling thread per entry (the event-loop turns between groups not counted). */
async function round(log) {
  let spent = 0n;
  for (let i = 0; i < N; i += 8) {
    const t = process.hrtime.bigint();
    for (let j = i; j < i + 8 && j < N; j++) log.info("request", fields(j));
    spent += process.hrtime.bigint() - t;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return Number(spent) / N;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = { file: [], line: [] };
const home = mkdtempSync(join(tmpdir(), "spar-bench-log-"));
try {
  for (let r = 0; r < Number(values.rounds); r++) {
    const file = createDaemonLog(home, { secrets, echo: false });
    results.file.push(await round(file));
    await file.close();
    results.line.push(await round(createLogger(() => true)));
  }
} finally {
  rmSync(home, { recursive: true, force: true });
}
const us = (ns) => `${(ns / 1000).toFixed(2)} µs`;
console.log(`node ${process.version}; ${N} entries a round, median of ${values.rounds} rounds, interleaved`);
console.log(
  `JSON to logs/spar.log (pino + redact + scrub + rotating-file-stream): ${us(median(results.file))} per entry`,
);
console.log(
  `readable line formatted (lib/logger.ts, write discarded):            ${us(median(results.line))} per entry`,
);
