/**
 * Migrations against a real server: recorded with their checksums, refused when one changed or the
 * database is newer than the code, and applied once when daemons open one schema at the same time.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { SparError } from "../../sdk/errors.js";
import { pluginData } from "../../test/helpers/plugin-data.js";
import { dropSchemas, SKIP_REASON, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { createIdentityRecords } from "../identity-creed/records.js";
import { createPool } from "./connection.js";
import { openCipher } from "./keys.js";
import { checksum, MIGRATIONS, migrate, SCHEMA_VERSION } from "./migrations.js";
import { openPostgresStore } from "./store.js";

const URL_ = TEST_DATABASE_URL ?? "";
const PLUGINS = join(import.meta.dirname, "..");
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

    it("moves an older Spar's creeds and relationships, sealed or plain, into identity-creed's collections", async () => {
      const name = schema();
      const raw = pool(name);
      await migrate(raw, name);
      const cipher = await openCipher(raw, Buffer.from("c3".repeat(32)), name);
      const creed = (identity: string) => ({
        identity,
        traits: ["warm"],
        directives: [],
        observations: [
          { text: "likes tea", confidence: 0.5, seen: 1, last_seen: "2026-01-02T00:00:00.000Z" },
        ],
        counters: { bouts: 1, conversations: 2, messages: 4 },
        updated_at: "2026-01-02T00:00:00.000Z",
      });
      // As the Store's creeds.put and relationships.record wrote them (names sealed, with HMACs)...
      const putCreed = (fighter: string, document: object, at: string) =>
        raw.query(
          `INSERT INTO creeds (fighter_mac, fighter_sealed, document, updated_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (fighter_mac) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at`,
          [
            cipher.mac("fighters.name", fighter),
            cipher.seal("creeds.fighter_sealed", fighter),
            cipher.seal("creeds.document", JSON.stringify(document)),
            at,
          ],
        );
      const record = (fighter: string, other: string, kind: string, note: string, at: string) =>
        raw.query(
          `INSERT INTO relationships (fighter_mac, fighter_sealed, other_mac, other_sealed, kind, exchanges,
             last_contact, note)
           VALUES ($1, $2, $3, $4, $5, 1, $6, $7)
           ON CONFLICT (fighter_mac, other_mac) DO UPDATE SET exchanges = relationships.exchanges + 1,
             kind = excluded.kind, last_contact = excluded.last_contact, note = excluded.note`,
          [
            cipher.mac("fighters.name", fighter),
            cipher.seal("relationships.fighter_sealed", fighter),
            cipher.mac("relationships.other", other),
            cipher.seal("relationships.other_sealed", other),
            kind,
            at,
            cipher.seal("relationships.note", note),
          ],
        );
      const at = (day: number) => `2026-01-0${day}T00:00:00.000Z`;
      await putCreed("ada", creed("first"), at(1));
      await putCreed("ada", creed("Ada"), at(2));
      await record("ada", "bob", "fighter", "met", at(1));
      await record("ada", "telegram:42", "user", "hi", at(2));
      await record("ada", "bob", "fighter", "again", at(3));
      // ...and as a Spar before migration 4 left them: the names plain.
      await raw.query("INSERT INTO creeds (fighter_name, document, updated_at) VALUES ($1, $2, $3)", [
        "plainly",
        cipher.seal("creeds.document", JSON.stringify(creed("Plain"))),
        at(1),
      ]);
      await raw.query(
        `INSERT INTO relationships (fighter_name, other, kind, exchanges, last_contact, note)
         VALUES ('plainly', 'ada', 'fighter', 4, $1, $2)`,
        [at(2), cipher.seal("relationships.note", "plain note")],
      );
      cipher.wipe();

      const store = await open(name);
      try {
        const { creeds, relationships } = createIdentityRecords(
          pluginData(store, join(PLUGINS, "identity-creed")),
        );
        expect(await creeds.get("ada")).toEqual(creed("Ada"));
        expect(await creeds.get("plainly")).toEqual(creed("Plain"));
        expect(await relationships.list("ada")).toEqual([
          { with: "bob", kind: "fighter", exchanges: 2, last_contact: at(3), note: "again" },
          { with: "telegram:42", kind: "user", exchanges: 1, last_contact: at(2), note: "hi" },
        ]);
        expect(await relationships.list("plainly")).toEqual([
          { with: "ada", kind: "fighter", exchanges: 4, last_contact: at(2), note: "plain note" },
        ]);
        // What was moved is written on as the plugin writes.
        await relationships.record("ada", { with: "bob", kind: "fighter" }, "third", at(4));
        expect((await relationships.list("ada"))[0]).toMatchObject({ with: "bob", exchanges: 3 });
      } finally {
        await store.close();
      }
      const left = await raw.query<{ creeds: string | null; relationships: string | null }>(
        "SELECT to_regclass('creeds')::text AS creeds, to_regclass('relationships')::text AS relationships",
      );
      expect(left.rows[0]).toEqual({ creeds: null, relationships: null });
      // A second open finds nothing left to move.
      await (await open(name)).close();
    });
  },
);
