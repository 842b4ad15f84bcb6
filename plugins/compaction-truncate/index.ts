import { type CompactionStrategy, definePlugin } from "../../sdk/index.js";

/** Truncation: the old messages simply leave the context (they stay on disk, marked compacted). */
const truncate: CompactionStrategy = {
  name: "truncate",
  async compact() {
    return {};
  },
};

export default definePlugin({
  id: "compaction-truncate",
  apply({ hooks }) {
    hooks.compaction.resolve.tap((name) => (name === "truncate" ? truncate : undefined));
  },
});
