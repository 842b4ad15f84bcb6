import { definePlugin, type MoveHandler } from "../../kernel/sdk.js";
import { recallMemories } from "./recall.js";

/**
 * The memory moves, and the decay of what a fighter remembers. Input arrives already validated
 * against the schemas in plugin.json, so the handlers only narrow types; capability checks happen
 * in the kernel before they run. After every committed turn the fighter's memories fade by
 * `[memory.decay] rate_per_day`; recall ranks and reinforces them.
 */
export default definePlugin({
  id: "moves-memory",
  apply({ hooks, ring, config }) {
    const decay = config.memory.decay;
    const handlers: Record<string, MoveHandler> = {
      memory_store: {
        name: "memory_store",
        async run(input, { fighter }) {
          const record = await ring.memory.put(fighter.id, String(input.key), String(input.value));
          return { stored: record.key };
        },
      },
      memory_recall: {
        name: "memory_recall",
        async run(input, { fighter }) {
          const limit = typeof input.limit === "number" ? input.limit : 5;
          return {
            memories: await recallMemories(ring.memory, fighter.id, String(input.query), limit, decay),
          };
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));
    hooks.turn.end.tap(async ({ fighter }) => {
      await ring.memory.decay(fighter.id, decay.rate_per_day, new Date().toISOString());
    });
  },
});
