import { definePlugin, type MoveHandler } from "../../sdk/index.js";
import { closeness, createEmbeddings } from "../../sdk/kits/recall.js";
import { queryWords } from "../../sdk/kits/text.js";
import { createKnowledgeGraph, type EntityDoc, type KgEntity, type KgRelation } from "./graph.js";

/** What an entity's vector embeds: its name and type. */
const entityText = (e: Pick<EntityDoc, "name" | "type">) => `${e.name} (${e.type})`;
const PAGE = 5_000;

/**
 * The knowledge-graph moves. Input arrives validated against the schemas in plugin.json; the
 * `knowledge_graph` capability is checked by the kernel before they run. The graph lives in this
 * plugin's own `entities` and `relations` collections (plugin.json); with `[memory.embeddings]`,
 * each entity is embedded after it is added (its `vectors`), and kg_query finds entities by meaning
 * as well as by words, as memory recall does.
 */
export default definePlugin({
  id: "moves-knowledge",
  apply({ hooks, ring, data, config, log }) {
    const graph = createKnowledgeGraph(data, ring.fighters);
    const settings = config.memory.embeddings;
    const embeddings = settings ? createEmbeddings({ config: settings, ring, data, log }) : undefined;
    const handlers: Record<string, MoveHandler> = {
      kg_add: {
        name: "kg_add",
        async run(input, { fighter }) {
          const entities = (input.entities ?? []) as KgEntity[];
          const relations = (input.relations ?? []) as KgRelation[];
          return graph.add(fighter.id, entities, relations, (made) => {
            for (const e of made) embeddings?.enqueue("entity", fighter.id, e.id, entityText(e));
          });
        },
      },
      kg_query: {
        name: "kg_query",
        async run(input, { fighter }) {
          const limit = typeof input.limit === "number" ? input.limit : 10;
          const query = String(input.query);
          const near = query.trim()
            ? await embeddings?.search("entity", fighter.id, query, Math.max(20, limit * 2))
            : undefined;
          const meaning =
            near && embeddings
              ? {
                  ids: near.map((h) => h.id),
                  weights: near.map((h) => closeness(h.score, embeddings.floor)),
                }
              : undefined;
          return { entities: await graph.query(fighter.id, queryWords(query), limit, meaning) };
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));

    if (!embeddings) return;
    // Entities with no vector of the current model (added before, or under another model): in the background.
    hooks.daemon.ready.tap(() => {
      const entities = data.entities;
      if (!entities) return;
      async function* rows() {
        let after: string | undefined;
        for (;;) {
          const page = (await entities?.find({ limit: PAGE, ...(after ? { after } : {}) })) as EntityDoc[];
          yield page.map((e) => ({ id: e.id, fighter_id: e.fighter_id, text: entityText(e) }));
          if (page.length < PAGE) return;
          after = page[page.length - 1]?.id;
        }
      }
      embeddings
        .catchUp("entity", rows())
        .catch((err: unknown) => log.warn("embedding entities failed", { error: (err as Error).message }));
    });
    hooks.daemon.close.tap(() => embeddings.close());
  },
});
