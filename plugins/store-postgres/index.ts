/**
 * The PostgreSQL store: every table of the SQLite store in one PostgreSQL schema, shared by as many
 * daemons as point at it, with what users and models wrote sealed in the application. Selected by
 * `[plugins] store = "store-postgres"`; `[store.postgres]` names the environment variable holding
 * the URL, the schema and the pool size.
 */
import { definePlugin, SparError } from "../../sdk/index.js";
import { openPostgresStore } from "./store.js";

/** `[store.postgres]` as the manifest's schema leaves it (defaults filled in when the table is present). */
export interface PostgresSection {
  url_env?: string;
  schema?: string;
  pool_max?: number;
}

export default definePlugin<{ "store.postgres"?: PostgresSection }>({
  id: "store-postgres",
  apply(api, config) {
    const section = config["store.postgres"] ?? {};
    const urlEnv = section.url_env ?? "SPAR_DATABASE_URL";
    api.hooks.store.open.tap(async (options) => {
      const url = api.env[urlEnv];
      if (!url) {
        throw new SparError(
          "CONFIG_INVALID",
          `the PostgreSQL store needs its connection URL in the environment variable ${urlEnv} ` +
            "(postgres://user:pass@host:5432/db); set it, or put it in <data dir>/.env",
          { path: "store.postgres.url_env" },
        );
      }
      return openPostgresStore(options, {
        url,
        urlEnv,
        schema: section.schema ?? "spar",
        poolMax: section.pool_max ?? 10,
        log: api.log,
      });
    });
  },
});
