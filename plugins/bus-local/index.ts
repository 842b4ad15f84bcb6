/**
 * The default bus (kind `bus`, the single slot `[plugins] bus` names): events and quota windows in
 * this process. A cluster swaps in a bus that shares both between nodes.
 */
import { definePlugin } from "../../sdk/index.js";
import { createLocalBus } from "./bus.js";

export default definePlugin({
  id: "bus-local",
  apply(api) {
    api.hooks.bus.open.tap(async (options) => createLocalBus(options));
  },
});
