// 5. RSS over 10,000 turns: a steady load over 100 minimal fighters; the daemon's VmRSS is sampled
// right after a warm-up of 1,000 turns (the baseline) and after every further 1,000 turns. Each
// sample then also asks the daemon's inspector (`--inspect=127.0.0.1:0`) for a full garbage
// collection and reads its live JavaScript heap and its RSS after that collection: what a leak grows,
// apart from garbage V8 has not collected yet and the heap it grew to hold it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { withSpar } from "../suite/daemon.mjs";
import { pool } from "../suite/http.mjs";
import { connectInspector } from "../suite/inspector.mjs";
import { startFakeModel } from "../suite/model.mjs";
import { residentParts } from "../suite/proc.mjs";
import { figure } from "../suite/report.mjs";
import { BOUT_TURNS, spawnFighters, steadyMessage } from "../suite/spar-api.mjs";
import { num } from "../suite/stats.mjs";

export async function soak({ warmup, turns, every, fighters, clients }) {
  const llm = await startFakeModel();
  try {
    const options = { load: true, nodeArgs: ["--inspect=127.0.0.1:0"] };
    return await withSpar(llm.url, options, async (daemon, data) => {
      const probe = await connectInspector(readFileSync(join(data.home, "bench-daemon.log"), "utf8"));
      const { names } = await spawnFighters(daemon.api, "soak-", fighters);
      const idle = daemon.rss();
      const heaps = [];
      const committed = [];
      const collected = [];
      const parts = [];
      const external = [];
      const sample = async () => {
        samples.push(daemon.rss());
        const heap = await probe.heap();
        heaps.push(heap.usedSize / 2 ** 20);
        committed.push(heap.totalSize / 2 ** 20);
        collected.push(daemon.rss());
        parts.push(residentParts(daemon.pid));
        external.push((await probe.usage()).external / 2 ** 20);
      };
      let next = 0;
      const failures = [];
      const run = async (count) => {
        const first = next;
        next += count;
        await pool(count, clients, (i) =>
          steadyMessage(daemon.api, names, first + i, "soak").catch((err) => failures.push(String(err))),
        );
      };
      await run(warmup);
      const samples = [];
      await sample();
      const started = performance.now();
      for (let done = 0; done < turns; done += every) {
        await run(every);
        await sample();
      }
      probe.close();
      const seconds = (performance.now() - started) / 1000;
      const first = samples[0];
      const last = samples.at(-1);
      const driftOf = (xs) => Math.max(...xs.map((x) => Math.abs(x - xs[0]) / xs[0]));
      const drift = driftOf(samples);
      const notes = [
        `${turns} turns (after ${warmup} warm-up) from ${clients} concurrent clients over ${fighters} minimal fighters, a new bout every ${BOUT_TURNS} messages per fighter; ${num(turns / seconds)} turns/s`,
        `VmRSS in MiB, idle before the warm-up ${num(idle, 1)}; after the warm-up, then every ${every} turns: ${samples.map((s) => num(s, 1)).join(", ")}`,
        `live JavaScript heap after a full collection, MiB: ${heaps.map((s) => num(s, 1)).join(", ")}`,
        `VmRSS right after that collection, MiB: ${collected.map((s) => num(s, 1)).join(", ")}`,
        `of which anonymous memory (JavaScript heap, malloc), MiB: ${parts.map((p) => num(p.anonymous, 1)).join(", ")}`,
        `of which mapped files (node, native modules, libraries, SQLite's WAL index), MiB: ${parts.map((p) => num(p.file, 1)).join(", ")}`,
        `memory outside the JavaScript heap that it holds (Buffers, ArrayBuffers: process.memoryUsage().external), MiB: ${external.map((s) => num(s, 1)).join(", ")}`,
        `JavaScript heap committed by V8 after the collection (live heap plus free space V8 keeps), MiB: ${committed.map((s) => num(s, 1)).join(", ")}`,
        "flat within ±10% means every sample within 10% of the first (the one right after the warm-up)",
        "the daemon runs with its inspector on a free loopback port for the collections; each collection also shrinks the heap the next VmRSS sample sees",
      ];
      if (failures.length) notes.push(`${failures.length} turns FAILED, e.g. ${failures[0].slice(0, 200)}`);
      return {
        title: "5. RSS over 10,000 turns",
        notes,
        figures: [
          figure({
            label: `RSS over ${turns.toLocaleString("en-US")} turns (first → last; min, max)`,
            measured: `${num(first, 1)} → ${num(last, 1)} MiB (min ${num(Math.min(...samples), 1)}, max ${num(Math.max(...samples), 1)}); largest change ${num(drift * 100, 1)}%`,
            baseline: `after the ${warmup}-turn warm-up ${num(first, 1)} MiB`,
            ratio: last / first,
            goal: "flat within ±10%",
            met: drift <= 0.1,
          }),
          figure({
            label: `live heap over ${turns.toLocaleString("en-US")} turns, after a full collection (first → last)`,
            measured: `${num(heaps[0], 1)} → ${num(heaps.at(-1), 1)} MiB (min ${num(Math.min(...heaps), 1)}, max ${num(Math.max(...heaps), 1)}); largest change ${num(driftOf(heaps) * 100, 1)}%`,
            baseline: `after the ${warmup}-turn warm-up ${num(heaps[0], 1)} MiB`,
            ratio: heaps.at(-1) / heaps[0],
            goal: "",
          }),
          figure({
            label: `RSS over ${turns.toLocaleString("en-US")} turns, after a full collection (first → last)`,
            measured: `${num(collected[0], 1)} → ${num(collected.at(-1), 1)} MiB (min ${num(Math.min(...collected), 1)}, max ${num(Math.max(...collected), 1)}); largest change ${num(driftOf(collected) * 100, 1)}%`,
            baseline: `after the ${warmup}-turn warm-up ${num(collected[0], 1)} MiB`,
            ratio: collected.at(-1) / collected[0],
            goal: "",
          }),
        ],
      };
    });
  } finally {
    await llm.close();
  }
}
