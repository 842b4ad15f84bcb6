/**
 * Migrations against a real server: a new schema is made from the baseline, and has the schema one of
 * the previous release (the upgrade fixture) upgrades to; an applied history is checked (checksums
 * pinned; a changed or unknown migration, a newer schema and one older than the previous release
 * refused); pending migrations apply all or nothing, once when daemons open one schema at the same
 * time. What is moved into plugins' collections is tested for every store in
 * test/contract/store-upgrade.test.ts.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { dropSchemas, SKIP_REASON, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { UPGRADE_FIXTURES } from "../../test/helpers/previous-release.js";
import { createPool } from "./connection.js";
import { checksum, MIGRATIONS, type Migration, migrate, RETIRED, SCHEMA_VERSION } from "./migrations.js";
import { openPostgresStore } from "./store.js";

const URL_ = TEST_DATABASE_URL ?? "";
const SECRET = "c3".repeat(32);
const HISTORY = [
  ...RETIRED,
  ...MIGRATIONS.map((m) => ({ version: m.version, name: m.name, checksum: checksum(m.sql) })),
];
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

const open = (name: string, secret = Buffer.from(SECRET)) =>
  openPostgresStore(
    { home: "/nonexistent-home", masterSecret: secret },
    { url: URL_, schema: name, poolMax: 2 },
  );

/** Every column, index and constraint of `name` (its name taken out), and the recorded history. */
async function schemaOf(name: string) {
  const db = pool(name);
  const rows = async (sql: string) =>
    JSON.parse(JSON.stringify((await db.query(sql, [name])).rows).replaceAll(`${name}.`, "")) as unknown[];
  return {
    columns: await rows(
      `SELECT table_name, column_name, ordinal_position, data_type, is_nullable, column_default, is_identity,
         collation_name FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
    ),
    indexes: await rows(
      "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY 2",
    ),
    constraints: await rows(
      `SELECT conrelid::regclass::text AS on, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
       WHERE connamespace = $1::regnamespace ORDER BY 1, 2`,
    ),
    history: (await db.query("SELECT version, name, checksum FROM spar_migrations ORDER BY version")).rows,
  };
}

describe.skipIf(!TEST_DATABASE_URL)(
  `store-postgres migrations${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("makes a new schema from the baseline, recorded as every version, and applies nothing twice", async () => {
      const name = schema();
      const first = pool(name);
      expect(await migrate(first, name)).toEqual(HISTORY.map((m) => m.version));
      expect(await migrate(first, name)).toEqual([]);
      const rows = await first.query("SELECT version, name, checksum FROM spar_migrations ORDER BY version");
      expect(rows.rows).toEqual(HISTORY);
    });

    it("keeps released migrations byte for byte: their checksums are in users' schemas", () => {
      expect(HISTORY.map((m) => [m.version, m.checksum])).toEqual([
        [1, "11888306647933c91aeb30fa0230bf86d83099e4aa7104bcad72e3bcf418aaf2"],
        [2, "563f060d2c6d5b190de5defae17572877d3219db2c5f618d8633e5f5afca9aa9"],
        [3, "22b4165c3ed81bb70a8dcf5a95c71de09e971343a44c9bd2df26d07234b8af52"],
        [4, "7aa26e8f8583ce3bb7f1fc98f1670a3015bbe2bb493f35ceaa000e74fa736922"],
        [5, "94fcaf3c85a48591a8a45f12042f881a68715b399b9bd38b2bc0d578bab0be5e"],
        [6, "2f06d4cd09d7dc9a139c975c99a3de318a1007a47636b860f3cd9efd677fd0c2"],
        [7, "f302d94493f6dfee11a6571a69992dd9d2ac166986d5bbfff5e5ac1b28b3b5a7"],
        [8, "85c993cfc2ce11b0403d35ec6ade3ba36c4881ff30d20e6b85e4c37ae651b9fd"],
        [9, "6c43cd310329289fee4140d3c04ca62b5fffca699470702bff0fc369de2c3f36"],
      ]);
    });

    it("gives a new schema the one a schema of the previous release is upgraded to", async () => {
      const upgraded = schema();
      const client = new pg.Client({ connectionString: URL_ });
      await client.connect();
      try {
        const dump = readFileSync(join(UPGRADE_FIXTURES, "postgres", "dump.sql"), "utf8");
        await client.query(dump.replaceAll("__SPAR_SCHEMA__", upgraded));
      } finally {
        await client.end();
      }
      await (await open(upgraded, readFileSync(join(UPGRADE_FIXTURES, "postgres", "master.key")))).close();
      const fresh = schema();
      await (await open(fresh)).close();
      const baseline = await schemaOf(fresh);
      expect(baseline).toEqual(await schemaOf(upgraded));
      // The Ring's records and the plugins' collections; none of the tables that moved into collections.
      expect([...new Set(baseline.columns.map((c) => (c as { table_name: string }).table_name))]).toEqual([
        "bout_summaries",
        "bouts",
        "collection_rows",
        "collection_schemas",
        "fighters",
        "idempotency",
        "messages",
        "nonces",
        "spar_meta",
        "spar_migrations",
        "turns",
        "usage",
      ]);
    });

    it("migrates once when stores open one new schema at the same moment", async () => {
      const name = schema();
      const applied = await Promise.all([0, 1, 2].map(() => migrate(pool(name), name)));
      expect(applied.filter((versions) => versions.length > 0)).toEqual([HISTORY.map((m) => m.version)]);
      const stores = await Promise.all([open(name), open(name)]);
      const counted = await pool(name).query<{ n: number }>("SELECT count(*)::int AS n FROM spar_migrations");
      expect(counted.rows[0]?.n).toBe(HISTORY.length);
      await Promise.all(stores.map((s) => s.close()));
    });

    // Each edit of a new schema's history, and how opening it is refused.
    const at = "'2026-01-01T00:00:00.000Z'";
    const REFUSALS: { what: string; edit: string; code: string; message: RegExp; extra?: object }[] = [
      {
        what: "a released migration whose checksum changed",
        edit: `UPDATE spar_migrations SET checksum = '${"0".repeat(64)}' WHERE version = 1`,
        code: "STORE_FAILED",
        message: /migration 1 \(every-table\) .*the recorded checksum does not match/,
      },
      {
        what: "a migration of the upgrade window whose checksum changed",
        edit: `UPDATE spar_migrations SET checksum = '${"0".repeat(64)}' WHERE version = 5`,
        code: "STORE_FAILED",
        message: /migration 5 \(plugin collections\) .*checksum/,
      },
      {
        what: "a migration unknown here",
        edit: `INSERT INTO spar_migrations VALUES (0, 'mystery', 'x', ${at})`,
        code: "STORE_FAILED",
        message: /records migration 0 \(mystery\), unknown here/,
      },
      {
        what: "a schema written by a newer Spar",
        edit: `INSERT INTO spar_migrations VALUES (${SCHEMA_VERSION + 1}, 'future', 'x', ${at})`,
        code: "STORE_FAILED",
        message: new RegExp(
          `newer Spar \\(schema version ${SCHEMA_VERSION + 1}, this one knows up to ${SCHEMA_VERSION}\\)`,
        ),
      },
      {
        what: "a schema older than the previous release",
        edit: "DELETE FROM spar_migrations WHERE version >= 4",
        code: "STORE_TOO_OLD",
        message:
          /has schema version 3, older than this Spar upgrades \(version 4 and later\)\. Open it once with an earlier Spar/,
        extra: { schema_version: 3, oldest_upgraded: 4 },
      },
    ];
    it.each(REFUSALS)("refuses $what ($code), changing nothing", async ({ edit, code, message, extra }) => {
      const name = schema();
      await (await open(name)).close();
      await pool(name).query(edit);
      const before = await schemaOf(name);
      await expect(open(name)).rejects.toMatchObject({
        code,
        message: expect.stringMatching(message),
        ...(extra ? { extra } : {}),
      });
      await expect(migrate(pool(name), name)).rejects.toMatchObject({ code });
      expect(await schemaOf(name)).toEqual(before);
    });

    it("applies pending migrations all or nothing", async () => {
      const name = schema();
      const broken: Migration[] = [
        ...MIGRATIONS,
        { version: SCHEMA_VERSION + 1, name: "broken", sql: "CREATE TABLE (" },
      ];
      await expect(migrate(pool(name), name, broken)).rejects.toThrow();
      const left = await pool(name).query("SELECT to_regclass('fighters')::text AS t");
      expect(left.rows[0]).toEqual({ t: null });
    });

    it("seals the fighter names and Idempotency-Keys a Spar before version 4 stored in plaintext", async () => {
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
