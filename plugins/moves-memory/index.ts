import { definePlugin, type MoveHandler, SparError } from "../../sdk/index.js";
import { createEmbeddings, type Embeddings } from "../../sdk/kits/recall.js";
import { flushFacts } from "./flush.js";
import { createMemories } from "./memories.js";
import { createPassages } from "./passages.js";
import { recallMemories } from "./recall.js";

declare module "../../sdk/index.js" {
  interface SparEventMap {
    /** A compaction's flush saved `count` facts of the messages it removed to the fighter's memory. */
    "memory.flushed": { fighter_id: string; bout_id: string; count: number };
    /** The embedding model changed (or was set): `queued` memories and messages are being embedded again. */
    "memory.reindexing": { model: string; queued: number };
  }
}

/** `since` as a stored time; VALIDATION_FAILED for what is not a date. */
function sinceTime(since: string): string {
  const at = Date.parse(since);
  if (Number.isNaN(at)) {
    throw new SparError(
      "VALIDATION_FAILED",
      `since must be an ISO 8601 date or time, like 2026-11-01 (got ${JSON.stringify(since.slice(0, 40))})`,
    );
  }
  return new Date(at).toISOString();
}

/** How long after start the background catch-up (old messages, missing vectors) begins. */
const CATCH_UP_DELAY_MS = 2_000;

/**
 * The memory moves. Input arrives already validated against the schemas in plugin.json, so the
 * handlers only narrow types; capability checks happen in the kernel before they run. A memory fades
 * by `[memory.decay] rate_per_day` from when it was last scored: recall computes its score as of now
 * (decay is exponential, so nothing needs rewriting as time passes), ranks by it and reinforces what
 * it returns. Memories live in this plugin's own `memories` collection, past conversations' words in
 * `passages`, and with `[memory.embeddings]` their vectors in `vectors` (plugin.json). Before a
 * compaction, the facts of what it removes are saved (`compaction.flush`, flush.ts).
 */
export default definePlugin({
  id: "moves-memory",
  apply({ hooks, ring, config, data, log, events }) {
    const decay = config.memory.decay;
    const memories = createMemories(data, ring.fighters);
    const settings = config.memory.embeddings;
    const embeddings: Embeddings | undefined = settings
      ? createEmbeddings({ config: settings, ring, data, log })
      : undefined;
    const passages = createPassages(data, () => embeddings, decay);

    const handlers: Record<string, MoveHandler> = {
      memory_store: {
        name: "memory_store",
        async run(input, { fighter, taint }) {
          const record = await memories.put(fighter.id, String(input.key), String(input.value), taint[0]);
          embeddings?.enqueue("memory", fighter.id, record.id, `${record.key}: ${record.value}`);
          return { stored: record.key };
        },
      },
      memory_recall: {
        name: "memory_recall",
        async run(input, { fighter, untrusted }) {
          const limit = typeof input.limit === "number" ? input.limit : 5;
          const found = await recallMemories(
            memories,
            embeddings,
            fighter.id,
            String(input.query),
            limit,
            decay,
          );
          found.reinforced.catch((err: unknown) =>
            log.warn("reinforcing recalled memories failed", { error: (err as Error).message }),
          );
          for (const source of found.taint) untrusted({ ...source, move: "memory_recall" });
          return { memories: found.memories, by: found.by };
        },
      },
      conversation_search: {
        name: "conversation_search",
        async run(input, context) {
          const found = await passages.search(context, String(input.query), {
            limit: typeof input.limit === "number" ? input.limit : 5,
            ...(typeof input.since === "string" ? { since: sinceTime(input.since) } : {}),
          });
          for (const source of found.taint) context.untrusted({ ...source, move: "conversation_search" });
          return { results: found.results, by: found.by };
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));

    // After the reply, off its path and off the fighter's queue: the turn's words become searchable.
    hooks.turn.after.tap((turn) => {
      passages
        .index(turn)
        .catch((err: unknown) =>
          log.warn("copying a turn's words for search failed", { error: (err as Error).message }),
        );
    });

    hooks.compaction.flush.tap(async (facts, input) => {
      const marked = await Promise.all(
        input.messages.map((m) => (data.passages ? data.passages.get(`${m.bout_id}:${m.seq}`) : undefined)),
      );
      const taint = marked.find((p) => p?.taint)?.taint as Parameters<typeof flushFacts>[3];
      const stored = await flushFacts(ring, memories, input, taint);
      for (const r of stored) embeddings?.enqueue("memory", input.fighter.id, r.id, `${r.key}: ${r.value}`);
      if (stored.length > 0) {
        events.publish({
          kind: "memory.flushed",
          fighter_id: input.fighter.id,
          bout_id: input.bout_id,
          count: stored.length,
        });
      }
      return [...facts, ...stored.map((r) => ({ key: r.key, value: r.value }))];
    });

    let catchUp: NodeJS.Timeout | undefined;
    hooks.daemon.ready.tap(() => {
      catchUp = setTimeout(() => {
        void (async () => {
          const copied = await passages.backfill(ring);
          if (copied.length > 0)
            log.info("past conversations indexed for conversation_search", { passages: copied.length });
          if (!embeddings) return;
          const queued =
            (await embeddings.catchUp("memory", memories.rows())) +
            (await embeddings.catchUp("passage", passages.rows()));
          if (queued === 0) return;
          log.info("embedding memories and past messages in the background", {
            model: embeddings.model,
            queued,
          });
          events.publish({ kind: "memory.reindexing", model: embeddings.model, queued });
        })().catch((err: unknown) => log.warn("memory catch-up failed", { error: (err as Error).message }));
      }, CATCH_UP_DELAY_MS);
      catchUp.unref();
    });
    hooks.daemon.close.tap(() => {
      if (catchUp) clearTimeout(catchUp);
      embeddings?.close();
    });
  },
});
