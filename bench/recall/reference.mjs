// REFERENCE ONLY: a small in-bench hybrid recall (BM25 + cosine + reciprocal rank fusion + decay,
// and the compaction flush) in the shape of the lab the moves-memory plugin is to provide
// (`createRecallLab` in dist/plugins/moves-memory/). It exists so the benchmark's four hybrid
// systems have figures before that module lands; the harness uses the plugin's module instead as
// soon as it is there, and every figure measured with this one is labelled "reference".
//
// What it does: memories (stored by the model, or flushed at compaction; one per key, a new value
// replaces the old) and every message's text (kept after compaction: past conversations stay
// searchable) are one corpus; a query ranks it by BM25 over words (no stemming, like FTS5's default
// tokenizer; the query's stopwords and one-letter words dropped, as the SDK's query words do) and, with an embedder, by
// cosine similarity; the two top-50 lists are fused by RRF (k = 60) and each result's fused score
// is weighted by its recency, 0.5 + 0.5 · e^(−rate · days): half of the decay, since RRF scores lie
// close together and the full decay would let any recent passage outrank the best old match.
import { cosine } from "./concepts.mjs";

const STOPWORDS = new Set(
  "a an and are as at be by do does for from how i in is it me my of on or that the this to was what when where which who why with you your".split(
    " ",
  ),
);
const DAY_MS = 86_400_000;
const LIST = 50;
const RRF_K = 60;

const tokens = (text) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** BM25 (k1 1.2, b 0.75) of each doc that holds a query term; the best `LIST`, as doc indexes. */
function bm25(docs, query) {
  const terms = [...new Set(tokens(query).filter((t) => t.length >= 2 && !STOPWORDS.has(t)))];
  if (terms.length === 0) return [];
  const tf = docs.map((d) => {
    const counts = new Map();
    for (const t of tokens(d.text)) counts.set(t, (counts.get(t) ?? 0) + 1);
    return counts;
  });
  const lengths = tf.map((c) => [...c.values()].reduce((a, b) => a + b, 0));
  const avg = lengths.reduce((a, b) => a + b, 0) / Math.max(1, docs.length);
  const idf = new Map(
    terms.map((term) => {
      const n = tf.filter((c) => c.has(term)).length;
      return [term, Math.log(1 + (docs.length - n + 0.5) / (n + 0.5))];
    }),
  );
  const scored = [];
  for (let i = 0; i < docs.length; i++) {
    let score = 0;
    for (const term of terms) {
      const f = tf[i].get(term);
      if (!f) continue;
      score += ((idf.get(term) ?? 0) * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * lengths[i]) / avg));
    }
    if (score > 0) scored.push({ i, score });
  }
  return scored
    .sort((a, b) => b.score - a.score)
    .slice(0, LIST)
    .map((s) => s.i);
}

/**
 * A reference lab. `embedder` `{model, embed(texts, purpose)}` adds the cosine list; `flush`
 * `(transcript) => Promise<{key, value}[]>` runs at each compaction over the folded messages;
 * `now()` is the bench's clock in ms; `recencyShare` how much of the fused score the decay weighs
 * (1: multiplied by the decay outright).
 */
export function createReferenceLab({ embedder, flush, now, ratePerDay = 0.05, recencyShare = 0.5 }) {
  const memories = new Map();
  const messages = [];
  const compactedThrough = new Map();
  const vectors = new Map();

  async function embedAll(texts, purpose) {
    const missing = [...new Set(texts.filter((t) => !vectors.has(`${purpose}\n${t}`)))];
    for (let i = 0; i < missing.length; i += 96) {
      const batch = missing.slice(i, i + 96);
      const out = await embedder.embed(batch, purpose);
      batch.forEach((t, j) => {
        vectors.set(`${purpose}\n${t}`, out[j]);
      });
    }
    return texts.map((t) => vectors.get(`${purpose}\n${t}`));
  }

  const lab = {
    async storeMemory(key, value) {
      memories.delete(key);
      memories.set(key, { text: `${key}: ${value}`, at: now() });
    },
    async addMessage({ bout, role, text, at }) {
      messages.push({ bout, role, text, at: Date.parse(at) });
    },
    async compact(bout, throughSeq) {
      const from = compactedThrough.get(bout) ?? 0;
      compactedThrough.set(bout, throughSeq);
      if (!flush) return;
      const folded = messages.filter((m) => m.bout === bout).slice(from, throughSeq);
      const transcript = `New messages:\n${folded.map((m) => `${m.role === "user" ? "User" : "Assistant"}: ${m.text}`).join("\n")}`;
      for (const { key, value } of await flush(transcript)) await lab.storeMemory(key, value);
    },
    async recall(query, k) {
      const docs = [...memories.values(), ...messages];
      const lists = [bm25(docs, query)];
      if (embedder) {
        const [q] = await embedAll([query], "query");
        const vs = await embedAll(
          docs.map((d) => d.text),
          "document",
        );
        lists.push(
          vs
            .map((v, i) => ({ i, s: cosine(q, v) }))
            .sort((a, b) => b.s - a.s)
            .slice(0, LIST)
            .map((x) => x.i),
        );
      }
      const fused = new Map();
      for (const list of lists) {
        list.forEach((i, rank) => {
          fused.set(i, (fused.get(i) ?? 0) + 1 / (RRF_K + rank + 1));
        });
      }
      const clock = now();
      const seen = new Set();
      const out = [];
      const ranked = [...fused]
        .map(([i, s]) => ({
          text: docs[i].text,
          s:
            s *
            (1 -
              recencyShare +
              recencyShare * Math.exp((-ratePerDay * Math.max(0, clock - docs[i].at)) / DAY_MS)),
        }))
        .sort((a, b) => b.s - a.s);
      for (const r of ranked) {
        if (seen.has(r.text)) continue;
        seen.add(r.text);
        out.push(r.text);
        if (out.length === k) break;
      }
      return out;
    },
  };
  return lab;
}
