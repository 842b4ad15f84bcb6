// Recall quality (issue 33): synthetic long conversations (facts stated once among hundreds of
// distractor turns, paraphrased questions, updated facts, facts before a compaction) asked of each
// recall system in the same run — the old word match, BM25, BM25 + embeddings, with and without the
// compaction flush — reporting recall@5 and answer-support rate by question type. No daemon and
// no network (unless a real embedding model is asked for); bench/recall/ holds the pieces.
//
//   node bench/recall.mjs [--users N] [--turns N] [--seed N] [--json]
//     [--embeddings openai:MODEL [--embeddings-url URL] [--embeddings-key-env NAME]]
import { parseArgs } from "node:util";
import { isMain } from "./lib.mjs";
import { runRecallBench } from "./recall/harness.mjs";
import { pct, TYPES } from "./recall/metrics.mjs";
import { openaiEmbedder, parseEmbeddingsFlag } from "./recall/openai-embedder.mjs";

const USAGE =
  "node bench/recall.mjs [--users N] [--turns N] [--seed N] [--json] [--embeddings openai:MODEL] [--embeddings-url URL] [--embeddings-key-env NAME]";

function wholeNumber(name, text, min) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new Error(`recall bench: --${name} wants a whole number ≥ ${min}, not "${text}"`);
  return n;
}

/** The report as a plain table: one row per system, recall@5 / answer support overall and by type. */
export function recallTable(report) {
  const lines = [
    `recall@5 / answer support over ${report.questions} questions (${report.sizes.users} users × ${report.sizes.turns} distractor turns, ${report.messages} messages, seed ${report.seed})`,
    `embedder: ${report.embedder}; hybrid recall: ${report.lab.implementation} (${report.lab.from})`,
  ];
  const head = ["system", "impl", "all", ...TYPES, "ms"];
  const cells = report.systems.map((s) => [
    s.name,
    s.implementation.split(" ")[0],
    `${pct(s.overall.recall_at_5)} / ${pct(s.overall.answer_support)}`,
    ...TYPES.map((t) => `${pct(s.by_type[t].recall_at_5)} / ${pct(s.by_type[t].answer_support)}`),
    String(s.ms),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((x, i) => x.padEnd(widths[i])).join("  ");
  lines.push(line(head), line(widths.map((w) => "-".repeat(w))), ...cells.map(line));
  lines.push(
    `a replaced answer in the top 5 of updated questions: ${report.systems.map((s) => `${s.name} ${pct(s.by_type.updated.stale_shown)}`).join(", ")}`,
  );
  const n = TYPES.map((t) => `${t} ${report.systems[0]?.by_type[t].n ?? 0}`).join(", ");
  lines.push(`questions by type: ${n}`);
  const x = report.extractor;
  lines.push(
    `flush extractor: ${x.notes} notes from the folded messages, ${x.true_facts} true facts, ${x.false_facts} false ones; caught ${x.caught} of the ${x.folded_facts} facts stated there`,
  );
  return lines.join("\n");
}

export async function main(argv = process.argv.slice(2)) {
  const { values } = parseArgs({
    args: argv,
    options: {
      users: { type: "string" },
      turns: { type: "string" },
      seed: { type: "string" },
      json: { type: "boolean", default: false },
      embeddings: { type: "string" },
      "embeddings-url": { type: "string" },
      "embeddings-key-env": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const options = {};
  if (values.users !== undefined) options.users = wholeNumber("users", values.users, 1);
  if (values.turns !== undefined) options.turns = wholeNumber("turns", values.turns, 4);
  if (values.seed !== undefined) options.seed = wholeNumber("seed", values.seed, 0);
  if (values.embeddings !== undefined || values["embeddings-url"] !== undefined) {
    options.embedder = await openaiEmbedder({
      model: parseEmbeddingsFlag(values.embeddings ?? "openai:text-embedding-3-small"),
      baseURL: values["embeddings-url"],
      keyEnv: values["embeddings-key-env"],
    });
  }
  const report = await runRecallBench(options);
  console.log(values.json ? JSON.stringify(report, null, 2) : recallTable(report));
}

if (isMain(import.meta)) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  });
}
