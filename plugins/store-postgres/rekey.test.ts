/**
 * Master key rotation against a real server: after `rekey` only the new secret opens the schema,
 * every sealed value reads back, and the lookups that go through HMACs (a memory's key, an entity's
 * name, in the plugins' collections) still find what they found.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createPluginData } from "../../sdk/collection-engine.js";
import type { Collection, CollectionDeclaration, Store } from "../../sdk/index.js";
import { pluginData, storeFighters } from "../../test/helpers/plugin-data.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { type CreedDocument, createIdentityRecords } from "../identity-creed/records.js";
import { createKnowledgeGraph } from "../moves-knowledge/graph.js";
import { createMemories } from "../moves-memory/memories.js";
import { importDocs } from "./collections.js";
import { inTransaction } from "./connection.js";
import { openCipher } from "./keys.js";
import { openPostgresStore } from "./store.js";

const URL_ = TEST_DATABASE_URL ?? "";
const OLD = "e5".repeat(32);
const NEW = "f6".repeat(32);
const homes: string[] = [];
const PLUGINS = join(import.meta.dirname, "..");
/** The memory and knowledge plugins' data (their own collections) over `store`. */
const memoriesOf = (store: Store) =>
  createMemories(pluginData(store, join(PLUGINS, "moves-memory")), storeFighters(store));
const graphOf = (store: Store) =>
  createKnowledgeGraph(pluginData(store, join(PLUGINS, "moves-knowledge")), storeFighters(store));
afterAll(async () => {
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
  if (TEST_DATABASE_URL) await dropSchemas(URL_, homes.map(schemaForHome));
});

function open(home: string, secret: string): Promise<Store> {
  return openPostgresStore(
    { home, masterSecret: Buffer.from(secret) },
    { url: URL_, schema: schemaForHome(home), poolMax: 2 },
  );
}

const creed: CreedDocument = {
  identity: "kept",
  traits: [],
  directives: [],
  observations: [],
  counters: { bouts: 0, conversations: 0, messages: 0 },
  updated_at: "2026-01-01T00:00:00.000Z",
};

async function codeOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => "opened",
    (e: { code?: unknown }) => e.code,
  );
}

describe.skipIf(!TEST_DATABASE_URL)(
  `store-postgres rekey${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("re-encrypts everything under the new secret; the old one no longer opens", async () => {
      const home = mkdtempSync(join(tmpdir(), "spar-pg-rekey-"));
      homes.push(home);
      const store = await open(home, OLD);
      const fighter = { id: randomUUID(), name: "rekeyed", created_at: new Date().toISOString() };
      const manifest = { name: fighter.name, description: "d", system_prompt: "secret prompt", skills: [] };
      await store.fighters.insert({ ...fighter, manifest });
      const { bout } = await store.turns.begin({
        fighter_id: fighter.id,
        user: { role: "user", content: "hello" },
        idempotency: { key: "rekey-idem-1", request_hash: "h1" },
      });
      // A plugin's collections too: the Creed and relationships of identity-creed.
      const identity = createIdentityRecords(pluginData(store, join(PLUGINS, "identity-creed")));
      await identity.creeds.put(fighter.name, creed);
      await identity.relationships.record(
        fighter.name,
        { with: "ada", kind: "fighter" },
        "met",
        "2026-01-01T00:00:00Z",
      );
      await memoriesOf(store).put(fighter.id, "Drink", "green tea");
      await graphOf(store).add(
        fighter.id,
        [{ name: "Tea", type: "drink" }],
        [{ from: "Tea", to: "Cup", type: "in" }],
      );

      await store.rekey(Buffer.from(NEW));
      // The open store goes on under the new key.
      expect((await store.messages.list(bout.id))[0]?.content).toBe("hello");
      await store.close();

      expect(await codeOf(open(home, OLD))).toBe("STORE_KEY_INVALID");
      const after = await open(home, NEW);
      expect((await after.fighters.get(fighter.id))?.manifest).toEqual(manifest);
      // Names and Idempotency-Keys are found by HMACs, recomputed under the new key.
      expect((await after.fighters.getByName("rekeyed"))?.id).toBe(fighter.id);
      expect((await after.idempotency.get("rekey-idem-1"))?.request_hash).toBe("h1");
      const kept = createIdentityRecords(pluginData(after, join(PLUGINS, "identity-creed")));
      expect(await kept.creeds.get("rekeyed")).toEqual(creed);
      expect((await kept.relationships.list("rekeyed")).map((r) => [r.with, r.note])).toEqual([
        ["ada", "met"],
      ]);
      expect((await after.messages.list(bout.id)).map((m) => m.content)).toEqual(["hello"]);
      const memories = memoriesOf(after);
      expect((await memories.byWords(fighter.id, "tea")).map((m) => m.key)).toEqual(["Drink"]);
      // The same key replaces the memory (its HMAC was recomputed), and entities still merge.
      await memories.put(fighter.id, "Drink", "coffee");
      expect((await memories.recent(fighter.id, 100)).map((m) => m.value)).toEqual(["coffee"]);
      const graph = graphOf(after);
      expect(
        await graph.add(
          fighter.id,
          [{ name: "TEA", type: "Drink" }],
          [{ from: "tea", to: "cup", type: "IN" }],
        ),
      ).toEqual({
        entities_added: 0,
        entities_merged: 1,
        relations_added: 0,
      });
      expect((await graph.query(fighter.id, ["tea"], 5))[0]?.relations).toEqual([
        { from: "Tea", to: "Cup", type: "in" },
      ]);
      await after.close();
    });

    it("re-encrypts plugins' collections: documents open, keys and indexed strings are found under the new key", async () => {
      const home = mkdtempSync(join(tmpdir(), "spar-pg-rekey-"));
      homes.push(home);
      const store = await open(home, OLD);
      const collections: Record<string, CollectionDeclaration> = {
        notes: {
          version: 1,
          key: "id",
          fields: {
            id: { type: "string" },
            who: { type: "string" },
            tag: { type: "string", optional: true },
            body: { type: "string", optional: true, text: true },
          },
          indexes: [["who"]],
          unique: [["tag"]],
        },
      };
      const data = (s: Store) =>
        createPluginData({ plugin: "moves-rekeyed", data: { collections }, store: () => s.collections })
          .notes as Collection;
      const notes = data(store);
      await notes.insert({ id: "n1", who: "ann", tag: "red", body: "a copper kettle" });
      await notes.insert({ id: "n2", who: "bob" });
      // A row imported after the collection was made: not yet slotted when the rekey comes.
      const pool = new pg.Pool({ connectionString: URL_, options: `-c search_path=${schemaForHome(home)}` });
      try {
        const cipher = await openCipher(pool, Buffer.from(OLD), schemaForHome(home));
        await inTransaction(pool, (client) =>
          importDocs(client, cipher, "moves-rekeyed", "notes", [
            { key: "n3", doc: { id: "n3", who: "ann", body: "kettles" } },
          ]),
        );
        cipher.wipe();
      } finally {
        await pool.end();
      }

      await store.rekey(Buffer.from(NEW));
      // The open store goes on under the new key, its collections already made.
      expect(await notes.get("n1")).toEqual({ id: "n1", who: "ann", tag: "red", body: "a copper kettle" });
      // The words' tokens are MACs under the store key: made again under the new one.
      expect((await notes.rank("copper kettle")).map((r) => r.doc.id)).toEqual(["n1"]);
      expect((await notes.find({ where: { who: "bob" } })).map((d) => d.id)).toEqual(["n2"]);
      expect(await notes.insert({ id: "n1", who: "x" }).catch((e: { code: string }) => e.code)).toBe(
        "CONFLICT",
      );
      expect(
        await notes.insert({ id: "n4", who: "x", tag: "red" }).catch((e: { code: string }) => e.code),
      ).toBe("CONFLICT");
      await store.close();

      const after = await open(home, NEW);
      const again = data(after);
      expect(await again.get("n2")).toEqual({ id: "n2", who: "bob" });
      expect((await again.find({ where: { who: "ann" } })).map((d) => d.id)).toEqual(["n1", "n3"]);
      expect(await again.add({ id: "n3", who: "y" })).toBe(false);
      // The row imported before the rekey is indexed once slotted, under the new key.
      expect((await again.rank("kettle")).map((r) => r.doc.id).sort()).toEqual(["n1", "n3"]);
      await after.close();
    });

    it("opens with master.key.next when a rotation committed but the key files were not yet swapped", async () => {
      const home = mkdtempSync(join(tmpdir(), "spar-pg-rekey-"));
      homes.push(home);
      writeFileSync(join(home, "master.key"), OLD, { mode: 0o600 });
      const store = await open(home, OLD);
      await store.rekey(Buffer.from(NEW));
      await store.close();
      // `spar rekey` was stopped after the commit: master.key still holds the old secret.
      writeFileSync(join(home, "master.key.next"), NEW, { mode: 0o600 });
      const reopened = await open(home, OLD);
      await reopened.close();
      // The rotation was finished on that open: master.key now holds the new secret.
      expect(readFileSync(join(home, "master.key"), "utf8")).toBe(NEW);
      expect(existsSync(join(home, "master.key.next"))).toBe(false);
      expect(await codeOf(open(home, NEW))).toBe("opened");
    });
  },
);
