/**
 * Meaning for recall (`spar/sdk/recall`): texts embedded by the `[memory.embeddings]` model through
 * the provider plugins (`ring.llm.embed`), always off the reply's path. What a plugin keeps (memories,
 * passages, knowledge-graph entities) queues here when written; a
 * worker embeds them in batches, retrying with backoff while the provider fails, and stores the
 * vectors in the plugin's `vectors` collection (encrypted like every collection). At start, and when
 * the model changes, whatever has no vector of the current model is queued again. Searches read
 * in-process indexes (vector-index.ts), loaded per fighter on first use and kept up to date.
 */
import type { Collection, PluginData } from "../../sdk/collections.js";
import type { EmbeddingsConfig } from "../../sdk/config.js";
import type { ModelSettings } from "../../sdk/types.js";
import { decodeVector, encodeVector, type VectorHit, VectorIndex } from "./vector-index.js";

/** What a vector embeds, in its owner's words: `memory`, `passage`, `entity` … (its id is `<kind>:<id>`). */
export type Kind = string;

/** One stored vector: `<kind>:<id of what it embeds>`. */
export type VectorRecord = {
  id: string;
  fighter_id: string;
  kind: Kind;
  model: string;
  vector: string;
  at: string;
};

/** What unrelated texts score with common embedding models: a neighbour must be closer to count. */
export const DEFAULT_MIN_SIMILARITY = 0.2;
/** How long a search waits for its query's vector before it answers by words alone. */
export const QUERY_WAIT_MS = 2_000;
/** Loaded indexes past this many bytes in all: the least recently searched go. */
export const INDEX_BUDGET_BYTES = 256 * 1024 * 1024;
const PAGE = 5_000;
const MAX_BACKOFF_MS = 300_000;
/** The most characters of one text sent to be embedded (models take ~8k tokens). */
const MAX_TEXT = 8_000;

/** A plugin's embeddings: its texts queued to be embedded, and its fighters' vectors searched. */
export interface Embeddings {
  readonly model: string;
  /** The cosine below which a neighbour counts for nothing (`[memory.embeddings] min_similarity`). */
  readonly floor: number;
  /** Queues a text to embed (replacing a queued one of the same id). */
  enqueue(kind: Kind, fighterId: string, id: string, text: string): void;
  forget(kind: Kind, ids: readonly string[]): Promise<void>;
  /** The `k` nearest of a fighter's, or undefined when the query could not be embedded in time. */
  search(kind: Kind, fighterId: string, query: string, k: number): Promise<VectorHit[] | undefined>;
  /** A stored vector of the current model, for diversity (MMR). */
  vectorOf(kind: Kind, fighterId: string, id: string): Float32Array | undefined;
  /** Queues everything of `kind` that has no vector of the current model. */
  catchUp(
    kind: Kind,
    rows: AsyncIterable<{ id: string; fighter_id: string; text: string }[]>,
  ): Promise<number>;
  /** Resolves once the queue is empty (or failing): for tests and the recall bench. */
  idle(): Promise<void>;
  close(): void;
}

interface Item {
  kind: Kind;
  fighterId: string;
  id: string;
  text: string;
}

interface Loaded {
  index: VectorIndex | undefined;
  /** The newest `at` read: later vectors (another node's) are read before a search. */
  mark: string;
  ready: Promise<void>;
  used: number;
}

/** The settings `ring.llm.embed` is called with. */
export function embeddingSettings(config: EmbeddingsConfig): ModelSettings {
  return {
    provider: config.provider,
    model: config.model,
    ...(config.base_url ? { base_url: config.base_url } : {}),
    ...(config.api_key_env ? { api_key_env: config.api_key_env } : {}),
  } as ModelSettings;
}

/** The model as vectors record it: a change of provider, model or size means new vectors. */
export function modelKey(config: EmbeddingsConfig): string {
  return `${config.provider}/${config.model}@${config.dimensions ?? "native"}`;
}

/** What embedding needs of the Ring: `ring.llm.embed`. */
export interface EmbedService {
  llm: {
    embed(
      settings: ModelSettings,
      request: { input: string[]; purpose?: "document" | "query"; dimensions?: number; signal?: AbortSignal },
    ): Promise<{ vectors: number[][] }>;
  };
}

/** What the embeddings log: a failing provider, while it retries. */
interface Warner {
  warn(message: string, fields?: Record<string, unknown>): void;
}

/**
 * The embeddings of one plugin's data under `[memory.embeddings]`: a worker that embeds what is
 * queued (retrying with backoff while the provider fails) into the plugin's `vectors` collection, and
 * per fighter and kind an index loaded on its first search. Call `close()` when the daemon stops.
 */
export function createEmbeddings(options: {
  config: EmbeddingsConfig;
  ring: EmbedService;
  /** The plugin's data: its `vectors` collection (id, fighter_id, kind, model, vector, at) holds them. */
  data: PluginData;
  log: Warner;
  now?: () => string;
}): Embeddings {
  const { config, ring, log } = options;
  const vectors = options.data.vectors as Collection<VectorRecord>;
  const now = options.now ?? (() => new Date().toISOString());
  const model = modelKey(config);
  const settings = embeddingSettings(config);
  const batchSize = config.batch_size ?? 64;
  const queue = new Map<string, Item>();
  const loaded = new Map<string, Loaded>();
  const queryCache = new Map<string, Float32Array>();
  let failing: string | undefined;
  let backoff = 0;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let closed = false;

  const embed = async (input: string[], purpose: "document" | "query", signal?: AbortSignal) => {
    const reply = await ring.llm.embed(settings, {
      input: input.map((t) => t.slice(0, MAX_TEXT)),
      purpose,
      ...(config.dimensions ? { dimensions: config.dimensions } : {}),
      ...(signal ? { signal } : {}),
    });
    return reply.vectors;
  };

  function schedule(delay: number): void {
    if (closed || timer || running || queue.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      void work();
    }, delay);
    timer.unref();
  }

  async function work(): Promise<void> {
    running = true;
    try {
      while (queue.size > 0 && !closed) {
        const batch = [...queue.values()].slice(0, batchSize);
        let got: number[][];
        try {
          got = await embed(
            batch.map((i) => i.text),
            "document",
          );
        } catch (err) {
          failing = (err as Error).message;
          backoff = Math.min(MAX_BACKOFF_MS, backoff ? backoff * 2 : 2_000);
          log.warn("embedding failed; recall answers by words until it succeeds", {
            model,
            retry_in_s: Math.round(backoff / 1000),
            error: failing,
          });
          return;
        }
        failing = undefined;
        backoff = 0;
        const at = now();
        const records = batch.map(
          (item, i): VectorRecord => ({
            id: `${item.kind}:${item.id}`,
            fighter_id: item.fighterId,
            kind: item.kind,
            model,
            vector: encodeVector(got[i] ?? []),
            at,
          }),
        );
        await options.data.transaction(async (tx) => {
          for (const r of records) tx.vectors?.put(r);
        });
        batch.forEach((item, i) => {
          // A text queued again while this batch was out stays queued.
          if (queue.get(`${item.kind}:${item.id}`) === item) queue.delete(`${item.kind}:${item.id}`);
          const held = loaded.get(`${item.fighterId}:${item.kind}`);
          const vector = got[i];
          if (held?.index && vector && vector.length === held.index.dims) held.index.upsert(item.id, vector);
        });
      }
    } catch (err) {
      failing = (err as Error).message;
      backoff = Math.min(MAX_BACKOFF_MS, backoff ? backoff * 2 : 2_000);
      log.warn("storing embeddings failed", { model, error: failing });
    } finally {
      running = false;
      schedule(backoff);
    }
  }

  function slot(fighterId: string, kind: Kind): Loaded {
    const key = `${fighterId}:${kind}`;
    let held = loaded.get(key);
    if (!held) {
      const fresh: Loaded = { index: undefined, mark: "", ready: Promise.resolve(), used: Date.now() };
      fresh.ready = readInto(fresh, fighterId, kind).catch((err: unknown) => {
        loaded.delete(key);
        throw err;
      });
      loaded.set(key, fresh);
      held = fresh;
      evict();
    }
    held.used = Date.now();
    return held;
  }

  /** Reads the vectors of the fighter's `kind` stored after `held.mark` into its index. */
  async function readInto(held: Loaded, fighterId: string, kind: Kind): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const page = await vectors.find({
        where: { fighter_id: fighterId, kind, model, ...(held.mark ? { at: { gt: held.mark } } : {}) },
        order: { by: ["at"] },
        limit: PAGE,
        ...(after ? { after } : {}),
      });
      for (const row of page) {
        const vector = decodeVector(row.vector);
        held.index ??= new VectorIndex(vector.length);
        if (vector.length === held.index.dims) held.index.upsert(row.id.slice(kind.length + 1), vector);
        if (row.at > held.mark) held.mark = row.at;
      }
      if (page.length < PAGE) return;
      after = page[page.length - 1]?.id;
    }
  }

  function evict(): void {
    let bytes = 0;
    for (const held of loaded.values()) bytes += held.index?.bytes ?? 0;
    const oldest = [...loaded.entries()].sort((a, b) => a[1].used - b[1].used);
    while (bytes > INDEX_BUDGET_BYTES && oldest.length > 1) {
      const [key, held] = oldest.shift() as [string, Loaded];
      bytes -= held.index?.bytes ?? 0;
      loaded.delete(key);
    }
  }

  async function queryVector(query: string): Promise<Float32Array | undefined> {
    const cached = queryCache.get(query);
    if (cached) return cached;
    const signal = AbortSignal.timeout(QUERY_WAIT_MS);
    const [vector] = await embed([query], "query", signal).catch(() => [] as number[][]);
    if (!vector) return undefined;
    const out = Float32Array.from(vector);
    queryCache.set(query, out);
    if (queryCache.size > 500) queryCache.delete(queryCache.keys().next().value as string);
    return out;
  }

  return {
    model,
    floor: config.min_similarity ?? DEFAULT_MIN_SIMILARITY,
    enqueue(kind, fighterId, id, text) {
      if (closed || text.trim() === "") return;
      queue.set(`${kind}:${id}`, { kind, fighterId, id, text });
      schedule(0);
    },
    async forget(kind, ids) {
      if (ids.length === 0) return;
      for (const id of ids) queue.delete(`${kind}:${id}`);
      await vectors.deleteWhere({ id: { in: ids.map((id) => `${kind}:${id}`) } });
      for (const [key, held] of loaded)
        if (key.endsWith(`:${kind}`)) for (const id of ids) held.index?.remove(id);
    },
    async search(kind, fighterId, query, k) {
      const held = slot(fighterId, kind);
      const deadline = new Promise<"late">((done) => setTimeout(() => done("late"), QUERY_WAIT_MS).unref());
      const [vector, ready] = await Promise.all([
        queryVector(query),
        Promise.race([held.ready.then(() => "ready" as const), deadline]).catch(() => "failed" as const),
      ]);
      if (!vector || ready !== "ready") return undefined;
      // Another node's vectors since the last look, then the search.
      held.ready = readInto(held, fighterId, kind);
      await held.ready.catch(() => undefined);
      return held.index?.search(vector, k) ?? [];
    },
    vectorOf(kind, fighterId, id) {
      return loaded.get(`${fighterId}:${kind}`)?.index?.vector(id);
    },
    async catchUp(kind, rows) {
      const have = new Set<string>();
      let after: string | undefined;
      for (;;) {
        const page = await vectors.find({ where: { model }, limit: PAGE, ...(after ? { after } : {}) });
        for (const row of page) have.add(row.id);
        if (page.length < PAGE) break;
        after = page[page.length - 1]?.id;
      }
      let queued = 0;
      for await (const page of rows) {
        for (const row of page) {
          if (have.has(`${kind}:${row.id}`)) continue;
          queue.set(`${kind}:${row.id}`, { kind, fighterId: row.fighter_id, id: row.id, text: row.text });
          queued += 1;
        }
      }
      schedule(0);
      return queued;
    },
    async idle() {
      while ((queue.size > 0 || running || timer) && !failing && !closed) {
        await new Promise((done) => setTimeout(done, 5));
      }
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}
