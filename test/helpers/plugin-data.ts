/**
 * For tests: a bundled plugin's `api.data` over an opened store, built from its plugin.json as the
 * plugin host builds it, so a plugin's records can be tested on every store without a daemon.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import type pg from "pg";
import type { Cipher } from "../../plugins/store-postgres/cipher.js";
import { createPool } from "../../plugins/store-postgres/connection.js";
import { openCipher } from "../../plugins/store-postgres/keys.js";
import { migrate as migratePostgres } from "../../plugins/store-postgres/migrations.js";
import { openPostgresStore } from "../../plugins/store-postgres/store.js";
import { deriveKey, rawKeyLiteral } from "../../plugins/store-sqlite/key.js";
import { MIGRATIONS, migrate } from "../../plugins/store-sqlite/migrations.js";
import { openRetained } from "../../plugins/store-sqlite/retain.js";
import { DB_FILE, openSqliteStore, SALT_FILE } from "../../plugins/store-sqlite/store.js";
import { createPluginData } from "../../sdk/collection-engine.js";
import type { DataDeclaration, PluginData } from "../../sdk/collections.js";
import type { Store } from "../../sdk/store-types.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "./postgres.js";

/** The `data` a bundled plugin's manifest declares. */
export function declaredData(pluginId: string): DataDeclaration {
  const manifest = JSON.parse(
    readFileSync(new URL(`../../plugins/${pluginId}/plugin.json`, import.meta.url), "utf8"),
  ) as { data?: DataDeclaration };
  if (!manifest.data) throw new Error(`plugin ${pluginId} declares no data`);
  return manifest.data;
}

/** `api.data` of the bundled plugin `pluginId` over `store`; `now` is its clock (retention sweeps). */
export function pluginData(pluginId: string, store: Store, now?: () => number): PluginData {
  return createPluginData({
    plugin: pluginId,
    data: declaredData(pluginId),
    store: () => store.collections,
    ...(now ? { now } : {}),
  });
}

export interface TestStore {
  /** Shown in the suite's name. */
  name: string;
  /** Opens the store kept under `home`: a fresh directory, or one opened (and closed) before. */
  open(home: string): Promise<Store>;
  /** Once the suite is done: drops what `open` made outside the homes (a server's schemas). */
  close(): Promise<void>;
  /** Why this store cannot be tested here; absent to run it. */
  skip?: string;
}

export const TEST_MASTER_SECRET = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/** Both store plugins, as test/contract/store.test.ts opens them (PostgreSQL when a server is set). */
export function testStores(): TestStore[] {
  const schemas = new Set<string>();
  return [
    {
      name: "store-sqlite",
      open: (home) => openSqliteStore({ home, masterSecret: Buffer.from(TEST_MASTER_SECRET) }),
      close: async () => undefined,
    },
    {
      name: "store-postgres",
      ...(TEST_DATABASE_URL ? {} : { skip: SKIP_REASON }),
      open: (home) => {
        const schema = schemaForHome(home);
        schemas.add(schema);
        return openPostgresStore(
          { home, masterSecret: Buffer.from(TEST_MASTER_SECRET) },
          { url: TEST_DATABASE_URL ?? "", schema, poolMax: 3 },
        );
      },
      close: async () => {
        if (TEST_DATABASE_URL) await dropSchemas(TEST_DATABASE_URL, schemas);
      },
    },
  ];
}

/**
 * A data dir as an older Spar left it: its SQLite database made by the migrations numbered below
 * `before` alone, opened behind the store's back (keyed with TEST_MASTER_SECRET) to insert rows as
 * that Spar's code did. Close it, then open the store: the newer migrations run on first start.
 */
export async function legacySqlite(home: string, before: number): Promise<Database.Database> {
  const salt = Buffer.alloc(16, 7);
  writeFileSync(join(home, SALT_FILE), salt, { mode: 0o600 });
  const db = openRetained(join(home, DB_FILE), {});
  db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
  db.key(rawKeyLiteral(await deriveKey(Buffer.from(TEST_MASTER_SECRET), salt)));
  migrate(
    db,
    "legacy",
    MIGRATIONS.filter((m) => m.version < before),
  );
  return db;
}

/**
 * The PostgreSQL schema `testStores()` opens for `home`, as an older Spar left it: made by the
 * migrations, keyed with TEST_MASTER_SECRET, but never opened by this code, so the Store's old
 * tables are still there to insert rows into (sealing with `cipher` what that Spar sealed). Close
 * it, then open the store: the records move on first start.
 */
export async function legacyPostgres(
  home: string,
): Promise<{ db: pg.Pool; cipher: Cipher; close(): Promise<void> }> {
  const schema = schemaForHome(home);
  const db = createPool({ url: TEST_DATABASE_URL ?? "", schema, poolMax: 2 });
  await migratePostgres(db, schema);
  const cipher = await openCipher(db, Buffer.from(TEST_MASTER_SECRET), schema);
  return {
    db,
    cipher,
    async close() {
      cipher.wipe();
      await db.end();
    },
  };
}
