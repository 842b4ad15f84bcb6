import { definePlugin, type MoveHandler } from "../../sdk/index.js";
import { queryWords } from "../../sdk/kits/text.js";
import { createKnowledgeGraph, type KgEntity, type KgRelation } from "./graph.js";

/**
 * The knowledge-graph moves. Input arrives validated against the schemas in plugin.json; the
 * `knowledge_graph` capability is checked by the kernel before they run. The graph lives in this
 * plugin's own `entities` and `relations` collections (plugin.json).
 */
export default definePlugin({
  id: "moves-knowledge",
  apply({ hooks, ring, data }) {
    const graph = createKnowledgeGraph(data, ring.fighters);
    const handlers: Record<string, MoveHandler> = {
      kg_add: {
        name: "kg_add",
        async run(input, { fighter }) {
          const entities = (input.entities ?? []) as KgEntity[];
          const relations = (input.relations ?? []) as KgRelation[];
          return graph.add(fighter.id, entities, relations);
        },
      },
      kg_query: {
        name: "kg_query",
        async run(input, { fighter }) {
          const limit = typeof input.limit === "number" ? input.limit : 10;
          return { entities: await graph.query(fighter.id, queryWords(String(input.query)), limit) };
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));
  },
});
