import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import { afterAll, describe, expect, it } from "vitest";
import type { Store } from "../../sdk/index.js";
import { pluginData, storeFighters } from "../../test/helpers/plugin-data.js";
import { createIdentityRecords } from "../identity-creed/records.js";
import { createKnowledgeGraph } from "../moves-knowledge/graph.js";
import { createMemories } from "../moves-memory/memories.js";
import { deriveKey, rawKeyLiteral } from "./key.js";
import { checksum, MIGRATIONS, type Migration, migrate } from "./migrations.js";
import { openRetained } from "./retain.js";
import { DB_FILE, openSqliteStore, SALT_FILE } from "./store.js";

const SECRET = "migrations";

const homes: string[] = [];
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-migrations-"));
  homes.push(home);
  return home;
}
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function open(home: string): Promise<Store> {
  return openSqliteStore({ home, masterSecret: Buffer.from(SECRET) });
}

const PLUGINS = join(import.meta.dirname, "..");
const memoriesOf = (store: Store) =>
  createMemories(pluginData(store, join(PLUGINS, "moves-memory")), storeFighters(store));
const graphOf = (store: Store) =>
  createKnowledgeGraph(pluginData(store, join(PLUGINS, "moves-knowledge")), storeFighters(store));

/**
 * The database opened with the right key behind the store's back, as someone editing it by hand
 * would. Retained (retain.ts) and without db.pragma(), like the store's own connections.
 */
async function keyedDb(home: string, salt: Buffer): Promise<Database.Database> {
  const literal = rawKeyLiteral(await deriveKey(Buffer.from(SECRET), salt));
  const db = openRetained(join(home, DB_FILE), {});
  db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
  db.key(literal);
  return db;
}

describe("migrate", () => {
  const plainDb = () => openRetained(":memory:", {});
  // Numbers are not contiguous (each move of issue 29 took its own): the next is past the highest.
  const next = Math.max(...MIGRATIONS.map((m) => m.version)) + 1;

  it("records each migration with its checksum and applies nothing twice", () => {
    const db = plainDb();
    expect(migrate(db, "mem")).toEqual(MIGRATIONS.map((m) => m.version));
    expect(migrate(db, "mem")).toEqual([]);
    const row = db.prepare("SELECT version, name, checksum FROM schema_migrations WHERE version = 1").get();
    expect(row).toMatchObject({ version: 1, name: MIGRATIONS[0]?.name });
    expect((row as { checksum: string }).checksum).toMatch(/^[0-9a-f]{64}$/);
    db.close();
  });

  it("keeps released migrations byte for byte: their checksums are in users' databases", () => {
    expect(MIGRATIONS.map((m) => [m.version, checksum(m.sql)])).toEqual([
      [1, "1df85f0b0acb104b6f6b4ed95cef078b267b109903cc769618e0dc8d5a943c55"],
      [2, "1ae3eaa352f8bf4d862e9913d14269d37c2cbcbb89afc964f0788936801098fd"],
      [3, "7053011e25e8422cac2f8f7baea623986ff09df073cd00499200d767736ea825"],
      [4, "9fd716acb463c2b8235e1e7c516672aede75d735576c53f1946ab4ac18c11f09"],
      [5, "9df41fe93f1e5387e66c2f6689e2236df496f867356d8d992f1123e3b6817e32"],
      [6, "f99877f43d88ce3b4a57469d321d2fa86a13b667eb6587a362f8884b6bde8d13"],
      [7, "c6c5554331498ec5103344658507ecd159d619037810a5705adddd29677f36db"],
      [8, "29da9473587ccbad234f005005aac7a0594eb15e11546efe18a8160609faa283"],
      [9, "5dbcd30167287b1abe22d6ddaac30bce896ac7a76a5fc67765f620db608ad3bb"],
      [10, "5c3af4fe6d7772b0bd7247e19d490f65267be5373bba16b41ea55751a33048d0"],
      [11, "ec9b703b576539a7e1491bf59148efe776cdb103cb1493823d5ddac5b02c49d6"],
      [12, "8d9a38ad1cf2e35b907f43d5e863ca56eb429956582e7c9822fa591ddbf48a6d"],
      [13, "1c8c394fb70c7ea241ed5d1d0dfcb9ef4c4a930e9d754804674ab709af0f3233"],
      [14, "75ab8a7818a539998b8b0d24ddbd4c9b958d172b6831c25f44479a54218a103a"],
      [15, "988eb93c982ef6d90561e588e0945f0a9acdd34bc63b172b3214da6814b2111b"],
      [16, "decaeb409eb068467de47ce91ba4888d75bb9733208af413846f28b92d8fee18"],
      [17, "859f4df201ddbea2e68d8eab5a33093cff6937698643ea1dcdecf715da289fed"],
      [18, "5113d0c59e4b3ecc49b57cc285749b81b37cda34656d0f1598c4eb1a5e5adb73"],
      [19, "969223b6fcb5c0a5d5829af154bf2cf1301c73d0cb6fb8406c08f15827533109"],
    ]);
  });

  it("stops a store whose recorded checksum differs from the code's (STORE_FAILED)", async () => {
    const home = tempHome();
    await (await open(home)).close();
    const db = await keyedDb(home, readFileSync(join(home, SALT_FILE)));
    db.prepare("UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1").run();
    db.close();

    await expect(open(home)).rejects.toMatchObject({
      code: "STORE_FAILED",
      message: expect.stringMatching(/migration 1 \(fighters-bouts-messages-memories\)/),
    });
  });

  it("refuses a database written by a newer Spar", () => {
    const db = plainDb();
    const newer: Migration[] = [
      ...MIGRATIONS,
      { version: next, name: "future", sql: "CREATE TABLE future (x)" },
    ];
    migrate(db, "mem", newer);
    expect(() => migrate(db, "mem")).toThrow(/written by a newer Spar/);
    db.close();
  });

  it("applies pending migrations all or nothing", () => {
    const db = plainDb();
    const broken: Migration[] = [
      ...MIGRATIONS,
      { version: next, name: "broken", sql: "CREATE TABLE nope (" },
    ];
    expect(() => migrate(db, "mem", broken)).toThrow();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'fighters'").get()).toBeUndefined();
    db.close();
  });
});

describe("store-sqlite upgrade", () => {
  const SALT = Buffer.alloc(16, 5);
  const ada = {
    id: "id-ada",
    name: "ada",
    manifest: { name: "ada" },
    created_at: "2025-11-01T00:00:00.000Z",
  };

  /** A data dir whose database the first `count` migrations made, holding the fighter ada. */
  async function oldDatabase(count: number): Promise<{ home: string; old: Database.Database }> {
    const home = tempHome();
    writeFileSync(join(home, SALT_FILE), SALT, { mode: 0o600 });
    const old = await keyedDb(home, SALT);
    expect(migrate(old, "old", MIGRATIONS.slice(0, count))).toEqual(
      MIGRATIONS.slice(0, count).map((m) => m.version),
    );
    old
      .prepare("INSERT INTO fighters (id, name, manifest, created_at) VALUES (?, ?, ?, ?)")
      .run(ada.id, ada.name, JSON.stringify(ada.manifest), ada.created_at);
    return { home, old };
  }

  it("applies migration 2 to a database made by migration 1 alone, keeping what it held", async () => {
    const { home, old } = await oldDatabase(1);
    old
      .prepare(
        "INSERT INTO memories (id, fighter_id, key, value, created_at, accessed_at) VALUES (?, ?, ?, ?, ?, ?)",
      )
      .run("m1", ada.id, "tea", "Green tea", "2025-12-01T00:00:00.000Z", "2025-12-05T00:00:00.000Z");
    old.close();

    const store = await open(home);
    try {
      // Moved on by migration 14 into moves-memory's collection, scored from its last access.
      expect(await memoriesOf(store).candidates(ada.id, ["tea"])).toEqual([
        {
          id: "m1",
          fighter_id: ada.id,
          key: "tea",
          value: "Green tea",
          score0: 1,
          scored_at: "2025-12-05T00:00:00.000Z",
          created_at: "2025-12-01T00:00:00.000Z",
          matches: 1,
        },
      ]);
      expect(await graphOf(store).add(ada.id, [{ name: "Tea", type: "drink" }], [])).toMatchObject({
        entities_added: 1,
      });
    } finally {
      await store.close();
    }
    const db = await keyedDb(home, SALT);
    expect(db.prepare("SELECT version FROM schema_migrations ORDER BY version").pluck().all()).toEqual(
      MIGRATIONS.map((m) => m.version),
    );
    db.close();
  });

  it("applies migration 5 to a database made by migrations 1–4: earlier messages belong to no turn", async () => {
    const { home, old } = await oldDatabase(4);
    const at = "2025-12-01T00:00:00.000Z";
    old
      .prepare("INSERT INTO bouts (id, fighter_id, created_at, updated_at) VALUES ('b1', ?, ?, ?)")
      .run(ada.id, at, at);
    const insert = old.prepare(
      "INSERT INTO messages (id, bout_id, seq, role, content, created_at) VALUES (?, 'b1', ?, ?, ?, ?)",
    );
    insert.run("m1", 1, "user", "hello", at);
    insert.run("m2", 2, "assistant", "hi", at);
    old.close();

    const store = await open(home);
    try {
      const before = await store.messages.list("b1");
      expect(before.map((m) => [m.seq, m.content])).toEqual([
        [1, "hello"],
        [2, "hi"],
      ]);
      for (const message of before) expect(message).not.toHaveProperty("turn_id");
      expect(await store.turns.list("b1")).toEqual([]);

      const { turn, bout } = await store.turns.begin({
        fighter_id: ada.id,
        bout_id: "b1",
        user: { role: "user", content: "again" },
        idempotency: { key: "k1", request_hash: "h" },
      });
      expect(bout).toMatchObject({ id: "b1", message_count: 3 });
      expect((await store.messages.list("b1"))[2]).toMatchObject({
        seq: 3,
        content: "again",
        turn_id: turn.id,
      });
      expect(await store.idempotency.get("k1")).toMatchObject({ turn_id: turn.id });
    } finally {
      await store.close();
    }
  });

  it("applies migration 6 to a database made by migrations 1–5: bouts count their messages and know what was compacted", async () => {
    const { home, old } = await oldDatabase(5);
    const at = "2025-12-01T00:00:00.000Z";
    const bout = old.prepare(
      "INSERT INTO bouts (id, fighter_id, created_at, updated_at) VALUES (?, ?, ?, ?)",
    );
    bout.run("b1", ada.id, at, at);
    bout.run("b2", ada.id, at, at);
    const insert = old.prepare(
      "INSERT INTO messages (id, bout_id, seq, role, content, created_at, compacted) VALUES (?, 'b1', ?, 'user', ?, ?, ?)",
    );
    for (let seq = 1; seq <= 4; seq++) insert.run(`m${seq}`, seq, `m${seq}`, at, seq <= 2 ? 1 : 0);
    old.close();

    const store = await open(home);
    try {
      expect((await store.bouts.list(ada.id)).map((b) => [b.id, b.message_count]).sort()).toEqual([
        ["b1", 4],
        ["b2", 0],
      ]);
      expect((await store.messages.tail("b1")).map((m) => m.content)).toEqual(["m3", "m4"]);
      expect(await store.messages.tail("b2")).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("applies migration 14 to a database made by migrations 1–13: memories and the knowledge graph move to their plugins' collections", async () => {
    const { home, old } = await oldDatabase(13);
    old
      .prepare("INSERT INTO fighters (id, name, manifest, created_at) VALUES ('id-bob', 'bob', '{}', ?)")
      .run(ada.created_at);
    // As the store wrote them before: memories upserted by key, entities merged by lower(name, type),
    // relations between entity ids.
    const memory = old.prepare(
      `INSERT INTO memories (id, fighter_id, key, value, score0, scored_at, created_at, accessed_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    memory.run(
      "m1",
      ada.id,
      "tea",
      "Green tea",
      1,
      "2025-12-05T00:00:00.000Z",
      "2025-12-01T00:00:00.000Z",
      "2025-12-05T00:00:00.000Z",
    );
    memory.run(
      "m2",
      ada.id,
      "hotel",
      "Casa do Tejo",
      2.5,
      "2025-12-07T00:00:00.000Z",
      "2025-12-02T00:00:00.000Z",
      "2025-12-07T00:00:00.000Z",
    );
    memory.run(
      "m3",
      "id-bob",
      "tea",
      "Never",
      1,
      "2025-12-03T00:00:00.000Z",
      "2025-12-03T00:00:00.000Z",
      "2025-12-03T00:00:00.000Z",
    );
    const entity = old.prepare(
      "INSERT INTO kg_entities (id, fighter_id, name, type, created_at) VALUES (?, ?, ?, ?, ?)",
    );
    entity.run("e1", ada.id, "Lovelace", "Person", "2025-12-01T00:00:01.000Z");
    entity.run("e2", ada.id, "Babbage", "thing", "2025-12-01T00:00:02.000Z");
    entity.run("e3", ada.id, "Engine", "MACHINE", "2025-12-01T00:00:03.000Z");
    entity.run("e4", ada.id, "CAFÉ", "place", "2025-12-01T00:00:04.000Z");
    const relation = old.prepare(
      "INSERT INTO kg_relations (fighter_id, from_id, to_id, type, created_at) VALUES (?, ?, ?, ?, ?)",
    );
    relation.run(ada.id, "e1", "e2", "Knows", "2025-12-01T00:00:05.000Z");
    relation.run(ada.id, "e3", "e1", "programmed by", "2025-12-01T00:00:06.000Z");
    old.close();

    const store = await open(home);
    try {
      const memories = memoriesOf(store);
      expect(await memories.candidates(ada.id, [])).toEqual([
        {
          id: "m2",
          fighter_id: ada.id,
          key: "hotel",
          value: "Casa do Tejo",
          score0: 2.5,
          scored_at: "2025-12-07T00:00:00.000Z",
          created_at: "2025-12-02T00:00:00.000Z",
          matches: 0,
        },
        {
          id: "m1",
          fighter_id: ada.id,
          key: "tea",
          value: "Green tea",
          score0: 1,
          scored_at: "2025-12-05T00:00:00.000Z",
          created_at: "2025-12-01T00:00:00.000Z",
          matches: 0,
        },
      ]);
      expect((await memories.candidates("id-bob", ["tea"])).map((m) => m.id)).toEqual(["m3"]);
      // The unique key per fighter holds: storing under "tea" again replaces m1.
      expect(await memories.put(ada.id, "tea", "Oolong")).toMatchObject({ id: "m1", value: "Oolong" });

      const graph = graphOf(store);
      expect(await graph.query(ada.id, ["lovelace"], 5)).toEqual([
        {
          name: "Lovelace",
          type: "Person",
          relations: [
            { from: "Lovelace", to: "Babbage", type: "Knows" },
            { from: "Engine", to: "Lovelace", type: "programmed by" },
          ],
        },
      ]);
      expect((await graph.query(ada.id, [], 10)).map((e) => e.name)).toEqual([
        "CAFÉ",
        "Engine",
        "Babbage",
        "Lovelace",
      ]);
      // Identity as it was: names and types in any ASCII case, relations by their folded type.
      expect(
        await graph.add(
          ada.id,
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
    const db = await keyedDb(home, SALT);
    const left = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE name IN ('memories', 'kg_entities', 'kg_relations') OR name LIKE 'memories_%' OR name LIKE 'kg_%'",
      )
      .pluck()
      .all();
    db.close();
    expect(left).toEqual([]);
  });

  it("applies migration 15: Creeds and relationships become identity-creed's collections, in their order", async () => {
    const { home, old } = await oldDatabase(MIGRATIONS.findIndex((m) => m.version === 15));
    const creed = (identity: string) => ({
      identity,
      traits: ["warm"],
      directives: ["be brief"],
      observations: [{ text: "likes tea", confidence: 0.5, seen: 1, last_seen: "2026-01-02T00:00:00.000Z" }],
      counters: { bouts: 1, conversations: 2, messages: 4 },
      updated_at: "2026-01-02T00:00:00.000Z",
    });
    // As the Store's creeds.put and relationships.record wrote them before migration 15.
    const putCreed = old.prepare(
      `INSERT INTO creeds (fighter_name, document, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (fighter_name) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at`,
    );
    putCreed.run("ada", JSON.stringify(creed("first")), "2026-01-01T00:00:00.000Z");
    putCreed.run("bob", JSON.stringify(creed("Bob")), "2026-01-01T00:00:00.000Z");
    putCreed.run("ada", JSON.stringify(creed("Ada")), "2026-01-02T00:00:00.000Z");
    const record = old.prepare(
      `INSERT INTO relationships (fighter_name, other, kind, exchanges, last_contact, note)
       VALUES (@fighter_name, @other, @kind, 1, @at, @note)
       ON CONFLICT (fighter_name, other) DO UPDATE SET exchanges = exchanges + 1,
         kind = excluded.kind, last_contact = excluded.last_contact, note = excluded.note`,
    );
    const at = (day: number) => `2026-01-0${day}T00:00:00.000Z`;
    record.run({ fighter_name: "ada", other: "bob", kind: "fighter", at: at(1), note: "met" });
    record.run({ fighter_name: "ada", other: "telegram:42", kind: "user", at: at(2), note: "hi" });
    record.run({ fighter_name: "ada", other: "carol", kind: "fighter", at: at(2), note: "same day" });
    record.run({ fighter_name: "ada", other: "bob", kind: "fighter", at: at(3), note: "again" });
    record.run({ fighter_name: "bob", other: "ada", kind: "fighter", at: at(3), note: "heard" });
    old.close();

    const store = await open(home);
    try {
      const { creeds, relationships } = createIdentityRecords(
        pluginData(store, join(PLUGINS, "identity-creed")),
      );
      expect(await creeds.get("ada")).toEqual(creed("Ada"));
      expect(await creeds.get("bob")).toEqual(creed("Bob"));
      // The latest contact first; on the same day, the later written first, as before.
      expect(await relationships.list("ada")).toEqual([
        { with: "bob", kind: "fighter", exchanges: 2, last_contact: at(3), note: "again" },
        { with: "carol", kind: "fighter", exchanges: 1, last_contact: at(2), note: "same day" },
        { with: "telegram:42", kind: "user", exchanges: 1, last_contact: at(2), note: "hi" },
      ]);
      expect(await relationships.list("bob")).toEqual([
        { with: "ada", kind: "fighter", exchanges: 1, last_contact: at(3), note: "heard" },
      ]);
      // What was migrated is written on as the plugin writes.
      await relationships.record("ada", { with: "bob", kind: "fighter" }, "third", at(4));
      expect((await relationships.list("ada"))[0]).toMatchObject({ with: "bob", exchanges: 3 });
      await creeds.put("ada", { ...creed("Ada"), traits: ["warm", "wise"] });
      expect((await creeds.get("ada"))?.traits).toEqual(["warm", "wise"]);
    } finally {
      await store.close();
    }
    const db = await keyedDb(home, SALT);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    expect(tables).not.toContain("creeds");
    expect(tables).not.toContain("relationships");
    db.close();
  });
});
