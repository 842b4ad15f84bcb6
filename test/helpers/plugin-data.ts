/**
 * For plugins' own tests of their data: each store plugin, opened in a fresh home (store-sqlite
 * always, store-postgres when SPAR_TEST_DATABASE_URL names a server), and a plugin's `api.data` over
 * it, built from the plugin's manifest as the host builds it.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import type pg from "pg";
import type { Cipher } from "../../plugins/store-postgres/cipher.js";
import { createPool } from "../../plugins/store-postgres/connection.js";
import { openCipher } from "../../plugins/store-postgres/keys.js";
import { openPostgresStore } from "../../plugins/store-postgres/store.js";
import { MIGRATIONS, migrate } from "../../plugins/store-sqlite/migrations.js";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
import { createPluginData } from "../../sdk/collection-engine.js";
import type { PluginData } from "../../sdk/collections.js";
import { SparError } from "../../sdk/errors.js";
import type { PluginManifest } from "../../sdk/plugin-manifest.js";
import type { RingServices } from "../../sdk/services.js";
import type { Store } from "../../sdk/store-types.js";
import type { FighterRow } from "../../sdk/types.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "./postgres.js";
import { previousPostgres, previousSqlite } from "./previous-release.js";

/** The master secret every store here is opened with. */
export const MASTER_SECRET = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

export interface StoreKind {
  name: "store-sqlite" | "store-postgres";
  /** Why it cannot be tested here; absent to run it. */
  skip?: string;
  /** Opens the store kept under `home` (made by `tempHome`); again for the same home, the same data. */
  open(home: string): Promise<Store>;
}

const homes: string[] = [];
const schemas = new Set<string>();

export const STORE_KINDS: readonly StoreKind[] = [
  {
    name: "store-sqlite",
    open: (home) => openSqliteStore({ home, masterSecret: Buffer.from(MASTER_SECRET) }),
  },
  {
    name: "store-postgres",
    ...(TEST_DATABASE_URL ? {} : { skip: SKIP_REASON }),
    open(home) {
      const schema = schemaForHome(home);
      schemas.add(schema);
      return openPostgresStore(
        { home, masterSecret: Buffer.from(MASTER_SECRET) },
        { url: TEST_DATABASE_URL ?? "", schema, poolMax: 5 },
      );
    },
  },
];

/** A fresh home, removed (with its PostgreSQL schema) by `cleanUp`. */
export function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-plugin-data-"));
  homes.push(home);
  return home;
}

/** Call from afterAll: removes the homes and schemas the tests made. */
export async function cleanUp(): Promise<void> {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  if (TEST_DATABASE_URL && schemas.size > 0) await dropSchemas(TEST_DATABASE_URL, schemas);
  schemas.clear();
}

/**
 * The plugin's `api.data` over `store`'s collections, from `<pluginDir>/plugin.json`; `now` is its
 * clock (when retention sweeps).
 */
export function pluginData(store: Store, pluginDir: string, now?: () => number): PluginData {
  const manifest = JSON.parse(readFileSync(join(pluginDir, "plugin.json"), "utf8")) as PluginManifest;
  return createPluginData({
    plugin: manifest.id,
    data: manifest.data ?? { collections: {} },
    store: () => store.collections,
    ...(now ? { now } : {}),
  });
}

/** `ring.fighters.get` as a plugin sees it, over the store: FIGHTER_NOT_FOUND unless live. */
export function storeFighters(store: Store): Pick<RingServices["fighters"], "get"> {
  return {
    async get(id) {
      const row = await store.fighters.get(id);
      if (!row) throw new SparError("FIGHTER_NOT_FOUND", `no fighter with id or name "${id}"`);
      return { id: row.id, name: row.name } as Awaited<ReturnType<RingServices["fighters"]["get"]>>;
    },
  };
}

let serial = 0;

/** A live fighter nobody else uses. */
export async function newFighter(store: Store, prefix = "fighter"): Promise<FighterRow> {
  serial += 1;
  const name = `${prefix}-${serial}-${randomUUID().slice(0, 6)}`;
  const row: FighterRow = {
    id: randomUUID(),
    name,
    manifest: { name, description: `${name} fights`, system_prompt: "Be brief." },
    created_at: new Date().toISOString(),
  };
  await store.fighters.insert(row);
  return row;
}

/**
 * A home as an older Spar left it on store-sqlite: its database as the previous release made it, then
 * the migrations numbered below `before` (keyed with MASTER_SECRET), open behind the store's back to
 * insert rows as that Spar's code did. Close it, then open the store: the newer migrations run on
 * first start.
 */
export async function legacySqlite(home: string, before: number): Promise<Database.Database> {
  const db = await previousSqlite(home, Buffer.from(MASTER_SECRET));
  migrate(
    db,
    "legacy",
    MIGRATIONS.filter((m) => m.version < before),
  );
  return db;
}

/**
 * The PostgreSQL schema STORE_KINDS opens for `home`, as the previous release left it (made here
 * unless it exists already), keyed with MASTER_SECRET but never opened by this code, so the Store's
 * old tables are still there to insert rows into (sealing with `cipher` what that Spar sealed).
 * Close it, then open the store: the records move on first start.
 */
export async function legacyPostgres(
  home: string,
): Promise<{ db: pg.Pool; cipher: Cipher; close(): Promise<void> }> {
  const schema = schemaForHome(home);
  schemas.add(schema);
  const db = createPool({ url: TEST_DATABASE_URL ?? "", schema, poolMax: 2 });
  const made = await db.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
  if (made.rowCount === 0) await previousPostgres(TEST_DATABASE_URL ?? "", schema);
  const cipher = await openCipher(db, Buffer.from(MASTER_SECRET), schema);
  return {
    db,
    cipher,
    async close() {
      cipher.wipe();
      await db.end();
    },
  };
}
