/**
 * The upgrade contract: every store plugin opens a store of the previous release (commit bdea67e:
 * store-sqlite's schema version 12, store-postgres's version 4; test/helpers/previous-release.ts)
 * with each group of records it kept for plugins moved into their collections. Per group: the rows
 * are written as that release's store wrote them (sealed on PostgreSQL), then the store opens (on
 * PostgreSQL two daemons at once, which must move them once); each collection then holds exactly the
 * documents, in the order written, the tables are gone, a second open moves nothing again, and the
 * plugin goes on with them under its own rules. store-sqlite moves them by migrations 14 to 19,
 * store-postgres at open (legacy.ts). Schedules, troops and channel records are also tested beside
 * their plugins, through their records' own APIs.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createIdentityRecords } from "../../plugins/identity-creed/records.js";
import { createKnowledgeGraph } from "../../plugins/moves-knowledge/graph.js";
import { createMemories } from "../../plugins/moves-memory/memories.js";
import type { Store } from "../../sdk/index.js";
import type { GorillaRunRecord } from "../../sdk/kits/gorillas.js";
import { queryRows } from "../helpers/db.js";
import { gorillaRecordsOver } from "../helpers/gorilla-records.js";
import {
  cleanUp,
  legacyPostgres,
  legacySqlite,
  MASTER_SECRET,
  pluginData,
  STORE_KINDS,
  type StoreKind,
  storeFighters,
  tempHome,
} from "../helpers/plugin-data.js";

afterAll(cleanUp);

type Row = Record<string, unknown>;

/** A store of the previous release, behind the store plugin's back. */
interface OldStore {
  kind: StoreKind["name"];
  /** Inserts a row; columns whose value is undefined (the other store's alone) are left out. */
  insert(table: string, row: Row): Promise<void>;
  /** `text` as that release kept it in `column` ("table.column"): sealed on PostgreSQL, as it is on SQLite. */
  seal(column: string, text: string): unknown;
  /** An HMAC column of PostgreSQL's (undefined on SQLite). */
  mac(purpose: string, text: string): unknown;
  /** A column of SQLite's alone (undefined on PostgreSQL). */
  sqlite(value: unknown): unknown;
  close(): Promise<void>;
}

async function oldStore(kind: StoreKind, home: string): Promise<OldStore> {
  const columns = (row: Row) => Object.keys(row).filter((c) => row[c] !== undefined);
  if (kind.name === "store-sqlite") {
    const db = await legacySqlite(home, 13);
    return {
      kind: kind.name,
      async insert(table, row) {
        const names = columns(row);
        db.prepare(`INSERT INTO ${table} (${names}) VALUES (${names.map(() => "?")})`).run(
          ...names.map((c) => (typeof row[c] === "boolean" ? Number(row[c]) : row[c])),
        );
      },
      seal: (_column, text) => text,
      mac: () => undefined,
      sqlite: (value) => value,
      close: async () => {
        db.close();
      },
    };
  }
  const old = await legacyPostgres(home);
  return {
    kind: kind.name,
    async insert(table, row) {
      const names = columns(row);
      const values = names.map((_, i) => `$${i + 1}`);
      await old.db.query(
        `INSERT INTO ${table} (${names}) VALUES (${values})`,
        names.map((c) => row[c]),
      );
    },
    seal: (column, text) => old.cipher.seal(column, text),
    mac: (purpose, text) => old.cipher.mac(purpose, text),
    sqlite: () => undefined,
    close: () => old.close(),
  };
}

const day = (days: number): string =>
  new Date(Date.parse("2026-03-01T00:00:00.000Z") + days * 86_400_000).toISOString();
const ADA = { id: "f-ada", name: "ada" };
const BOB = { id: "f-bob", name: "bob" };

/** What every group may refer to: two fighters, as that release's fighters.insert wrote them, and a bout. */
async function seedFighters(old: OldStore): Promise<void> {
  for (const { id, name } of [ADA, BOB]) {
    const manifest = JSON.stringify({ name, description: name, system_prompt: "Be brief." });
    await old.insert("fighters", {
      id,
      name: old.sqlite(name),
      name_mac: old.mac("fighters.name", name),
      name_sealed: old.kind === "store-postgres" ? old.seal("fighters.name_sealed", name) : undefined,
      manifest: old.seal("fighters.manifest", manifest),
      created_at: day(0),
    });
  }
  await old.insert("bouts", { id: "b1", fighter_id: ADA.id, created_at: day(1), updated_at: day(1) });
}

/** One group of records that release's store kept for a plugin, and where the plugin finds it now. */
interface Group {
  name: string;
  /** Its tables, gone after the upgrade. */
  tables: string[];
  seed(old: OldStore): Promise<void>;
  /** Each collection (plugin folder, collection): its documents, in the order they were written. */
  docs: [plugin: string, collection: string, docs: Row[]][];
  /** The plugin going on with them: its reads in its own order, its writes under its own rules. */
  use?(store: Store): Promise<void>;
}

const PLUGINS = join(import.meta.dirname, "..", "..", "plugins");
const memoriesOf = (store: Store) =>
  createMemories(pluginData(store, join(PLUGINS, "moves-memory")), storeFighters(store));
const graphOf = (store: Store) =>
  createKnowledgeGraph(pluginData(store, join(PLUGINS, "moves-knowledge")), storeFighters(store));

const MEMORIES = [
  {
    id: "m1",
    fighter_id: ADA.id,
    key: "tea",
    value: "Green tea",
    score0: 1,
    scored_at: day(5),
    created_at: day(1),
  },
  {
    id: "m2",
    fighter_id: ADA.id,
    key: "hotel",
    value: "Casa do Tejo",
    score0: 2.5,
    scored_at: day(7),
    created_at: day(2),
  },
  {
    id: "m3",
    fighter_id: BOB.id,
    key: "tea",
    value: "Never",
    score0: 1,
    scored_at: day(3),
    created_at: day(3),
  },
];

const entity = (id: string, name: string, type: string, at: number) => ({
  id,
  fighter_id: ADA.id,
  name,
  type,
  created_at: day(at),
});
const ENTITIES = [
  entity("e1", "Lovelace", "Person", 1.1),
  entity("e2", "Babbage", "thing", 1.2),
  entity("e3", "Engine", "MACHINE", 1.3),
  entity("e4", "CAFÉ", "place", 1.4),
];
/** ASCII-only lowercase, as SQLite's lower(): an entity's identity ("CAFÉ" is "cafÉ"). */
const fold = (text: string) => text.replace(/[A-Z]/g, (c) => c.toLowerCase());
const RELATIONS = [
  { from_id: "e1", to_id: "e2", from: "Lovelace", to: "Babbage", type: "Knows", created_at: day(1.5) },
  { from_id: "e3", to_id: "e1", from: "Engine", to: "Lovelace", type: "programmed by", created_at: day(1.6) },
];

const creed = (identity: string) => ({
  identity,
  traits: ["warm"],
  directives: ["be brief"],
  observations: [{ text: "likes tea", confidence: 0.5, seen: 1, last_seen: day(2) }],
  counters: { bouts: 1, conversations: 2, messages: 4 },
  updated_at: day(2),
});
/** In the order written (and of their updated_at, which orders them on PostgreSQL). */
const CREEDS = [
  { fighter: "bob", updated_at: day(1), doc: creed("Bob") },
  { fighter: "plainly", updated_at: day(1), doc: creed("Plain") },
  { fighter: "ada", updated_at: day(2), doc: creed("Ada") },
];
const RELATIONSHIPS = [
  { fighter: "ada", with: "bob", kind: "fighter", exchanges: 2, last_contact: day(3), note: "again" },
  { fighter: "ada", with: "telegram:42", kind: "user", exchanges: 1, last_contact: day(2), note: "hi" },
  { fighter: "ada", with: "carol", kind: "fighter", exchanges: 1, last_contact: day(2), note: "same day" },
  { fighter: "bob", with: "ada", kind: "fighter", exchanges: 1, last_contact: day(3), note: "heard" },
  {
    fighter: "plainly",
    with: "ada",
    kind: "fighter",
    exchanges: 4,
    last_contact: day(2),
    note: "plain note",
  },
];

/**
 * A name column as that release wrote it: plain on SQLite; sealed beside its HMAC on PostgreSQL,
 * except the names "plainly", left plain as a Spar before PostgreSQL's version 4 left them.
 */
function named(old: OldStore, table: string, plain: string, column: string, name: string): Row {
  if (old.kind === "store-sqlite" || name === "plainly") return { [plain]: name };
  const purpose = column === "fighter" ? "fighters.name" : "relationships.other";
  return {
    [`${column}_mac`]: old.mac(purpose, name),
    [`${column}_sealed`]: old.seal(`${table}.${column}_sealed`, name),
  };
}

const RUNS: GorillaRunRecord[] = [
  {
    id: "r-ok",
    gorilla: "kong",
    trigger: "schedule",
    started_at: day(1),
    finished_at: day(1.1),
    outcome: "ok",
    usage: { input_tokens: 120, output_tokens: 45 },
    output: "tea prices steady",
    bout_id: "b1",
  },
  // Two runs started at the same time, recorded in this order; then one recorded later but older.
  {
    id: "r-tie-a",
    gorilla: "kong",
    trigger: "schedule",
    started_at: day(2),
    finished_at: day(2),
    outcome: "skipped",
    usage: { input_tokens: 0, output_tokens: 0 },
    error: "a cycle was still running",
  },
  {
    id: "r-tie-b",
    gorilla: "kong",
    trigger: "manual",
    started_at: day(2),
    finished_at: day(2.5),
    outcome: "failed",
    usage: { input_tokens: 9, output_tokens: 1 },
    output: "",
    error: "max_tokens reached (10)",
  },
  {
    id: "r-early",
    gorilla: "kong",
    trigger: "catch_up",
    started_at: day(0.75),
    finished_at: day(0.8),
    outcome: "aborted",
    usage: { input_tokens: 3, output_tokens: 0 },
    error: "was caged",
  },
  {
    id: "r-running",
    gorilla: "kong",
    trigger: "schedule",
    started_at: day(3),
    outcome: "running",
    usage: { input_tokens: 0, output_tokens: 0 },
  },
  {
    id: "r-joe",
    gorilla: "joe",
    trigger: "manual",
    started_at: day(1),
    finished_at: day(1.2),
    outcome: "ok",
    usage: { input_tokens: 1, output_tokens: 1 },
    output: "é".repeat(10),
  },
  // More than the batches PostgreSQL moves them in, all started at one time.
  ...Array.from({ length: 450 }, (_, i) => ({
    id: `r-many-${i}`,
    gorilla: "many",
    trigger: "schedule" as const,
    started_at: day(2),
    finished_at: day(2),
    outcome: "skipped" as const,
    usage: { input_tokens: 0, output_tokens: 0 },
  })),
];
const byId = new Map(RUNS.map((r) => [r.id, r]));

const SCHEDULES = [
  {
    id: "s-cron",
    fighter_id: ADA.id,
    message: "Weekly review",
    cron: "0 9 * * 1",
    timezone: "Europe/Lisbon",
    next_run_at: day(7),
    created_at: day(0),
    last_run_at: day(0.5),
    last_status: "completed",
  },
  {
    id: "s-once",
    fighter_id: ADA.id,
    message: "Call the plumber",
    next_run_at: day(1),
    created_at: day(0.1),
  },
  { id: "s-tie", fighter_id: BOB.id, message: "Same minute", next_run_at: day(1), created_at: day(0.2) },
];

const TROOP = {
  id: "t-crew",
  name: "crew",
  leader: ADA.id,
  members: [ADA.id, BOB.id],
  strategy: "round_robin",
  rotation: 3,
  created_at: day(0),
};
/** A task with every field set, as both stores move it alike. */
const TASK = {
  id: "task-1",
  troop_id: TROOP.id,
  task: "Name the cat",
  strategy: "consensus",
  status: "completed",
  result: "Miso",
  steps: [{ fighter_id: ADA.id, role: "answer", input: "Name the cat", output: "Miso", bout_id: "b1" }],
  votes: [{ fighter_id: BOB.id, choice: 0, reason: "short" }],
  reason: { chosen: ADA.id, text: "cats" },
  error: { code: "STRATEGY_PARTIAL", message: "one member failed" },
  partial: true,
  usage: { input_tokens: 8, output_tokens: 4 },
  created_at: day(1),
  started_at: day(1.1),
  finished_at: day(1.2),
};

/** When the deliveries were seen: to come, since the kit keeps them two days. */
const seen = (n: number) => `2099-01-0${n}T00:00:00.000Z`;

const GROUPS: Group[] = [
  {
    name: "memories",
    tables: ["memories"],
    async seed(old) {
      for (const m of MEMORIES) {
        await old.insert("memories", {
          ...m,
          key: old.seal("memories.key", m.key),
          value: old.seal("memories.value", m.value),
          key_mac: old.mac("memories.key", `${m.fighter_id}\0${m.key}`),
          accessed_at: old.sqlite(m.scored_at),
        });
      }
    },
    docs: [["moves-memory", "memories", MEMORIES]],
    async use(store) {
      const memories = memoriesOf(store);
      const [m1, m2] = MEMORIES;
      expect(await memories.recent(ADA.id, 10)).toEqual([m2, m1]);
      expect((await memories.byWords(BOB.id, "tea")).map((m) => m.id)).toEqual(["m3"]);
      // One memory per fighter and key, as before: storing under "tea" again replaces m1.
      expect(await memories.put(ADA.id, "tea", "Oolong")).toMatchObject({ id: "m1", value: "Oolong" });
    },
  },
  {
    name: "the knowledge graph",
    tables: ["kg_entities", "kg_relations"],
    async seed(old) {
      for (const e of ENTITIES) {
        await old.insert("kg_entities", {
          ...e,
          name: old.seal("kg_entities.name", e.name),
          type: old.seal("kg_entities.type", e.type),
          identity_mac: old.mac("kg.identity", e.id),
          name_mac: old.mac("kg.name", e.id),
        });
      }
      for (const { from, to, ...r } of RELATIONS) {
        await old.insert("kg_relations", {
          ...r,
          fighter_id: ADA.id,
          type: old.seal("kg_relations.type", r.type),
          type_mac: old.mac("kg.relation", r.type),
        });
      }
    },
    docs: [
      [
        "moves-knowledge",
        "entities",
        ENTITIES.map((e) => ({ ...e, name_folded: fold(e.name), type_folded: fold(e.type) })),
      ],
      [
        "moves-knowledge",
        "relations",
        RELATIONS.map((r) => ({
          id: expect.any(String),
          fighter_id: ADA.id,
          ...r,
          type_folded: fold(r.type),
        })),
      ],
    ],
    async use(store) {
      const graph = graphOf(store);
      expect(await graph.query(ADA.id, ["lovelace"], 5)).toEqual([
        {
          name: "Lovelace",
          type: "Person",
          relations: [
            { from: "Lovelace", to: "Babbage", type: "Knows" },
            { from: "Engine", to: "Lovelace", type: "programmed by" },
          ],
        },
      ]);
      expect((await graph.query(ADA.id, [], 10)).map((e) => e.name)).toEqual([
        "CAFÉ",
        "Engine",
        "Babbage",
        "Lovelace",
      ]);
      // Identity as it was: names and types in any ASCII case, relations by their folded type.
      expect(
        await graph.add(
          ADA.id,
          [
            { name: "lovelace", type: "PERSON" },
            { name: "engine", type: "machine" },
            { name: "café", type: "place" },
          ],
          [{ from: "LOVELACE", to: "babbage", type: "knows" }],
        ),
      ).toEqual({ entities_added: 1, entities_merged: 2, relations_added: 0 });
    },
  },
  {
    name: "Creeds and relationships",
    tables: ["creeds", "relationships"],
    async seed(old) {
      for (const c of CREEDS) {
        await old.insert("creeds", {
          ...named(old, "creeds", "fighter_name", "fighter", c.fighter),
          document: old.seal("creeds.document", JSON.stringify(c.doc)),
          updated_at: c.updated_at,
        });
      }
      for (const { fighter, with: other, note, ...r } of RELATIONSHIPS) {
        await old.insert("relationships", {
          ...named(old, "relationships", "fighter_name", "fighter", fighter),
          ...named(old, "relationships", "other", "other", other),
          ...r,
          note: old.seal("relationships.note", note),
        });
      }
    },
    docs: [
      ["identity-creed", "creeds", CREEDS.map((c) => ({ fighter: c.fighter, ...c.doc }))],
      ["identity-creed", "relationships", RELATIONSHIPS.map((r) => ({ id: `${r.fighter}/${r.with}`, ...r }))],
    ],
    async use(store) {
      const { creeds, relationships } = createIdentityRecords(
        pluginData(store, join(PLUGINS, "identity-creed")),
      );
      expect(await creeds.get("ada")).toEqual(creed("Ada"));
      expect(await creeds.get("plainly")).toEqual(creed("Plain"));
      const list = (fighter: string) => RELATIONSHIPS.filter((r) => r.fighter === fighter);
      const [bob, telegram, carol] = list("ada").map(({ fighter, ...r }) => r);
      // The latest contact first; on the same day, the later written first, as before.
      expect(await relationships.list("ada")).toEqual([bob, carol, telegram]);
      expect(await relationships.list("plainly")).toEqual(list("plainly").map(({ fighter, ...r }) => r));
      // What was moved is written on as the plugin writes.
      await relationships.record("ada", { with: "bob", kind: "fighter" }, "third", day(4));
      expect((await relationships.list("ada"))[0]).toMatchObject({ with: "bob", exchanges: 3 });
      await creeds.put("ada", { ...creed("Ada"), traits: ["warm", "wise"] });
      expect((await creeds.get("ada"))?.traits).toEqual(["warm", "wise"]);
    },
  },
  {
    name: "schedules",
    tables: ["schedules"],
    async seed(old) {
      for (const s of SCHEDULES)
        await old.insert("schedules", { ...s, message: old.seal("schedules.message", s.message) });
    },
    docs: [["moves-schedule", "schedules", SCHEDULES]],
  },
  {
    name: "gorilla states and runs",
    tables: ["gorillas", "gorilla_runs"],
    async seed(old) {
      // In the order of their changes (which orders them on PostgreSQL).
      const states = [
        { name: "joe", desired: "caged", changed_at: day(0.25) },
        { name: "kong", desired: "unleashed", changed_at: day(0.5), last_fire_at: day(2) },
      ];
      for (const s of states) await old.insert("gorillas", s);
      for (const { usage, output, ...r } of RUNS) {
        await old.insert("gorilla_runs", {
          ...r,
          input_tokens: usage.input_tokens,
          output_tokens: usage.output_tokens,
          output: output === undefined ? undefined : old.seal("gorilla_runs.output", output),
        });
      }
    },
    docs: [
      [
        "scheduler-croner",
        "gorillas",
        [
          { name: "joe", desired: "caged", changed_at: day(0.25) },
          { name: "kong", desired: "unleashed", changed_at: day(0.5), last_fire_at: day(2) },
        ],
      ],
      // A run holds running_gorilla while it runs: the unique that keeps one running run per gorilla.
      [
        "scheduler-croner",
        "runs",
        RUNS.map((r): Row => (r.outcome === "running" ? { ...r, running_gorilla: r.gorilla } : { ...r })),
      ],
    ],
    async use(store) {
      const records = gorillaRecordsOver(store);
      for (const r of RUNS.slice(0, 6)) expect(await records.runs.get(r.id)).toEqual(r);
      const kong = ["r-running", "r-tie-b", "r-tie-a", "r-ok", "r-early"];
      expect(await records.runs.list("kong", { limit: 10 })).toEqual(kong.map((id) => byId.get(id)));
      expect((await records.runs.list("kong", { limit: 2, before: "r-tie-b" })).map((r) => r.id)).toEqual([
        "r-tie-a",
        "r-ok",
      ]);
      // All started at one time: newest recorded first.
      const many = await records.runs.list("many", { limit: 1_000 });
      expect([many.length, many[0]?.id, many.at(-1)?.id]).toEqual([450, "r-many-449", "r-many-0"]);
      // The moved running run is the one running: a second is refused, naming it.
      await expect(records.runs.begin({ gorilla: "kong", trigger: "manual" })).rejects.toMatchObject({
        code: "CONFLICT",
        extra: { run_id: "r-running" },
      });
      expect(await records.runs.begin({ gorilla: "joe", trigger: "manual" })).toMatchObject({
        outcome: "running",
      });
      expect(await records.runs.abandon(day(4))).toBe(2);
      expect(await records.runs.get("r-running")).toEqual({
        ...byId.get("r-running"),
        outcome: "failed",
        error: "daemon restarted",
        finished_at: day(4),
      });
      expect(await records.runs.prune("kong", 2)).toBe(3);
      expect((await records.runs.list("kong", { limit: 10 })).map((r) => r.id)).toEqual([
        "r-running",
        "r-tie-b",
      ]);
    },
  },
  {
    name: "troops and their tasks",
    tables: ["troops", "troop_tasks"],
    async seed(old) {
      await old.insert("troops", { ...TROOP, members: JSON.stringify(TROOP.members) });
      const { result, steps, votes, reason, error, usage, ...task } = TASK;
      await old.insert("troop_tasks", {
        ...task,
        task: old.seal("troop_tasks.task", task.task),
        body: old.seal("troop_tasks.body", JSON.stringify({ result, steps, votes, reason })),
        error_code: error.code,
        error_message: error.message,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
      });
    },
    docs: [
      ["troops-local", "troops", [TROOP]],
      ["troops-local", "tasks", [TASK]],
    ],
  },
  {
    name: "channel records",
    tables: ["channel_bouts", "channel_deliveries", "channel_chats"],
    async seed(old) {
      const bout = { fighter_id: ADA.id, bout_id: "b1" };
      await old.insert("channel_bouts", { platform: "telegram", chat: "42", ...bout, updated_at: day(1) });
      await old.insert("channel_bouts", { platform: "openai", chat: "user-7", ...bout, updated_at: day(2) });
      for (const [id, at] of [
        ["7000000001:900001", seen(1)],
        ["7000000001:900002", seen(2)],
      ] as const) {
        await old.insert("channel_deliveries", { platform: "telegram", delivery_id: id, seen_at: at });
      }
      const chat = { platform: "telegram", chat: "42", fighter_id: ADA.id };
      await old.insert("channel_chats", { ...chat, first_at: day(1), last_at: day(2) });
    },
    // Each keyed by the JSON array of what names it; the OpenAI users' bouts are the Arena's.
    docs: [
      [
        "channel-telegram",
        "bouts",
        [
          {
            id: `["telegram","42","${ADA.id}"]`,
            platform: "telegram",
            chat: "42",
            fighter_id: ADA.id,
            bout_id: "b1",
            updated_at: day(1),
          },
        ],
      ],
      [
        "arena-http",
        "openai_bouts",
        [
          {
            id: `["user-7","${ADA.id}"]`,
            user: "user-7",
            fighter_id: ADA.id,
            bout_id: "b1",
            updated_at: day(2),
          },
        ],
      ],
      [
        "channel-telegram",
        "deliveries",
        ["900001", "900002"].map((n, i) => ({
          id: `["telegram","7000000001:${n}"]`,
          platform: "telegram",
          delivery_id: `7000000001:${n}`,
          seen_at: seen(i + 1),
        })),
      ],
      [
        "channel-telegram",
        "chats",
        [
          {
            id: `["telegram","42","${ADA.id}"]`,
            platform: "telegram",
            chat: "42",
            fighter_id: ADA.id,
            first_at: day(1),
            last_at: day(2),
          },
        ],
      ],
    ],
  },
];

async function expectDocs(store: Store, group: Group): Promise<void> {
  for (const [plugin, collection, docs] of group.docs) {
    expect(
      await pluginData(store, join(PLUGINS, plugin))[collection]?.find(),
      `${plugin} ${collection}`,
    ).toEqual(docs);
  }
}

/** The group's tables (and their indexes) still in the store. */
async function tablesLeft(kind: StoreKind, home: string, tables: string[]): Promise<unknown[]> {
  if (kind.name === "store-sqlite") {
    const sql = `SELECT name FROM sqlite_master WHERE tbl_name IN (${tables.map(() => "?")})`;
    return queryRows(home, sql, Buffer.from(MASTER_SECRET), tables);
  }
  const old = await legacyPostgres(home);
  try {
    const sql = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = ANY($1)";
    return (await old.db.query(sql, [tables])).rows;
  } finally {
    await old.close();
  }
}

for (const kind of STORE_KINDS) {
  describe.skipIf(kind.skip)(
    `${kind.name}: a store of the previous release${kind.skip ? ` (${kind.skip})` : ""}`,
    () => {
      it.each(GROUPS)(
        "moves $name into the plugins' collections, once, and drops the tables",
        async (group) => {
          const home = tempHome();
          const old = await oldStore(kind, home);
          await seedFighters(old);
          await group.seed(old);
          await old.close();
          // On PostgreSQL two daemons open it at once: one moves the records, the other finds them moved.
          const opening =
            kind.name === "store-postgres" ? [kind.open(home), kind.open(home)] : [kind.open(home)];
          const stores = await Promise.all(opening);
          try {
            for (const store of stores) await expectDocs(store, group);
          } finally {
            await Promise.all(stores.map((s) => s.close()));
          }
          expect(await tablesLeft(kind, home, group.tables)).toEqual([]);
          // Opening again finds nothing to move and everything where it was.
          const again = await kind.open(home);
          try {
            await expectDocs(again, group);
            await group.use?.(again);
          } finally {
            await again.close();
          }
        },
      );
    },
  );
}
