// The recall lab over Spar's own code: the moves-memory plugin's memories, passages, embeddings,
// recall and compaction flush (from dist/), on a real encrypted SQLite store in a temporary home.
// Only the models are stand-ins: `embedder` answers `ring.llm.embed`, and `flush` (the bench's
// rule-based extractor) answers the flush's model call, reading the same transcript a model would.
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const DIST = join(import.meta.dirname, "..", "..", "dist");
const load = (path) => import(join(DIST, path));
/** Spar's modules from dist/, imported by the first lab (so importing this file needs no build). */
let loaded;
const modules = () => {
  loaded ??= Promise.all([
    load("plugins/store-sqlite/store.js"),
    load("sdk/collection-engine.js"),
    load("plugins/moves-memory/memories.js"),
    load("plugins/moves-memory/passages.js"),
    load("lib/recall/embeddings.js"),
    load("plugins/moves-memory/recall.js"),
    load("plugins/moves-memory/flush.js"),
  ]).then(([store, engine, memoriesMod, passagesMod, embeddingsMod, recallMod, flushMod]) => ({
    openSqliteStore: store.openSqliteStore,
    createPluginData: engine.createPluginData,
    memoriesMod,
    passagesMod,
    embeddingsMod,
    recallMod,
    flushMod,
    manifest: JSON.parse(readFileSync(join(DIST, "plugins", "moves-memory", "plugin.json"), "utf8")),
  }));
  return loaded;
};

const DECAY = Object.freeze({ rate_per_day: 0.05, reinforce_on_access: 0.2, forget_below: 0.05 });
const SECRET = Buffer.from("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
const quiet = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };
const opened = [];

/** Closes every lab's store and removes its home (call once the run is over). */
export async function closeLabs() {
  for (const { store, home } of opened.splice(0)) {
    await store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * A lab: `storeMemory` (the model's memory_store), `addMessage` (a turn's words, as the plugin copies
 * them), `compact(bout, throughSeq)` (the flush, when `flush` is given) and `recall(query, k)`: the
 * texts a fighter would read calling memory_recall and conversation_search, fused by rank.
 */
export function createRecallLab({ embedder, flush, now }) {
  const clock = () => new Date(now()).toISOString();
  const fighter = {
    id: randomUUID(),
    name: "lab",
    manifest: { name: "lab", description: "", system_prompt: ".", capabilities: [{ type: "memory" }] },
  };
  const messages = new Map();
  const compacted = new Map();
  const ready = (async () => {
    const {
      openSqliteStore,
      createPluginData,
      memoriesMod,
      passagesMod,
      embeddingsMod,
      recallMod,
      flushMod,
      manifest,
    } = await modules();
    const home = mkdtempSync(join(tmpdir(), "spar-recall-lab-"));
    const store = await openSqliteStore({ home, masterSecret: SECRET });
    opened.push({ store, home });
    await store.fighters.insert({ ...fighter, created_at: clock() });
    const data = createPluginData({
      plugin: manifest.id,
      data: manifest.data,
      store: () => store.collections,
      now,
    });
    const ring = {
      llm: {
        embed: async (_settings, { input, purpose }) => ({ vectors: await embedder.embed(input, purpose) }),
        complete: async (_model, request) => ({
          text: JSON.stringify({ facts: await flush(request.messages[0].content) }),
        }),
      },
    };
    const embeddings = embedder
      ? embeddingsMod.createEmbeddings({
          config: { provider: "lab", model: embedder.model ?? "lab" },
          ring,
          data,
          log: quiet,
          now: clock,
        })
      : undefined;
    const memories = memoriesMod.createMemories(data, { get: async () => fighter }, clock);
    const passages = passagesMod.createPassages(data, () => embeddings, DECAY, now);
    return { ring, data, memories, passages, embeddings, recallMod, flushMod };
  })();

  return {
    async storeMemory(key, value) {
      const { memories, embeddings } = await ready;
      const record = await memories.put(fighter.id, key, value);
      embeddings?.enqueue("memory", fighter.id, record.id, `${record.key}: ${record.value}`);
    },
    async addMessage({ bout, seq, role, text, at }) {
      const { passages } = await ready;
      const list = messages.get(bout) ?? [];
      messages.set(bout, list);
      const message = { id: randomUUID(), bout_id: bout, seq, role, content: text, created_at: at };
      list.push(message);
      await passages.index({
        fighter,
        bout_id: bout,
        origin: "user",
        first_seq: seq,
        new_messages: [{ role, content: text }],
      });
    },
    async compact(bout, throughSeq) {
      const { ring, memories, embeddings, flushMod } = await ready;
      const from = compacted.get(bout) ?? 0;
      compacted.set(bout, throughSeq);
      if (!flush) return;
      const folded = (messages.get(bout) ?? []).filter((m) => m.seq > from && m.seq <= throughSeq);
      const input = {
        fighter,
        bout_id: bout,
        turn_id: randomUUID(),
        origin: "user",
        model: {},
        messages: folded,
        summary_budget_tokens: 1000,
      };
      for (const r of await flushMod.flushFacts(ring, memories, input)) {
        embeddings?.enqueue("memory", fighter.id, r.id, `${r.key}: ${r.value}`);
      }
    },
    async recall(query, k) {
      const { memories, passages, embeddings, recallMod } = await ready;
      await embeddings?.idle();
      const context = { fighter, origin: "user", grants: [], callers: [] };
      const [found, spoken] = await Promise.all([
        recallMod.recallMemories(memories, embeddings, fighter.id, query, k, DECAY, now()),
        passages.search(context, query, { limit: k }),
      ]);
      await found.reinforced;
      // What the fighter reads from both moves, best first by their fused scores (the same scale:
      // reciprocal ranks summed, times relevance or recency).
      const scored = [
        ...found.memories.map((m, i) => ({ text: `${m.key}: ${m.value}`, score: found.weights[i] })),
        ...spoken.results.map((p, i) => ({ text: p.text, score: spoken.weights[i] })),
      ];
      return scored
        .sort((a, b) => b.score - a.score)
        .slice(0, k)
        .map((r) => r.text);
    },
  };
}
