import { definePlugin, type MoveHandler } from "../../kernel/sdk.js";

/**
 * The memory moves. Input arrives already validated against the schemas in plugin.json, so the
 * handlers only narrow types; capability checks happen in the kernel before they run.
 */
export default definePlugin({
  id: "moves-memory",
  apply({ hooks, ring }) {
    const handlers: Record<string, MoveHandler> = {
      memory_store: {
        name: "memory_store",
        async run(input, { fighter }) {
          const record = await ring.memory.store(fighter.id, String(input.key), String(input.value));
          return { stored: record.key };
        },
      },
      memory_recall: {
        name: "memory_recall",
        async run(input, { fighter }) {
          const limit = typeof input.limit === "number" ? input.limit : 5;
          const found = await ring.memory.recall(fighter.id, String(input.query), limit);
          return { memories: found };
        },
      },
    };
    hooks.move.resolve.tap((name) => handlers[name]);
  },
});
