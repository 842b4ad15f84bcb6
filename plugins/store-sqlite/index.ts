/**
 * The default store: one SQLCipher-encrypted SQLite database in the data dir. Opening is async only
 * for the key derivation; every Store method after that is synchronous.
 */
import { definePlugin } from "../../kernel/sdk.js";
import { openSqliteStore } from "./store.js";

export default definePlugin({
  id: "store-sqlite",
  apply(api) {
    api.hooks.store.open.tap(async (options) => openSqliteStore(options));
  },
});
