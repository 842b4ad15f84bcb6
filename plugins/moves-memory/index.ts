import { definePlugin, type MoveHandler } from "../../sdk/index.js";
import { createMemories } from "./memories.js";
import { recallMemories } from "./recall.js";

/**
 * The memory moves. Input arrives already validated against the schemas in plugin.json, so the
 * handlers only narrow types; capability checks happen in the kernel before they run. A memory fades
 * by `[memory.decay] rate_per_day` from when it was last scored: recall computes its score as of now
 * (decay is exponential, so nothing needs rewriting as time passes), ranks by it and reinforces what
 * it returns. Memories live in this plugin's own `memories` collection (plugin.json).
 */
export default definePlugin({
  id: "moves-memory",
  apply({ hooks, ring, config, data }) {
    const decay = config.memory.decay;
    const memories = createMemories(data, ring.fighters);
    const handlers: Record<string, MoveHandler> = {
      memory_store: {
        name: "memory_store",
        async run(input, { fighter }) {
          const record = await memories.put(fighter.id, String(input.key), String(input.value));
          return { stored: record.key };
        },
      },
      memory_recall: {
        name: "memory_recall",
        async run(input, { fighter }) {
          const limit = typeof input.limit === "number" ? input.limit : 5;
          return {
            memories: await recallMemories(memories, fighter.id, String(input.query), limit, decay),
          };
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));
  },
});
