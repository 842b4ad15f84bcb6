/**
 * What the PostgreSQL store promises beyond the contract suite, against a real server: a dump of
 * its schema holds no plaintext of what users and models wrote, a wrong master secret is refused at
 * open, and the database password never appears in an error.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { SparError } from "../../sdk/errors.js";
import type { Store } from "../../sdk/index.js";
import { gorillaRecordsOver } from "../../test/helpers/gorilla-records.js";
import { pluginData, storeFighters } from "../../test/helpers/plugin-data.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { createIdentityRecords } from "../identity-creed/records.js";
import { createKnowledgeGraph } from "../moves-knowledge/graph.js";
import { createMemories } from "../moves-memory/memories.js";
import { createSchedules } from "../moves-schedule/schedules.js";
import { createPool } from "./connection.js";
import { openPostgresStore } from "./store.js";

const URL_ = TEST_DATABASE_URL ?? "";
const SECRET = "a1".repeat(32);
const CANARY = `canary-${randomUUID()}`;
const PLUGINS = join(import.meta.dirname, "..");
/** The memory and knowledge plugins' data (their own collections) over `store`. */
const memoriesOf = (store: Store) =>
  createMemories(pluginData(store, join(PLUGINS, "moves-memory")), storeFighters(store));
const graphOf = (store: Store) =>
  createKnowledgeGraph(pluginData(store, join(PLUGINS, "moves-knowledge")), storeFighters(store));
const schedulesOf = (store: Store) =>
  createSchedules(pluginData(store, join(PLUGINS, "moves-schedule")), { fighters: storeFighters(store) });

const homes: string[] = [];
const schemas = new Set<string>();
function home(): { home: string; schema: string } {
  const dir = mkdtempSync(join(tmpdir(), "spar-pg-security-"));
  homes.push(dir);
  const schema = schemaForHome(dir);
  schemas.add(schema);
  return { home: dir, schema };
}
afterAll(async () => {
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
  if (TEST_DATABASE_URL) await dropSchemas(URL_, schemas);
});

function open(at: { home: string; schema: string }, secret = SECRET, url = URL_): Promise<Store> {
  return openPostgresStore(
    { home: at.home, masterSecret: Buffer.from(secret) },
    { url, schema: at.schema, poolMax: 3 },
  );
}

async function failure(promise: Promise<unknown>): Promise<SparError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SparError);
  return err as SparError;
}

/** Every row of every table in `schema`, as JSON text (bytea shows as \x hex). */
async function dump(schema: string): Promise<string> {
  const client = new pg.Client({ connectionString: URL_ });
  await client.connect();
  try {
    const tables = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
      [schema],
    );
    const lines: string[] = [];
    for (const { table_name } of tables.rows) {
      const rows = await client.query<{ row: string }>(
        // An alias no table has as a column name (row_to_json(t) would take a column named t over a table aliased t).
        `SELECT row_to_json(dumped)::text AS row FROM "${schema}"."${table_name}" dumped`,
      );
      lines.push(`-- ${table_name}`, ...rows.rows.map((r) => r.row));
    }
    return lines.join("\n");
  } finally {
    await client.end();
  }
}

describe.skipIf(!TEST_DATABASE_URL)(
  `store-postgres security${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("keeps no plaintext of a conversation, a creed, or a memory in a dump", async () => {
      const at = home();
      const store = await open(at);
      const fighter = { id: randomUUID(), name: "canary-keeper", created_at: new Date().toISOString() };
      await store.fighters.insert({
        ...fighter,
        manifest: { name: fighter.name, description: "d", system_prompt: `guard ${CANARY}`, skills: [] },
      });
      const { turn, bout } = await store.turns.begin({
        fighter_id: fighter.id,
        user: { role: "user", content: `please keep ${CANARY}` },
        idempotency: { key: randomUUID(), request_hash: "h" },
      });
      await store.turns.append(turn.id, [
        {
          role: "assistant",
          content: "",
          tool_calls: [{ id: "c1", name: "look", arguments: { q: CANARY } }],
        },
        { role: "tool", tool_call_id: "c1", name: "look", content: `found ${CANARY}` },
      ]);
      await store.turns.finish(turn.id, {
        status: "completed",
        messages: [{ role: "assistant", content: `kept ${CANARY}` }],
        usage: { input_tokens: 1, output_tokens: 1 },
        iterations: 1,
        reply: { ok: true, result: { text: CANARY } },
      });
      await store.messages.compact(bout.id, 2, `summary of ${CANARY}`);
      // A plugin's collections too: the Creed and relationships of identity-creed.
      const identity = createIdentityRecords(pluginData(store, join(PLUGINS, "identity-creed")));
      await identity.creeds.put(fighter.name, {
        identity: CANARY,
        traits: [CANARY],
        directives: [],
        observations: [{ text: CANARY, confidence: 1, seen: 1, last_seen: fighter.created_at }],
        counters: { bouts: 1, conversations: 1, messages: 1 },
        updated_at: fighter.created_at,
      });
      await memoriesOf(store).put(fighter.id, `key ${CANARY}`, `value ${CANARY}`);
      await graphOf(store).add(
        fighter.id,
        [{ name: CANARY, type: CANARY }],
        [{ from: CANARY, to: "x", type: CANARY }],
      );
      await identity.relationships.record(
        fighter.name,
        { with: "telegram:1", kind: "user" },
        CANARY,
        fighter.created_at,
      );
      await schedulesOf(store).add({
        id: randomUUID(),
        fighter_id: fighter.id,
        message: CANARY,
        next_run_at: fighter.created_at,
        created_at: fighter.created_at,
      });
      const gorillas = gorillaRecordsOver(store);
      const run = await gorillas.runs.begin({ gorilla: "canary-gorilla", trigger: "manual" });
      await gorillas.runs.finish(run.id, {
        outcome: "ok",
        usage: { input_tokens: 0, output_tokens: 0 },
        output: CANARY,
      });

      // Everything reads back through the store...
      expect((await store.messages.list(bout.id)).map((m) => m.content)).toContain(`found ${CANARY}`);
      expect((await memoriesOf(store).byWords(fighter.id, CANARY))[0]?.value).toBe(`value ${CANARY}`);
      expect((await graphOf(store).query(fighter.id, [CANARY], 5))[0]?.name).toBe(CANARY);
      expect((await identity.creeds.get(fighter.name))?.identity).toBe(CANARY);
      expect((await identity.relationships.list(fighter.name))[0]?.note).toBe(CANARY);
      await store.close();

      // ...and the dump holds ids and names, but the canary nowhere, as text or as bytea hex.
      const text = await dump(at.schema);
      expect(text).toContain(fighter.id);
      expect(text).toContain("-- messages");
      expect(text).not.toContain(CANARY);
      expect(text.toLowerCase()).not.toContain(Buffer.from(CANARY).toString("hex"));
    });

    it("refuses a wrong master secret at open (STORE_KEY_INVALID), changing nothing", async () => {
      const at = home();
      const store = await open(at);
      await createIdentityRecords(pluginData(store, join(PLUGINS, "identity-creed"))).creeds.put("kept", {
        identity: "i",
        traits: [],
        directives: [],
        observations: [],
        counters: { bouts: 0, conversations: 0, messages: 0 },
        updated_at: new Date().toISOString(),
      });
      await store.close();
      const err = await failure(open(at, "b2".repeat(32)));
      expect(err.code).toBe("STORE_KEY_INVALID");
      expect(err.message).toContain(at.schema);
      const again = await open(at);
      const kept = await createIdentityRecords(pluginData(again, join(PLUGINS, "identity-creed"))).creeds.get(
        "kept",
      );
      expect(kept?.identity).toBe("i");
      await again.close();
    });

    it("never shows the database password in an error", async () => {
      const password = `pw-${randomUUID()}`;
      const server = new URL(URL_);
      const wrong = new URL(URL_);
      wrong.password = password;
      const unreachable = new URL(`postgres://spar:${password}@127.0.0.1:1/${server.pathname.slice(1)}`);
      for (const url of [
        wrong.toString(),
        unreachable.toString(),
        `postgres://spar:${password}@[not a host/x`,
      ]) {
        const err = await failure(open(home(), SECRET, url));
        expect(err.code).toBe("STORE_FAILED");
        expect(err.message).not.toContain(password);
        expect(JSON.stringify(err)).not.toContain(password);
        expect(String(err.stack)).not.toContain(password);
      }
    });

    it("speaks TLS when the URL asks for it (sslmode=verify-full), or fails saying why", async () => {
      const url = new URL(URL_);
      url.searchParams.set("sslmode", "verify-full");
      const pool = createPool({ url: url.toString(), schema: "public", poolMax: 1 });
      try {
        const row = await pool.query<{ ssl: boolean }>(
          "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        );
        expect(row.rows[0]?.ssl).toBe(true);
      } catch (err) {
        // A server without TLS (like a bare local one) refuses; one with an untrusted certificate too.
        expect(String((err as Error).message)).toMatch(/SSL|certificate/i);
      } finally {
        await pool.end();
      }
    });

    it("refuses to write a backup itself, naming the pg_dump command (BACKUP_UNSUPPORTED)", async () => {
      const store = await open(home());
      const destination = join(tmpdir(), `never-${randomUUID()}`);
      const err = await failure(store.backup(destination));
      expect(err.code).toBe("BACKUP_UNSUPPORTED");
      expect(err.message).toContain(`pg_dump --format=custom --schema=`);
      expect(err.message).toContain(`--file=${destination}`);
      await store.close();
    });
  },
);
