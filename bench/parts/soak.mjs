// 5. RSS over 10,000 turns: a steady load over 100 minimal fighters; the daemon's VmRSS is sampled
// right after a warm-up of 1,000 turns (the baseline) and after every further 1,000 turns.
import { withSpar } from "../suite/daemon.mjs";
import { pool } from "../suite/http.mjs";
import { startFakeModel } from "../suite/model.mjs";
import { figure } from "../suite/report.mjs";
import { BOUT_TURNS, spawnFighters, steadyMessage } from "../suite/spar-api.mjs";
import { num } from "../suite/stats.mjs";

export async function soak({ warmup, turns, every, fighters, clients }) {
  const llm = await startFakeModel();
  try {
    return await withSpar(llm.url, { load: true }, async (daemon) => {
      const { names } = await spawnFighters(daemon.api, "soak-", fighters);
      const idle = daemon.rss();
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
      const samples = [daemon.rss()];
      const started = performance.now();
      for (let done = 0; done < turns; done += every) {
        await run(every);
        samples.push(daemon.rss());
      }
      const seconds = (performance.now() - started) / 1000;
      const first = samples[0];
      const last = samples.at(-1);
      const drift = Math.max(...samples.map((s) => Math.abs(s - first) / first));
      const notes = [
        `${turns} turns (after ${warmup} warm-up) from ${clients} concurrent clients over ${fighters} minimal fighters, a new bout every ${BOUT_TURNS} messages per fighter; ${num(turns / seconds)} turns/s`,
        `VmRSS in MiB, idle before the warm-up ${num(idle, 1)}; after the warm-up, then every ${every} turns: ${samples.map((s) => num(s, 1)).join(", ")}`,
        "flat within ±10% means every sample within 10% of the first (the one right after the warm-up)",
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
        ],
      };
    });
  } finally {
    await llm.close();
  }
}
