/**
 * Migrations against a real server: recorded with their checksums, refused when one changed or the
 * database is newer than the code, and applied once when daemons open one schema at the same time.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { SparError } from "../../sdk/errors.js";
import { dropSchemas, SKIP_REASON, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { createPool } from "./connection.js";
import { checksum, MIGRATIONS, migrate, SCHEMA_VERSION } from "./migrations.js";
import { openPostgresStore } from "./store.js";

const URL_ = TEST_DATABASE_URL ?? "";
const schemas = new Set<string>();
const pools: pg.Pool[] = [];
function schema(): string {
  const name = `t_mig_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  schemas.add(name);
  return name;
}
function pool(name: string): pg.Pool {
  const made = createPool({ url: URL_, schema: name, poolMax: 2 });
  pools.push(made);
  return made;
}
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  if (TEST_DATABASE_URL) await dropSchemas(URL_, schemas);
});

const open = (name: string) =>
  openPostgresStore(
    { home: "/nonexistent-home", masterSecret: Buffer.from("c3".repeat(32)) },
    { url: URL_, schema: name, poolMax: 2 },
  );

async function failure(promise: Promise<unknown>): Promise<SparError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SparError);
  return err as SparError;
}

describe.skipIf(!TEST_DATABASE_URL)(
  `store-postgres migrations${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("records each migration with the sha256 of its SQL, and applies nothing twice", async () => {
      const name = schema();
      const first = pool(name);
      expect(await migrate(first, name)).toEqual(MIGRATIONS.map((m) => m.version));
      expect(await migrate(first, name)).toEqual([]);
      const rows = await first.query<{ version: number; checksum: string }>(
        "SELECT version, checksum FROM spar_migrations ORDER BY version",
      );
      expect(rows.rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, checksum: checksum(m.sql) })));
    });

    it("migrates once when stores open one new schema at the same moment", async () => {
      const name = schema();
      const applied = await Promise.all([0, 1, 2].map(() => migrate(pool(name), name)));
      expect(applied.filter((versions) => versions.length > 0)).toEqual([MIGRATIONS.map((m) => m.version)]);
      const stores = await Promise.all([open(name), open(name)]);
      const counted = await pool(name).query<{ n: number }>("SELECT count(*)::int AS n FROM spar_migrations");
      expect(counted.rows[0]?.n).toBe(MIGRATIONS.length);
      await Promise.all(stores.map((s) => s.close()));
    });

    it("refuses a schema whose recorded checksum differs from the code's, naming the migration", async () => {
      const name = schema();
      const db = pool(name);
      await migrate(db, name);
      await db.query("UPDATE spar_migrations SET checksum = $1 WHERE version = 1", ["0".repeat(64)]);
      const err = await failure(open(name));
      expect(err.code).toBe("STORE_FAILED");
      expect(err.message).toContain(`migration 1 (${MIGRATIONS[0]?.name})`);
      expect(err.message).toContain("checksum");
      await failure(migrate(db, name));
    });

    it("refuses a schema written by a newer Spar", async () => {
      const name = schema();
      const db = pool(name);
      await migrate(db, name);
      await db.query(
        "INSERT INTO spar_migrations (version, name, checksum, applied_at) VALUES ($1, 'future', $2, $3)",
        [SCHEMA_VERSION + 1, "f".repeat(64), new Date().toISOString()],
      );
      const err = await failure(open(name));
      expect(err.code).toBe("STORE_FAILED");
      expect(err.message).toContain("newer Spar");
      expect(err.message).toContain(`schema version ${SCHEMA_VERSION + 1}`);
    });
    it("migration 4 seals the fighter names and Idempotency-Keys an older Spar stored in plaintext", async () => {
      const name = schema();
      const store = await open(name);
      const id = randomUUID();
      const manifest = { name: "plainly", description: "d", system_prompt: "p", skills: [] };
      await store.fighters.insert({ id, name: "plainly", manifest, created_at: new Date().toISOString() });
      await store.turns.begin({
        fighter_id: id,
        user: { role: "user", content: "hi" },
        idempotency: { key: "plain-idem-key", request_hash: "h" },
      });
      await store.close();
      // As a Spar before migration 4 left them: the plain values, and no HMAC or sealed copy.
      const raw = pool(name);
      await raw.query("UPDATE fighters SET name = 'plainly', name_mac = NULL, name_sealed = NULL");
      await raw.query("UPDATE idempotency SET key = 'plain-idem-key', key_mac = NULL, key_sealed = NULL");

      const reopened = await open(name);
      try {
        expect((await reopened.fighters.getByName("plainly"))?.id).toBe(id);
        expect((await reopened.idempotency.get("plain-idem-key"))?.request_hash).toBe("h");
      } finally {
        await reopened.close();
      }
      const left = await raw.query(
        `SELECT (SELECT count(*) FROM fighters WHERE name IS NOT NULL OR name_mac IS NULL)
              + (SELECT count(*) FROM idempotency WHERE key IS NOT NULL OR key_mac IS NULL) AS n`,
      );
      expect(Number(left.rows[0]?.n)).toBe(0);
    });
  },
);
