// The recall benchmark's figures. recall@5: one of the top 5 results holds the question's answer.
// Answer support: the top 5 hold the *current* answer and no result holding only a stale (replaced)
// answer ranks above the first that holds the current one; for a fact never updated it is recall@5.

export const TYPES = ["plain", "paraphrased", "updated", "compaction"];
export const K = 5;

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** True when `text` holds `answer` as whole words, in any case ("Ada" is not in "Adelaide"). */
export function holds(text, answer) {
  return new RegExp(`(?<![\\p{L}\\p{N}])${escapeRe(answer)}(?![\\p{L}\\p{N}])`, "iu").test(text);
}

/**
 * One question's outcome: `{ hit, supported, rank, staleShown }` (rank from 1, 0 when the answer is
 * not in the top k; staleShown when a result holding only a replaced answer is in the top k).
 */
export function scoreQuestion(results, question, k = K) {
  const top = results.slice(0, k);
  const current = top.findIndex((t) => holds(t, question.answer));
  const stale = top.findIndex(
    (t) => !holds(t, question.answer) && question.stale.some((old) => holds(t, old)),
  );
  const hit = current >= 0;
  return { hit, supported: hit && (stale < 0 || stale > current), rank: current + 1, staleShown: stale >= 0 };
}

/**
 * Rates over outcomes `[{ type, hit, supported, rank }]`: overall and by question type, each
 * `{ n, recall_at_5, answer_support, mrr, stale_shown }` (rates in [0, 1]; null when there is no
 * question). stale_shown: the share whose top k show a replaced answer at all (above the current one
 * or not), which the model then has to tell apart.
 */
export function aggregate(outcomes) {
  const rate = (list) => {
    const n = list.length;
    if (n === 0) return { n, recall_at_5: null, answer_support: null, mrr: null, stale_shown: null };
    const sum = (f) => list.reduce((a, o) => a + f(o), 0);
    return {
      n,
      recall_at_5: sum((o) => (o.hit ? 1 : 0)) / n,
      answer_support: sum((o) => (o.supported ? 1 : 0)) / n,
      mrr: sum((o) => (o.rank > 0 ? 1 / o.rank : 0)) / n,
      stale_shown: sum((o) => (o.staleShown ? 1 : 0)) / n,
    };
  };
  return {
    overall: rate(outcomes),
    by_type: Object.fromEntries(TYPES.map((t) => [t, rate(outcomes.filter((o) => o.type === t))])),
  };
}

/** "42.0%" (or "—" for a missing rate). */
export const pct = (x) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)}%`);
