// Recall speed at scale (issue 33): one fighter with N memories (default 100,000) in a real encrypted
// SQLite store, their words drawn from a Zipf distribution over 20,000 words (as natural text's
// are: a few words in every memory, most in few), each with a 256-dimension vector of the bench's
// concept embedder, then memory_recall's
// code (recallMemories: the FTS5 word rank, the vector index, fusion, diversity; the reinforcement's
// write runs on, as in the daemon, and is awaited between recalls, untimed) timed over varied queries: words only, and words + meaning. The query's own embedding is
// the in-process embedder, so the figure is Spar's work, not a provider's round trip.
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isMain, percentile } from "../lib.mjs";
import { conceptEmbedder } from "./concepts.mjs";
import { OTHERS } from "./distractors.mjs";
import { prng } from "./generator.mjs";

const DIST = join(import.meta.dirname, "..", "..", "dist");
const load = (path) => import(join(DIST, path));
const DECAY = Object.freeze({ rate_per_day: 0.05, reinforce_on_access: 0.2, forget_below: 0.05 });
const SECRET = Buffer.from("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
const quiet = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };
const SYLLABLES = "ka lo mi ne ru sa ti vo pe da fi gu ho ja ke li mo nu ri so".split(" ");

/** A vocabulary of `size` made-up words and a Zipf (s = 1) sampler over it. */
function zipf(rng, size) {
  const vocabulary = Array.from({ length: size }, (_, i) => {
    let word = "";
    for (let n = i + 7; word.length < 4 || n > 0; n = Math.floor(n / SYLLABLES.length))
      word += SYLLABLES[n % SYLLABLES.length];
    return word;
  });
  const cumulative = [];
  let total = 0;
  for (let r = 1; r <= size; r++) {
    total += 1 / r;
    cumulative.push(total);
  }
  return {
    vocabulary,
    /** A word by frequency; past `skip` the most common ones (a query's words are not stopwords). */
    pick(skip = 0) {
      return this.draw(skip > 0 ? cumulative[skip - 1] : 0);
    },
    draw(from) {
      const x = from + rng() * (total - from);
      let lo = 0;
      let hi = size - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cumulative[mid] < x) lo = mid + 1;
        else hi = mid;
      }
      return vocabulary[lo];
    },
  };
}

/** The most common words of the corpus stand for its stopwords: a query's words are past them. */
const COMMON = 100;

const QUERIES = [
  "where does my sister live",
  "what can't I eat",
  "when is the birthday party",
  "which router should I move closer to",
  "what did we decide about the trip",
  "who is my dentist",
  "favourite instrument",
  "what time does the gym open",
];

/** `{ memories, load_ms, words: {p50, p95}, hybrid: {p50, p95}, index_mib }` over `queries` recalls each. */
export async function recallSpeed({ memories: count = 100_000, queries = 200 } = {}) {
  const [{ openSqliteStore }, { createPluginData }, memoriesMod, embeddingsMod, recallMod, vectorMod] =
    await Promise.all([
      load("plugins/store-sqlite/store.js"),
      load("sdk/collection-engine.js"),
      load("plugins/moves-memory/memories.js"),
      load("lib/recall/embeddings.js"),
      load("plugins/moves-memory/recall.js"),
      load("lib/recall/vector-index.js"),
    ]);
  const manifest = JSON.parse(readFileSync(join(DIST, "plugins", "moves-memory", "plugin.json"), "utf8"));
  const home = mkdtempSync(join(tmpdir(), "spar-recall-speed-"));
  const store = await openSqliteStore({ home, masterSecret: SECRET });
  try {
    const embedder = conceptEmbedder(256);
    const at = new Date().toISOString();
    const fighter = {
      id: randomUUID(),
      name: "keeper",
      manifest: { name: "keeper", description: "", system_prompt: "." },
      created_at: at,
    };
    await store.fighters.insert(fighter);
    const data = createPluginData({
      plugin: manifest.id,
      data: manifest.data,
      store: () => store.collections,
    });
    const config = { provider: "bench", model: "concepts-256" };
    const model = embeddingsMod.modelKey(config);
    const rng = prng(7);
    const words = zipf(rng, 20_000);
    const sentence = (n) => Array.from({ length: n }, () => words.pick()).join(" ");
    for (let i = 0; i < count; i += 1000) {
      const batch = [];
      for (let j = i; j < Math.min(count, i + 1000); j++) {
        const who = OTHERS.name[j % OTHERS.name.length];
        batch.push({ id: randomUUID(), key: `note_${j}`, value: `${who} ${sentence(8 + (j % 7))}` });
      }
      const vectors = await embedder.embed(
        batch.map((m) => `${m.key}: ${m.value}`),
        "document",
      );
      await data.transaction(async (tx) => {
        batch.forEach((m, k) => {
          tx.memories.put({
            id: m.id,
            fighter_id: fighter.id,
            key: m.key,
            value: m.value,
            score0: 1,
            scored_at: at,
            created_at: at,
            written_at: at,
          });
          tx.vectors.put({
            id: `memory:${m.id}`,
            fighter_id: fighter.id,
            kind: "memory",
            model,
            vector: vectorMod.encodeVector(vectors[k]),
            at,
          });
        });
      });
    }
    const ring = {
      llm: { embed: async (_s, { input, purpose }) => ({ vectors: await embedder.embed(input, purpose) }) },
    };
    const embeddings = embeddingsMod.createEmbeddings({ config, ring, data, log: quiet });
    const memories = memoriesMod.createMemories(data, { get: async () => fighter });
    // The first search loads the fighter's index: timed apart, as a daemon pays it once.
    let started = performance.now();
    await embeddings.search("memory", fighter.id, "warm up", 5);
    const loadMs = performance.now() - started;
    const time = async (withMeaning) => {
      const took = [];
      for (let i = 0; i < queries; i++) {
        // A question, a name and two words of the corpus: some common, most rare, as people ask.
        const query = `${QUERIES[i % QUERIES.length]} ${OTHERS.name[i % OTHERS.name.length]} ${words.pick(COMMON)} ${words.pick(COMMON)}`;
        started = performance.now();
        const found = await recallMod.recallMemories(
          memories,
          withMeaning ? embeddings : undefined,
          fighter.id,
          query,
          5,
          DECAY,
        );
        took.push(performance.now() - started);
        await found.reinforced;
        if (withMeaning && found.by !== "words+meaning")
          throw new Error("recall speed: the embeddings did not answer");
      }
      return { p50: percentile(took, 50), p95: percentile(took, 95) };
    };
    const byWords = await time(false);
    const hybrid = await time(true);
    embeddings.close();
    return { memories: count, load_ms: loadMs, words: byWords, hybrid };
  } finally {
    await store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

if (isMain(import.meta)) {
  const count = Number(process.argv[2] ?? 100_000);
  const r = await recallSpeed({ memories: count });
  console.log(
    `recall at ${r.memories} memories: by words p50 ${r.words.p50.toFixed(1)} ms, p95 ${r.words.p95.toFixed(1)} ms; ` +
      `words + meaning p50 ${r.hybrid.p50.toFixed(1)} ms, p95 ${r.hybrid.p95.toFixed(1)} ms; index loaded in ${Math.round(r.load_ms)} ms`,
  );
}
