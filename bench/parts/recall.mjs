// 10. Recall (issue 33): quality (bench/recall.mjs): recall@5 and answer support of each recall
// system on the same synthetic conversations, the old word match as the baseline; and speed
// (bench/recall/speed.mjs): memory_recall's code at 100,000 memories. No daemon, no network.
import { runRecallBench } from "../recall/harness.mjs";
import { pct } from "../recall/metrics.mjs";
import { recallSpeed } from "../recall/speed.mjs";
import { figure } from "../suite/report.mjs";

export async function recall({ users, turns, seed, memories }) {
  const report = await runRecallBench({ users, turns, seed });
  const speed = await recallSpeed({ memories });
  const old = report.systems.find((s) => s.name === "words-old");
  const rate = (s) =>
    `recall@5 ${pct(s.overall.recall_at_5)}, answer support ${pct(s.overall.answer_support)} (paraphrased ${pct(s.by_type.paraphrased.recall_at_5)}, updated ${pct(s.by_type.updated.answer_support)}, before compaction ${pct(s.by_type.compaction.recall_at_5)})`;
  const x = report.extractor;
  return {
    title: "10. Recall (quality: node bench/recall.mjs; speed: node bench/recall/speed.mjs)",
    notes: [
      `${report.questions} questions over ${report.sizes.users} users × ${report.sizes.turns} distractor turns (${report.messages} messages), seed ${report.seed}; embedder ${report.embedder}`,
      `hybrid systems: ${report.lab.implementation} (${report.lab.from})`,
      `flush extractor: ${x.true_facts} true and ${x.false_facts} false notes; caught ${x.caught} of ${x.folded_facts} folded facts`,
    ],
    figures: [
      ...report.systems
        .filter((s) => s.name !== "words-old")
        .map((s) =>
          figure({
            label: `${s.name} [${s.implementation}]`,
            measured: rate(s),
            baseline: `words-old ${rate(old)}`,
            goal: s.name === "bm25+embeddings+flush" ? "recall@5 above words-old" : "",
            met:
              s.name === "bm25+embeddings+flush"
                ? s.overall.recall_at_5 > old.overall.recall_at_5
                : undefined,
          }),
        ),
      figure({
        label: `memory_recall at ${speed.memories.toLocaleString("en")} memories, words + meaning (p50 / p95)`,
        measured: `${speed.hybrid.p50.toFixed(1)} / ${speed.hybrid.p95.toFixed(1)} ms`,
        baseline: `words only ${speed.words.p50.toFixed(1)} / ${speed.words.p95.toFixed(1)} ms; index load ${Math.round(speed.load_ms)} ms`,
        goal: "p95 < 50 ms",
        met: speed.hybrid.p95 < 50,
      }),
    ],
  };
}
