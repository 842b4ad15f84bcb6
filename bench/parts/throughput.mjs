// 3. Throughput: 64 concurrent clients over 1, 10, 100 and 1,000 minimal fighters, messages per
// second over several time-boxed rounds. Messages to one fighter run one at a time (in order), so
// 1 fighter measures one queue; more fighters let turns overlap. The baseline is the ceiling of
// this machine: the same clients calling the model server alone.
import { withSpar } from "../suite/daemon.mjs";
import { forDuration, pool } from "../suite/http.mjs";
import { callModel, startFakeModel } from "../suite/model.mjs";
import { figure } from "../suite/report.mjs";
import { BOUT_TURNS, spawnFighters, steadyMessage } from "../suite/spar-api.mjs";
import { median, medianSpread } from "../suite/stats.mjs";

export async function throughput({ fighterCounts, clients, roundMs, rounds, warmup }) {
  const llm = await startFakeModel();
  try {
    const alone = [];
    for (let r = 0; r < rounds; r++) {
      const round = await forDuration(roundMs, clients, () => callModel(llm.url));
      alone.push(round.done / (round.ms / 1000));
    }
    return await withSpar(llm.url, { load: true }, async (daemon) => {
      const most = Math.max(...fighterCounts);
      const spawned = await spawnFighters(daemon.api, "t-", most);
      const notes = [
        `${clients} concurrent clients (keep-alive node:http); per fighter count a warm-up of max(F, ${warmup}) messages touching every fighter, then ${rounds} rounds of ${roundMs / 1000} s each; msg/s = replies completed / round time`,
        `${most} minimal fighters spawned first (${(spawned.ms / 1000).toFixed(1)} s); message i goes to fighter i mod F; each fighter starts a new bout every ${BOUT_TURNS} messages`,
        `baseline: the same ${clients} clients calling the model server alone, ${rounds} rounds of ${roundMs / 1000} s`,
      ];
      const figures = [];
      let next = 0;
      for (const count of fighterCounts) {
        const names = spawned.names.slice(0, count);
        const send = (i) => steadyMessage(daemon.api, names, i, "load");
        const failures = [];
        const warm = Math.max(count, warmup);
        await pool(warm, clients, (i) => send(next + i).catch((err) => failures.push(String(err))));
        next += warm;
        const rates = [];
        for (let r = 0; r < rounds; r++) {
          const round = await forDuration(roundMs, clients, send, next);
          next = round.next;
          rates.push(round.done / (round.ms / 1000));
          failures.push(...round.failures);
        }
        if (failures.length) {
          notes.push(
            `${count} fighters: ${failures.length} messages FAILED (not counted), e.g. ${failures[0].slice(0, 200)}`,
          );
        }
        const goal = count === 100;
        figures.push(
          figure({
            label: `throughput, ${clients} clients over ${count} fighter${count === 1 ? "" : "s"}`,
            measured: medianSpread(rates, "msg/s"),
            baseline: `model server alone ${medianSpread(alone, "req/s")}`,
            goal: goal ? "≥ 2,000 msg/s" : "",
            met: goal ? median(rates) >= 2000 : undefined,
          }),
        );
      }
      return { title: "3. Throughput", notes, figures };
    });
  } finally {
    await llm.close();
  }
}
