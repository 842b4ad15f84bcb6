// 2. Per-message overhead: one client sends N sequential messages into one bout of a minimal fighter
// (the bout grows, as real ones do); each is paired with the same client's round trip to the model
// server alone, interleaved. Overhead = the daemon's percentile minus the model's percentile.
import { LOAD_SUMMARY, withSpar } from "../suite/daemon.mjs";
import { timed } from "../suite/http.mjs";
import { callModel, startFakeModel } from "../suite/model.mjs";
import { figure } from "../suite/report.mjs";
import { message, spawnFighters } from "../suite/spar-api.mjs";
import { num, p50p99, percentile } from "../suite/stats.mjs";

/**
 * BENCH_BUDGET=1: with a global budget (money and tokens, daily and monthly) that never runs out, so
 * every model call reserves and settles on four budget lines (README "Budgets").
 */
const BUDGET_TOML =
  "\n[budgets.global]\ndaily = 100000\nmonthly = 100000\ndaily_tokens = 1000000000\nmonthly_tokens = 1000000000\n";

export async function overhead({ messages, warmup }) {
  const budget = process.env.BENCH_BUDGET === "1";
  const llm = await startFakeModel();
  try {
    return await withSpar(llm.url, { load: true, extraToml: budget ? BUDGET_TOML : "" }, async (daemon) => {
      await spawnFighters(daemon.api, "bench-", 1);
      await spawnFighters(daemon.api, "warm-", 1);
      await timed(warmup, (i) =>
        Promise.all([callModel(llm.url), message(daemon.api, "warm-0", `warm ${i}`)]),
      );
      const model = [];
      const spar = [];
      for (let i = 0; i < messages; i++) {
        model.push(...(await timed(1, () => callModel(llm.url))));
        spar.push(...(await timed(1, () => message(daemon.api, "bench-0", `message ${i}`))));
      }
      const p50 = percentile(spar, 50) - percentile(model, 50);
      const p99 = percentile(spar, 99) - percentile(model, 99);
      return {
        title: "2. Per-message overhead",
        notes: [
          `${messages} sequential messages from one client into one bout of a minimal fighter ("Be brief.", no tools), after ${warmup} warm-up messages to another fighter`,
          "each message is paired with a streamed call of the model server alone by the same client (keep-alive node:http), interleaved",
          `round trip through Spar ${p50p99(spar)}; model server alone ${p50p99(model)}`,
          "overhead pN = Spar's pN round trip minus the model's pN round trip; limits raised as for throughput",
          `limits raised: ${LOAD_SUMMARY}`,
          budget
            ? "BENCH_BUDGET=1: a global budget (daily and monthly, money and tokens) every call reserves and settles against"
            : "no budget configured (BENCH_BUDGET=1 adds one every call reserves against)",
        ],
        figures: [
          figure({
            label: "per-message overhead p50",
            measured: `${num(p50, 2)} ms`,
            baseline: `model alone p50 ${num(percentile(model, 50), 2)} ms; Spar p50 ${num(percentile(spar, 50), 2)} ms`,
            goal: "≤ 2 ms",
            met: p50 <= 2,
          }),
          figure({
            label: "per-message overhead p99",
            measured: `${num(p99, 2)} ms`,
            baseline: `model alone p99 ${num(percentile(model, 99), 2)} ms; Spar p99 ${num(percentile(spar, 99), 2)} ms`,
            goal: "≤ 10 ms",
            met: p99 <= 10,
          }),
        ],
      };
    });
  } finally {
    await llm.close();
  }
}
