/**
 * A schema an older Spar wrote, with memories and a knowledge graph in their own sealed tables,
 * opens with every record found through the plugins' collections, the tables gone; daemons opening
 * it together move them once.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import type { Store } from "../../sdk/index.js";
import { pluginData, storeFighters } from "../../test/helpers/plugin-data.js";
import { dropSchemas, SKIP_REASON, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { createKnowledgeGraph } from "../moves-knowledge/graph.js";
import { createMemories } from "../moves-memory/memories.js";
import { asciiFold } from "./cipher.js";
import { createPool } from "./connection.js";
import { createCore } from "./fighters.js";
import { openCipher } from "./keys.js";
import { migrate } from "./migrations.js";
import { openPostgresStore } from "./store.js";

const URL_ = TEST_DATABASE_URL ?? "";
const SECRET = "a7".repeat(32);
const PLUGINS = join(import.meta.dirname, "..");
const schemas = new Set<string>();
afterAll(async () => {
  if (TEST_DATABASE_URL) await dropSchemas(URL_, schemas);
});

const open = (schema: string): Promise<Store> =>
  openPostgresStore(
    { home: "/nonexistent-home", masterSecret: Buffer.from(SECRET) },
    { url: URL_, schema, poolMax: 2 },
  );

/**
 * A schema as the store left it before issue 29: migrated, keyed, with two fighters, and memories,
 * entities and relations written the way its memories.ts and knowledge.ts wrote them.
 */
async function legacySchema(): Promise<{ schema: string; ada: string; bob: string }> {
  const schema = `t_legmem_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  schemas.add(schema);
  const pool: pg.Pool = createPool({ url: URL_, schema, poolMax: 2 });
  try {
    await migrate(pool, schema);
    const cipher = await openCipher(pool, Buffer.from(SECRET), schema);
    const core = createCore({ pool, cipher, now: () => new Date().toISOString() });
    const [ada, bob] = [randomUUID(), randomUUID()];
    for (const [id, name] of [
      [ada, "ada"],
      [bob, "bob"],
    ] as const) {
      await core.fighters.insert({
        id,
        name,
        manifest: { name, description: name, system_prompt: "Be brief." },
        created_at: "2025-11-01T00:00:00.000Z",
      });
    }
    const memory = (id: string, fighter: string, key: string, value: string, score0: number, at: string) =>
      pool.query(
        `INSERT INTO memories (id, fighter_id, key_mac, key, value, score0, scored_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
        [
          id,
          fighter,
          cipher.mac("memories.key", `${fighter}\0${key}`),
          cipher.seal("memories.key", key),
          cipher.seal("memories.value", value),
          score0,
          at,
        ],
      );
    await memory("m1", ada, "tea", "Green tea", 1, "2025-12-05T00:00:00.000Z");
    await memory("m2", ada, "hotel", "Casa do Tejo", 2.5, "2025-12-07T00:00:00.000Z");
    await memory("m3", bob, "tea", "Never", 1, "2025-12-03T00:00:00.000Z");
    const entity = (id: string, name: string, type: string, at: string) =>
      pool.query(
        `INSERT INTO kg_entities (id, fighter_id, name, type, identity_mac, name_mac, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          id,
          ada,
          cipher.seal("kg_entities.name", name),
          cipher.seal("kg_entities.type", type),
          cipher.mac("kg.identity", `${ada}\0${asciiFold(name)}\0${asciiFold(type)}`),
          cipher.mac("kg.name", `${ada}\0${asciiFold(name)}`),
          at,
        ],
      );
    await entity("e1", "Lovelace", "Person", "2025-12-01T00:00:01.000Z");
    await entity("e2", "Babbage", "thing", "2025-12-01T00:00:02.000Z");
    await entity("e3", "Engine", "MACHINE", "2025-12-01T00:00:03.000Z");
    await entity("e4", "CAFÉ", "place", "2025-12-01T00:00:04.000Z");
    const relation = (from: string, to: string, type: string, at: string) =>
      pool.query(
        `INSERT INTO kg_relations (fighter_id, from_id, to_id, type, type_mac, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [
          ada,
          from,
          to,
          cipher.seal("kg_relations.type", type),
          cipher.mac("kg.relation", `${ada}\0${asciiFold(type)}`),
          at,
        ],
      );
    await relation("e1", "e2", "Knows", "2025-12-01T00:00:05.000Z");
    await relation("e3", "e1", "programmed by", "2025-12-01T00:00:06.000Z");
    cipher.wipe();
    return { schema, ada, bob };
  } finally {
    await pool.end();
  }
}

async function tablesLeft(schema: string): Promise<string[]> {
  const pool = createPool({ url: URL_, schema, poolMax: 1 });
  try {
    const found = await pool.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables
       WHERE table_schema = $1 AND table_name IN ('memories', 'kg_entities', 'kg_relations')`,
      [schema],
    );
    return found.rows.map((r) => r.name);
  } finally {
    await pool.end();
  }
}

describe.skipIf(!TEST_DATABASE_URL)(
  `store-postgres: legacy memories and knowledge${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("moves every memory, entity and relation into the plugins' collections at open, and drops the tables", async () => {
      const { schema, ada, bob } = await legacySchema();
      const store = await open(schema);
      try {
        const memories = createMemories(
          pluginData(store, join(PLUGINS, "moves-memory")),
          storeFighters(store),
        );
        expect(await memories.candidates(ada, [])).toEqual([
          {
            id: "m2",
            fighter_id: ada,
            key: "hotel",
            value: "Casa do Tejo",
            score0: 2.5,
            scored_at: "2025-12-07T00:00:00.000Z",
            created_at: "2025-12-07T00:00:00.000Z",
            matches: 0,
          },
          {
            id: "m1",
            fighter_id: ada,
            key: "tea",
            value: "Green tea",
            score0: 1,
            scored_at: "2025-12-05T00:00:00.000Z",
            created_at: "2025-12-05T00:00:00.000Z",
            matches: 0,
          },
        ]);
        expect((await memories.candidates(bob, ["tea"])).map((m) => m.id)).toEqual(["m3"]);
        // One memory per fighter and key, as before: storing under "tea" again replaces m1.
        expect(await memories.put(ada, "tea", "Oolong")).toMatchObject({ id: "m1", value: "Oolong" });

        const graph = createKnowledgeGraph(
          pluginData(store, join(PLUGINS, "moves-knowledge")),
          storeFighters(store),
        );
        expect(await graph.query(ada, ["lovelace"], 5)).toEqual([
          {
            name: "Lovelace",
            type: "Person",
            relations: [
              { from: "Lovelace", to: "Babbage", type: "Knows" },
              { from: "Engine", to: "Lovelace", type: "programmed by" },
            ],
          },
        ]);
        expect((await graph.query(ada, [], 10)).map((e) => e.name)).toEqual([
          "CAFÉ",
          "Engine",
          "Babbage",
          "Lovelace",
        ]);
        // Identity as it was: names and types in any ASCII case, relations by their folded type.
        expect(
          await graph.add(
            ada,
            [
              { name: "lovelace", type: "PERSON" },
              { name: "engine", type: "machine" },
              { name: "café", type: "place" },
            ],
            [{ from: "LOVELACE", to: "babbage", type: "knows" }],
          ),
        ).toEqual({ entities_added: 1, entities_merged: 2, relations_added: 0 });
      } finally {
        await store.close();
      }
      expect(await tablesLeft(schema)).toEqual([]);
      // Opening again finds nothing left to move and everything where it was.
      const again = await open(schema);
      try {
        const memories = createMemories(
          pluginData(again, join(PLUGINS, "moves-memory")),
          storeFighters(again),
        );
        expect((await memories.candidates(ada, [])).map((m) => m.id)).toEqual(["m1", "m2"]);
      } finally {
        await again.close();
      }
    });

    it("moves them once when daemons open the schema at the same moment", async () => {
      const { schema, ada } = await legacySchema();
      const stores = await Promise.all([open(schema), open(schema), open(schema)]);
      try {
        const memories = createMemories(
          pluginData(stores[0] as Store, join(PLUGINS, "moves-memory")),
          storeFighters(stores[0] as Store),
        );
        expect((await memories.candidates(ada, [])).map((m) => m.id)).toEqual(["m2", "m1"]);
        const graph = createKnowledgeGraph(
          pluginData(stores[1] as Store, join(PLUGINS, "moves-knowledge")),
          storeFighters(stores[1] as Store),
        );
        expect(await graph.query(ada, [], 10)).toHaveLength(4);
        expect((await graph.query(ada, ["lovelace"], 1))[0]?.relations).toHaveLength(2);
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
      expect(await tablesLeft(schema)).toEqual([]);
    });
  },
);
