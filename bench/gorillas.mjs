// Gorillas at scale: N user gorillas (default 1,000) on a one-second schedule, all unleashed, each
// cycle a fresh bout against a model that answers at once (so what is measured is Spar):
//   node bench/gorillas.mjs [--gorillas N] [--seconds S]
// Reports, over S seconds of firing (default 60, after a 10 s warm-up):
// - fire jitter p50/p99/max: the run's started_at (recorded in the store) minus the fire time it
//   answers (gorilla.rampage.started carries both), for every cycle the schedule started;
// - what the fires became: cycles ok / failed, and fires skipped because the previous cycle of that
//   gorilla was still running (the overlap policy: a skipped fire is the daemon falling behind);
// - the daemon's RSS every 10 s of the window and at its end, and when idle with the gorillas loaded.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { WebSocket } from "ws";
import {
  fmt,
  isMain,
  percentile,
  pool,
  post,
  prepareHome,
  rssMiB,
  sleep,
  startDaemon,
  startMiniLlm,
  UNLIMITED_TOML,
} from "./lib.mjs";

const WARM_UP_S = 10;

function writeGorillas(home, count) {
  const names = [];
  for (let i = 0; i < count; i++) {
    const name = `g${String(i).padStart(4, "0")}`;
    names.push(name);
    mkdirSync(join(home, "gorillas", name), { recursive: true });
    writeFileSync(
      join(home, "gorillas", name, "GORILLA.toml"),
      [
        `name = "${name}"`,
        `description = "Bench gorilla ${i}."`,
        'schedule = "every 1s"',
        "moves = []",
        'system_prompt = "You are a bench gorilla. Answer in one word."',
        'task = "Say ok."',
        "",
      ].join("\n"),
    );
  }
  return names;
}

/** Collects gorilla events over the WebSocket. */
async function watch(url) {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/api/v1/ws`);
  const started = [];
  const completed = [];
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.kind === "gorilla.rampage.started") started.push(frame);
    else if (frame.kind === "gorilla.rampage.completed") completed.push(frame);
  });
  await new Promise((done, fail) => {
    ws.once("open", done);
    ws.once("error", fail);
  });
  ws.send(
    JSON.stringify({ type: "subscribe", kinds: ["gorilla.rampage.started", "gorilla.rampage.completed"] }),
  );
  return { started, completed, close: () => ws.close() };
}

async function countSkipped(url, names, since, until) {
  let skipped = 0;
  await pool(names.length, 32, async (i) => {
    const res = await fetch(`${url}/api/v1/gorillas/${names[i]}/runs?limit=500`);
    const { runs } = await res.json();
    skipped += runs.filter(
      (r) => r.outcome === "skipped" && r.started_at >= since && r.started_at < until,
    ).length;
  });
  return skipped;
}

export async function benchGorillas({ gorillas = 1000, seconds = 60 } = {}) {
  const llm = await startMiniLlm({ answer: "ok", record: false });
  const prepared = await prepareHome(llm.url, `${UNLIMITED_TOML}[gorillas]\ntimezone = "UTC"\n`);
  const names = writeGorillas(prepared.home, gorillas);
  const daemon = await startDaemon(llm.url, { existing: prepared });
  try {
    const listed = await (await fetch(`${daemon.url}/api/v1/gorillas`)).json();
    const loaded = listed.gorillas.filter((g) => names.includes(g.name)).length;
    if (loaded !== gorillas)
      throw new Error(`${loaded} of ${gorillas} gorillas loaded: ${JSON.stringify(listed.problems[0])}`);
    const idleRss = await rssMiB(daemon.pid);

    let t = performance.now();
    await pool(names.length, 32, (i) => post(`${daemon.url}/api/v1/gorillas/${names[i]}/unleash`, {}));
    const unleashMs = performance.now() - t;

    // The first cycle of each gorilla spawns its fighter: left out of the measured window.
    await sleep(WARM_UP_S * 1000);
    const events = await watch(daemon.url);
    const since = new Date().toISOString();
    t = performance.now();
    const samples = [];
    for (let left = seconds; left > 0; left -= 10) {
      await sleep(Math.min(10, left) * 1000);
      samples.push(await rssMiB(daemon.pid));
    }
    const windowMs = performance.now() - t;
    const rss = samples.at(-1);
    events.close();
    const until = new Date().toISOString();

    const jitter = events.started
      .filter((e) => e.scheduled_at && e.scheduled_at >= since && e.scheduled_at < until)
      .map((e) => Date.parse(e.started_at) - Date.parse(e.scheduled_at));
    const outcomes = {};
    for (const e of events.completed) outcomes[e.outcome] = (outcomes[e.outcome] ?? 0) + 1;
    const skipped = await countSkipped(daemon.url, names, since, until);
    const expectedFires = Math.round((gorillas * windowMs) / 1000);
    return {
      gorillas,
      seconds,
      unleashMs,
      cycles: jitter.length,
      expectedFires,
      skipped,
      outcomes,
      llmCalls: llm.calls,
      jitter: {
        p50: percentile(jitter, 50),
        p99: percentile(jitter, 99),
        max: Math.max(...jitter),
      },
      idleRss,
      rss,
      samples,
    };
  } finally {
    await daemon.stop();
    llm.close();
  }
}

if (isMain(import.meta)) {
  const { values } = parseArgs({
    options: { gorillas: { type: "string", default: "1000" }, seconds: { type: "string", default: "60" } },
  });
  const r = await benchGorillas({ gorillas: Number(values.gorillas), seconds: Number(values.seconds) });
  const lines = [
    `${r.gorillas} gorillas on "every 1s", unleashed (all unleashed in ${fmt(r.unleashMs, "ms", 0)}), ${r.seconds} s measured after a ${WARM_UP_S} s warm-up`,
    `fires in the window        ~${r.expectedFires}`,
    `cycles started             ${r.cycles} (completed: ${Object.entries(r.outcomes)
      .map(([k, v]) => `${v} ${k}`)
      .join(", ")})`,
    `fires skipped (overlap)    ${r.skipped}`,
    `fire jitter (started_at - fire time)  p50 ${fmt(r.jitter.p50, "ms", 0)}  p99 ${fmt(r.jitter.p99, "ms", 0)}  max ${fmt(r.jitter.max, "ms", 0)}`,
    `cycles per second          ${(r.cycles / r.seconds).toFixed(0)}`,
    `daemon RSS                 ${fmt(r.idleRss, "MiB")} idle with the gorillas loaded, ${fmt(r.rss, "MiB")} after ${r.seconds} s of firing`,
    `RSS every 10 s (MiB)       ${r.samples.map((x) => x.toFixed(0)).join(", ")}`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}
