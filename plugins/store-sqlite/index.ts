/**
 * The default store: one SQLCipher-encrypted SQLite database in the data dir. Its data layer is
 * synchronous (better-sqlite3), wrapped into the kernel's asynchronous Store (corruption.ts). A quick
 * integrity check runs in a worker thread from the moment it opens; a damaged file is logged and
 * reported by `health()`.
 */
import { definePlugin } from "../../sdk/index.js";
import { openSqliteStore } from "./store.js";

export default definePlugin({
  id: "store-sqlite",
  apply(api) {
    api.hooks.store.open.tap(async (options) => openSqliteStore(options, { log: api.log }));
  },
});
