/**
 * Opens the PostgreSQL store: pool → migrations (under an advisory lock) → salt and key check →
 * the table groups, each call's failures turned into coded errors with the password scrubbed.
 * Like the SQLite store, a master key rotation left half done by `spar rekey` is settled here:
 * the given secret first, then master.key.next.
 */
import type pg from "pg";
import type { Logger, Store, StoreCheck, StoreOpenOptions } from "../../sdk/index.js";
import { isSparError } from "../../sdk/index.js";
import { postgresBackupRefusal, readNextMasterSecret, settleMasterKeyFiles } from "../../sdk/kits/store.js";
import { createClock } from "./checks.js";
import type { Cipher } from "./cipher.js";
import { createCollections } from "./collections.js";
import { createPool, type PostgresSettings, storeError } from "./connection.js";
import type { StoreContext, StoreData } from "./context.js";
import { createCore } from "./fighters.js";
import { openCipher } from "./keys.js";
import { moveLegacyTables } from "./legacy.js";
import { migrate, SCHEMA_VERSION, verifyMigrations } from "./migrations.js";
import { sealPlainNames } from "./names.js";
import { createRecords } from "./records.js";
import { rekeySchema } from "./rekey.js";
import { createTurns } from "./turns.js";

export interface PostgresStoreOptions extends PostgresSettings {
  log?: Logger;
  /** The variable holding the URL (`[store.postgres] url_env`), named in the pg_dump advice. */
  urlEnv?: string;
}

const SILENT: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Opens (creating on first use) the store in `settings.schema`. The caller still owns and zeroizes
 * `options.masterSecret`; the store keeps only the derived key, for its life.
 *
 * @example
 * const store = await openPostgresStore({ home, masterSecret }, { url, schema: "spar", poolMax: 10 });
 * const { turn } = await store.turns.begin({ fighter_id, user: { role: "user", content: "hi" } });
 */
export async function openPostgresStore(
  options: StoreOpenOptions,
  settings: PostgresStoreOptions,
): Promise<Store> {
  const pool = createPool(settings);
  const log = settings.log ?? SILENT;
  try {
    await migrate(pool, settings.schema).catch((err: unknown) => {
      throw storeError(err, `opening the schema ${settings.schema}`, settings.url);
    });
    const cipher = await openRotatedCipher(pool, options, settings, log);
    try {
      // Rows an older Spar wrote with names and keys in plaintext: only now is the key known.
      const moved = await sealPlainNames(pool, settings.schema, cipher);
      if (moved > 0) log.info("sealed the fighter names and Idempotency-Keys stored in plaintext", { moved });
      // Tables of records plugins now own (issue 29): their rows go to the plugins' collections.
      const rows = await moveLegacyTables(pool, settings.schema, cipher);
      if (Object.keys(rows).length > 0)
        log.info("moved an older Spar's records into plugins' collections", rows);
    } catch (err) {
      cipher.wipe();
      throw err;
    }
    return assemble(pool, cipher, settings);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw storeError(err, `opening the schema ${settings.schema}`, settings.url);
  }
}

/** The cipher of the given secret, else of the one an interrupted `spar rekey` left in master.key.next. */
async function openRotatedCipher(
  pool: pg.Pool,
  options: StoreOpenOptions,
  settings: PostgresSettings,
  log: Logger,
): Promise<Cipher> {
  const next = readNextMasterSecret(options.home);
  try {
    let working = options.masterSecret;
    let cipher: Cipher;
    try {
      cipher = await openCipher(pool, options.masterSecret, settings.schema);
    } catch (err) {
      if (!next || !isSparError(err) || err.code !== "STORE_KEY_INVALID") throw err;
      cipher = await openCipher(pool, next, settings.schema).catch(() => Promise.reject(err));
      working = next;
    }
    const outcome = settleMasterKeyFiles(options.home, working);
    if (outcome)
      log.warn(
        `a master key rotation (spar rekey) in ${options.home} was ${outcome === "completed" ? "completed" : "rolled back"}`,
      );
    return cipher;
  } finally {
    next?.fill(0);
  }
}

function assemble(pool: pg.Pool, first: Cipher, settings: PostgresStoreOptions): Store {
  let current = first;
  // The groups hold this one object; rekey swaps the key behind it.
  const cipher: Cipher = {
    seal: (column, text) => current.seal(column, text),
    open: (column, sealed) => current.open(column, sealed),
    mac: (purpose, text) => current.mac(purpose, text),
    wipe: () => current.wipe(),
  };
  const ctx: StoreContext = { pool, cipher, now: createClock() };
  const data: Omit<StoreData, "collections"> = {
    ...createCore(ctx),
    ...createTurns(ctx),
    ...createRecords(ctx),
    async close() {
      await pool.end();
      current.wipe();
    },
  };
  const check = integrityCheck(pool, settings);
  let closed = false;
  const guarded = guard(data, "", settings.url) as Omit<StoreData, "collections">;
  return {
    ...guarded,
    // Guarded by itself: a transaction's function is the plugin's, and its errors are the plugin's.
    collections: createCollections(ctx, (err, doing) => storeError(err, doing, settings.url)),
    // The server answers for its pages; health reports what the store itself has seen: nothing damaged.
    health: () => ({ status: "ok" }),
    integrity: () => check,
    // With synchronous_commit on (PostgreSQL's default), a commit has reached the WAL on disk when it returns.
    durable: async () => undefined,
    backup: async (destination) => {
      throw postgresBackupRefusal({
        schema: settings.schema,
        url_env: settings.urlEnv ?? "SPAR_DATABASE_URL",
        file: destination,
      });
    },
    rekey: async (secret) => {
      try {
        const next = await rekeySchema(pool, settings.schema, current, secret);
        const old = current;
        current = next;
        old.wipe();
      } catch (err) {
        throw storeError(err, `re-encrypting the schema ${settings.schema}`, settings.url);
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await guarded.close();
    },
  };
}

/** `SELECT 1` and the migrations checked again: PostgreSQL guards its own pages. Never rejects. */
async function integrityCheck(pool: pg.Pool, settings: PostgresSettings): Promise<StoreCheck> {
  try {
    await pool.query("SELECT 1");
    await verifyMigrations(pool, settings.schema);
    return { status: "ok", checked: true };
  } catch (err) {
    return {
      status: "ok",
      checked: false,
      detail: storeError(
        err,
        `checking the schema ${settings.schema} (version ${SCHEMA_VERSION})`,
        settings.url,
      ).message,
    };
  }
}

/** Every method of `data`, its failures turned into SparErrors (STORE_FAILED, password scrubbed). */
function guard(data: object, path: string, url: string): object {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(data)) {
    const at = path ? `${path}.${name}` : name;
    if (typeof value === "function") {
      out[name] = async (...args: unknown[]) => {
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>)(...args);
        } catch (err) {
          throw storeError(err, at, url);
        }
      };
    } else if (value && typeof value === "object") out[name] = guard(value, at, url);
    else out[name] = value;
  }
  return out;
}
