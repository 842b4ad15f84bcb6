/**
 * The connection side: the pool (one schema, on its search_path), transactions, and errors made safe
 * to show. The database URL carries the password, so every driver message is scrubbed of it before
 * it becomes a SparError; nothing here logs the URL.
 */
import pg from "pg";
import { isSparError, observe, observing, SparError } from "../../sdk/index.js";

/** The parts of `[store.postgres]` the store needs, the URL already read from the environment. */
export interface PostgresSettings {
  /** postgres://user:pass@host:port/db[?sslmode=…]; `sslmode=require|verify-full` turns TLS on (pg reads it). */
  url: string;
  /** The schema Spar's tables live in (an identifier, checked by the manifest and again here). */
  schema: string;
  /** The most connections the pool opens. */
  poolMax: number;
}

/** Something queries go through: the pool, or one client inside a transaction. */
export type Db = Pick<pg.PoolClient, "query">;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

// bigint (int8) columns (identity seqs, counters, sums) read as numbers: they stay far below 2^53.
const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 && format !== "binary"
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
};

/** Opens a pool whose every connection works in `settings.schema` (search_path set at connect). */
export function createPool(settings: PostgresSettings): pg.Pool {
  if (!SCHEMA_NAME.test(settings.schema)) {
    throw new SparError(
      "CONFIG_INVALID",
      `[store.postgres] schema must be a lowercase identifier (a-z, 0-9, _), not ${JSON.stringify(settings.schema)}`,
      { path: "store.postgres.schema" },
    );
  }
  const pool = new pg.Pool({
    connectionString: settings.url,
    max: settings.poolMax,
    options: `-c search_path=${settings.schema}`,
    types: TYPES,
    connectionTimeoutMillis: 10_000,
    application_name: "spar",
  });
  // An idle client whose server went away emits 'error' on the pool; unhandled it would crash the
  // daemon. The next query reconnects (or fails with STORE_FAILED).
  pool.on("error", () => undefined);
  return pool;
}

const COMMIT = { kind: "store_commit", store: "postgres" } as const;
const commitEnd = (_result: unknown, error: unknown) => ({ outcome: error ? "error" : "ok" });

/** Runs `work` in one transaction on one client; rolls back on any error. */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  begin = "BEGIN",
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin);
    const result = await work(client);
    // The commit is the store's measured point (README "Metrics and traces"), free while none observes.
    await (observing() ? observe(COMMIT, () => client.query("COMMIT"), commitEnd) : client.query("COMMIT"));
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch((rollback: Error) => {
      broken = rollback;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/** PostgreSQL's SQLSTATE for a unique or primary-key violation. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "23505";
}

/**
 * `text` with the URL's password (as written and decoded) and the whole URL replaced, so a driver
 * message can be shown. Short passwords are scrubbed too: a leak is worse than an odd-looking message.
 */
export function redact(text: string, url: string): string {
  let out = text.split(url).join("postgres://…");
  let password = "";
  try {
    password = new URL(url).password;
  } catch {
    // A URL the driver could not parse either: its raw text was removed above.
  }
  for (const secret of new Set([password, safeDecode(password)])) {
    if (secret) out = out.split(secret).join("***");
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Any failure as a SparError: a SparError as it is, anything else STORE_FAILED with a scrubbed message. */
export function storeError(err: unknown, doing: string, url: string): SparError {
  if (isSparError(err)) return err;
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  return new SparError(
    "STORE_FAILED",
    redact(
      `PostgreSQL store: ${doing} failed: ${message}${typeof code === "string" ? ` (${code})` : ""}`,
      url,
    ),
  );
}
