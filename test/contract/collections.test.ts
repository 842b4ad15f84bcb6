/**
 * The collection contract: every store plugin passes this same suite, once per factory below, through
 * `api.data` as a plugin gets it (`createPluginData` over `store.collections`). It pins what a plugin
 * may rely on from any store: each Collection method, queries and their order, paging, search, rank,
 * uniques, transactions, isolation between plugins, persistence, the sweeps, and the refusals of bad
 * declarations, documents and queries, with their codes and what they name. What one store does
 * beyond it (PostgreSQL's sealing and its several daemons, SQLite's query plans) is at the end.
 *
 * Under CI=true a missing PostgreSQL fails the suite instead of skipping it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { layoutOf, slotSql } from "../../plugins/store-postgres/collection-rows.js";
import { importDocs } from "../../plugins/store-postgres/collections.js";
import { openCipher } from "../../plugins/store-postgres/keys.js";
import { openPostgresStore } from "../../plugins/store-postgres/store.js";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
import { checkDataDeclaration, checkNamespaces, declarationChecksum } from "../../sdk/collection-checks.js";
import { createPluginData, TRANSACTION_TIMEOUT_MS } from "../../sdk/collection-engine.js";
import type {
  Collection,
  CollectionDeclaration,
  DataDeclaration,
  Doc,
  FieldDeclaration,
  PluginData,
  Query,
} from "../../sdk/collections.js";
import { SparError } from "../../sdk/errors.js";
import type { Store } from "../../sdk/index.js";
import { underCi } from "../helpers/browser.js";
import { queryRows } from "../helpers/db.js";
import { legacySqlite } from "../helpers/plugin-data.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "../helpers/postgres.js";

interface StoreFactory {
  name: string;
  /** Opens the store whose data lives under `home`: a fresh directory, or one opened (and closed) before. */
  open(home: string): Promise<Store>;
  close(): Promise<void>;
  skip?: string;
}

const MASTER_SECRET = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const PG_URL = TEST_DATABASE_URL ?? "";
const pgSchemas = new Set<string>();

function openPostgres(home: string): Promise<Store> {
  if (!TEST_DATABASE_URL) {
    throw new Error("SPAR_TEST_DATABASE_URL is not set: under CI the PostgreSQL half must run");
  }
  const schema = schemaForHome(home);
  pgSchemas.add(schema);
  return openPostgresStore(
    { home, masterSecret: Buffer.from(MASTER_SECRET) },
    { url: PG_URL, schema, poolMax: 4 },
  );
}

const FACTORIES: StoreFactory[] = [
  {
    name: "store-sqlite",
    open: (home) => openSqliteStore({ home, masterSecret: Buffer.from(MASTER_SECRET) }),
    close: async () => undefined,
  },
  {
    name: "store-postgres",
    ...(TEST_DATABASE_URL || underCi() ? {} : { skip: SKIP_REASON }),
    open: openPostgres,
    close: async () => {
      if (TEST_DATABASE_URL) await dropSchemas(PG_URL, pgSchemas);
    },
  },
];

const homes: string[] = [];
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-collections-"));
  homes.push(home);
  return home;
}
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

// ---- declarations, documents, and the calls most tests make ----

const NOTE_FIELDS: Record<string, FieldDeclaration> = {
  id: { type: "string" },
  who: { type: "string" },
  at: { type: "time" },
  rank: { type: "integer" },
  score: { type: "number", optional: true },
  done: { type: "boolean", optional: true },
  tag: { type: "string", optional: true, max_bytes: 16 },
  n: { type: "integer", optional: true },
  title: { type: "string", optional: true, text: true },
  body: { type: "string", optional: true, text: true },
  token: { type: "string", optional: true, secret: true },
  meta: { type: "json", optional: true, max_bytes: 64 },
  plain: { type: "string", optional: true },
};

const NOTES: CollectionDeclaration = {
  version: 1,
  key: "id",
  fields: NOTE_FIELDS,
  indexes: [["who", "at"], ["rank"], ["score"], ["done"]],
  unique: [["tag"], ["who", "n"]],
};

interface Note extends Doc {
  id: string;
  who: string;
  at: string;
  rank: number;
  score?: number;
  done?: boolean;
  tag?: string;
  n?: number;
  title?: string;
  body?: string;
  token?: string;
  meta?: unknown;
  plain?: string;
}

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
/** The ISO time `s` seconds after T0. */
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const note = (id: string, extra: Partial<Note> = {}): Note => ({
  id,
  who: "w",
  at: at(0),
  rank: 0,
  ...extra,
});
const ids = (docs: readonly Doc[]) => docs.map((d) => d.id);

let serial = 0;
/** A plugin id nobody else uses: its collections are its own. */
const newPlugin = () => `moves-c${++serial}-${process.pid}`;

function dataFor(
  store: Store,
  collections: Record<string, CollectionDeclaration>,
  options: { plugin?: string; namespace?: string; now?: () => number } = {},
): PluginData {
  return createPluginData({
    plugin: options.plugin ?? newPlugin(),
    data: { ...(options.namespace ? { namespace: options.namespace } : {}), collections },
    store: () => store.collections,
    ...(options.now ? { now: options.now } : {}),
  });
}

function handle<T extends Doc = Note>(data: PluginData, name = "notes"): Collection<T> {
  const found = data[name];
  if (!found) throw new Error(`no collection ${name}`);
  return found as unknown as Collection<T>;
}

async function refusal(promise: Promise<unknown> | (() => unknown)): Promise<SparError> {
  const err = await (typeof promise === "function" ? Promise.resolve().then(promise) : promise).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SparError);
  return err as SparError;
}

/** Every page of `query`, `size` rows at a time, each after the last row of the one before. */
async function allPages(notes: Collection<Note>, query: Query, size: number): Promise<string[]> {
  const seen: string[] = [];
  let after: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const page = await notes.find({ ...query, limit: size, ...(after === undefined ? {} : { after }) });
    if (page.length === 0) return seen;
    seen.push(...ids(page).map(String));
    after = page[page.length - 1]?.id;
  }
  throw new Error("paging did not end");
}

for (const factory of FACTORIES) {
  const title = `collection contract: ${factory.name}${factory.skip ? ` (${factory.skip})` : ""}`;
  if (factory.skip) console.warn(title);
  describe.skipIf(factory.skip !== undefined)(title, () => {
    let store: Store;
    beforeAll(async () => {
      store = await factory.open(tempHome());
    });
    afterAll(async () => {
      await store?.close();
      await factory.close();
    });

    const fresh = (decl: CollectionDeclaration = NOTES) => handle(dataFor(store, { notes: decl }));

    describe("each method", () => {
      it("insert returns the document as stored; get reads it back, undefined for no row", async () => {
        const notes = fresh();
        const stored = await notes.insert(
          note("a", { meta: { deep: [1, "x"] }, token: "s3cr3t", tag: null as never }),
        );
        expect(stored).toEqual(note("a", { meta: { deep: [1, "x"] }, token: "s3cr3t" }));
        expect(await notes.get("a")).toEqual(stored);
        expect(await notes.get("nobody")).toBeUndefined();
      });

      it("add writes a new key and answers false on a taken one, writing nothing", async () => {
        const notes = fresh();
        expect(await notes.add(note("a", { plain: "first" }))).toBe(true);
        expect(await notes.add(note("a", { plain: "second" }))).toBe(false);
        expect((await notes.get("a"))?.plain).toBe("first");
      });

      it("put adds or replaces the row under its key", async () => {
        const notes = fresh();
        await notes.put(note("a", { plain: "one", score: 1 }));
        await notes.put(note("a", { plain: "two" }));
        expect(await notes.get("a")).toEqual(note("a", { plain: "two" }));
        expect(await notes.count()).toBe(1);
      });

      it("update merges fields, null removes an optional one, a function replaces; undefined for no row", async () => {
        const notes = fresh();
        await notes.insert(note("a", { score: 2, plain: "p" }));
        expect(await notes.update("a", { score: 3, plain: null as never })).toEqual(note("a", { score: 3 }));
        expect(await notes.update("a", (d) => ({ ...d, rank: d.rank + 5 }))).toEqual(
          note("a", { score: 3, rank: 5 }),
        );
        expect(await notes.get("a")).toEqual(note("a", { score: 3, rank: 5 }));
        expect(await notes.update("nobody", { score: 1 })).toBeUndefined();
        expect(await notes.get("nobody")).toBeUndefined();
      });

      it("update cannot change the key, nor remove a required field", async () => {
        const notes = fresh();
        await notes.insert(note("a"));
        const moved = await refusal(notes.update("a", { id: "b" }));
        expect(moved.code).toBe("VALIDATION_FAILED");
        expect(moved.extra).toMatchObject({ collection: "notes", field: "id" });
        const missing = await refusal(notes.update("a", { who: null as never }));
        expect(missing.extra).toMatchObject({ field: "who" });
        expect(await notes.get("a")).toEqual(note("a"));
        expect(await notes.get("b")).toBeUndefined();
      });

      it("delete answers whether a row went; deleteWhere how many", async () => {
        const notes = fresh();
        for (const [i, who] of ["x", "x", "y", "x"].entries()) await notes.insert(note(`d${i}`, { who }));
        expect(await notes.delete("d2")).toBe(true);
        expect(await notes.delete("d2")).toBe(false);
        expect(await notes.deleteWhere({ who: "x" })).toBe(3);
        expect(await notes.deleteWhere({ who: "x" })).toBe(0);
        expect(await notes.count()).toBe(0);
      });

      it("count counts what a where selects", async () => {
        const notes = fresh();
        for (let i = 0; i < 5; i++) await notes.insert(note(`c${i}`, { rank: i, done: i % 2 === 0 }));
        expect(await notes.count()).toBe(5);
        expect(await notes.count({ done: true })).toBe(3);
        expect(await notes.count({ rank: { gte: 3 } })).toBe(2);
      });
    });

    describe("find", () => {
      let notes: Collection<Note>;
      beforeAll(async () => {
        notes = fresh();
        // Written out of key order, so the write order is not the key order.
        const rows: Note[] = [
          note("r3", { who: "ann", at: at(3), rank: 2, score: 1.5, done: true, tag: "t3" }),
          note("r1", { who: "bob", at: at(1), rank: 1, score: -2, done: false }),
          note("r5", { who: "ann", at: at(5), rank: 3, n: 7 }),
          note("r2", { who: "cid", at: at(2), rank: 1, score: 0.25, done: true }),
          note("r4", { who: "bob", at: at(4), rank: 2, score: 10 }),
        ];
        for (const row of rows) await notes.insert(row);
      });

      it("without a query: every row, in the order written", async () => {
        expect(ids(await notes.find())).toEqual(["r3", "r1", "r5", "r2", "r4"]);
      });

      it("equality on a string, an integer, a boolean; null for an absent field", async () => {
        expect(ids(await notes.find({ where: { who: "bob" } }))).toEqual(["r1", "r4"]);
        expect(ids(await notes.find({ where: { rank: 1 } }))).toEqual(["r1", "r2"]);
        expect(ids(await notes.find({ where: { done: true } }))).toEqual(["r3", "r2"]);
        expect(ids(await notes.find({ where: { done: false } }))).toEqual(["r1"]);
        expect(ids(await notes.find({ where: { done: null } }))).toEqual(["r5", "r4"]);
        expect(ids(await notes.find({ where: { score: 0.25 } }))).toEqual(["r2"]);
        expect(ids(await notes.find({ where: { at: at(4) } }))).toEqual(["r4"]);
        expect(ids(await notes.find({ where: { who: "nobody" } }))).toEqual([]);
      });

      it("in: any of a list (an empty list selects nothing)", async () => {
        expect(ids(await notes.find({ where: { who: { in: ["ann", "cid"] } } }))).toEqual(["r3", "r5", "r2"]);
        expect(ids(await notes.find({ where: { rank: { in: [3, 2] } } }))).toEqual(["r3", "r5", "r4"]);
        expect(ids(await notes.find({ where: { done: { in: [false] } } }))).toEqual(["r1"]);
        expect(ids(await notes.find({ where: { who: { in: [] } } }))).toEqual([]);
      });

      it("ranges on times and numbers, alone and together, beside equality", async () => {
        expect(ids(await notes.find({ where: { at: { lt: at(2) } } }))).toEqual(["r1"]);
        expect(ids(await notes.find({ where: { at: { lte: at(2) } } }))).toEqual(["r1", "r2"]);
        expect(ids(await notes.find({ where: { at: { gt: at(4) } } }))).toEqual(["r5"]);
        expect(ids(await notes.find({ where: { at: { gte: at(4) } } }))).toEqual(["r5", "r4"]);
        expect(ids(await notes.find({ where: { at: { gte: at(2), lt: at(4) } } }))).toEqual(["r3", "r2"]);
        expect(ids(await notes.find({ where: { score: { gt: 0 } } }))).toEqual(["r3", "r2", "r4"]);
        expect(ids(await notes.find({ where: { score: { lte: 0.25, gt: -5 } } }))).toEqual(["r1", "r2"]);
        expect(ids(await notes.find({ where: { who: "ann", at: { gt: at(3) } } }))).toEqual(["r5"]);
      });

      it("order ascending and descending, on one field and on two", async () => {
        expect(ids(await notes.find({ order: { by: ["at"] } }))).toEqual(["r1", "r2", "r3", "r4", "r5"]);
        expect(ids(await notes.find({ order: { by: ["at"], desc: true } }))).toEqual([
          "r5",
          "r4",
          "r3",
          "r2",
          "r1",
        ]);
        expect(ids(await notes.find({ where: { who: "bob" }, order: { by: ["at"], desc: true } }))).toEqual([
          "r4",
          "r1",
        ]);
        expect(ids(await notes.find({ order: { by: ["rank", "at"] } }))).toEqual([
          "r1",
          "r2",
          "r3",
          "r4",
          "r5",
        ]);
        expect(ids(await notes.find({ order: { by: ["rank", "at"], desc: true } }))).toEqual([
          "r5",
          "r4",
          "r3",
          "r2",
          "r1",
        ]);
      });

      it("limit takes the first rows of the order", async () => {
        expect(ids(await notes.find({ order: { by: ["at"] }, limit: 2 }))).toEqual(["r1", "r2"]);
        expect(ids(await notes.find({ limit: 1 }))).toEqual(["r3"]);
      });
    });

    describe("order, ties and paging", () => {
      it("rows that tie are in the order written (newest first when descending); put keeps a row's place", async () => {
        const notes = fresh();
        for (const id of ["b", "a", "d", "c"]) await notes.insert(note(id, { at: at(1) }));
        await notes.insert(note("early", { at: at(0) }));
        await notes.put(note("a", { at: at(1), plain: "replaced" }));
        expect(ids(await notes.find({ order: { by: ["at"] } }))).toEqual(["early", "b", "a", "d", "c"]);
        expect(ids(await notes.find({ order: { by: ["at"], desc: true } }))).toEqual([
          "c",
          "d",
          "a",
          "b",
          "early",
        ]);
        expect(ids(await notes.find())).toEqual(["b", "a", "d", "c", "early"]);
        // A row deleted and written again is written anew: last.
        await notes.delete("b");
        await notes.insert(note("b", { at: at(1) }));
        expect(ids(await notes.find({ order: { by: ["at"] } }))).toEqual(["early", "a", "d", "c", "b"]);
      });

      it("pages with after through runs of equal order values: none skipped, none repeated", async () => {
        const notes = fresh();
        // 23 rows over 3 times and 4 ranks, keys written in a scrambled order.
        for (let i = 0; i < 23; i++) {
          await notes.insert(
            note(`p${(i * 7) % 23}`, { who: i % 5 === 0 ? "other" : "w", at: at(i % 3), rank: i % 4 }),
          );
        }
        const orders: (Query["order"] | undefined)[] = [
          undefined,
          { by: ["at"] },
          { by: ["at"], desc: true },
          { by: ["rank"] },
          { by: ["rank", "at"], desc: true },
          { by: ["at", "rank"] },
        ];
        for (const order of orders) {
          for (const where of [undefined, { who: "w" }]) {
            const query: Query = { ...(order ? { order } : {}), ...(where ? { where } : {}) };
            const all = ids(await notes.find(query)).map(String);
            expect(all.length).toBe(where ? 18 : 23);
            for (const size of [1, 2, 5]) expect(await allPages(notes, query, size)).toEqual(all);
          }
        }
      });

      it("after a row that is gone is NOT_FOUND", async () => {
        const notes = fresh();
        await notes.insert(note("a"));
        await notes.insert(note("b"));
        await notes.delete("a");
        const err = await refusal(notes.find({ order: { by: ["at"] }, after: "a" }));
        expect(err.code).toBe("NOT_FOUND");
        expect(err.message).toContain('"a"');
      });

      it("keeps times in time order however many digits of a second they were written with", async () => {
        const notes = fresh();
        await notes.insert(note("whole", { at: "2026-01-01T00:00:01Z" }));
        await notes.insert(note("half", { at: "2026-01-01T00:00:00.5Z" }));
        await notes.insert(note("late", { at: "2026-01-01T00:00:01.250Z" }));
        expect((await notes.get("whole"))?.at).toBe("2026-01-01T00:00:01.000Z");
        expect((await notes.get("half"))?.at).toBe("2026-01-01T00:00:00.500Z");
        expect(ids(await notes.find({ order: { by: ["at"] } }))).toEqual(["half", "whole", "late"]);
        expect(ids(await notes.find({ where: { at: { gt: "2026-01-01T00:00:00.9Z" } } }))).toEqual([
          "whole",
          "late",
        ]);
        expect(ids(await notes.find({ where: { at: "2026-01-01T00:00:01Z" } }))).toEqual(["whole"]);
        const err = await refusal(notes.insert(note("fine", { at: "2026-01-01T00:00:00.0001Z" })));
        expect(err.code).toBe("VALIDATION_FAILED");
        expect(err.message).toContain('field "at"');
      });
    });

    describe("search", () => {
      let notes: Collection<Note>;
      beforeAll(async () => {
        notes = fresh();
        await notes.insert(note("s1", { at: at(1), title: "Tea notes", body: "Green tea and oolong" }));
        await notes.insert(note("s2", { at: at(2), body: "coffee, black", who: "x" }));
        await notes.insert(note("s3", { at: at(3), title: "GREEN", body: "TEA time" }));
        await notes.insert(
          note("s4", { at: at(4), body: "a teapot", plain: "green tea in a field not searched" }),
        );
        await notes.insert(note("s5", { at: at(5) }));
      });

      it("ranks by how many words a row's text fields hold, any case, then in the query's order", async () => {
        const found = await notes.search(["tea", "GREEN"]);
        expect(found.map((r) => [r.doc.id, r.matches])).toEqual([
          ["s1", 2],
          ["s3", 2],
          ["s4", 1],
        ]);
        const newest = await notes.search(["green", "tea"], { order: { by: ["at"], desc: true } });
        expect(newest.map((r) => r.doc.id)).toEqual(["s3", "s1", "s4"]);
      });

      it("reads only the query's rows, at most scan of them, and returns at most limit", async () => {
        expect((await notes.search(["coffee", "tea"], { where: { who: "x" } })).map((r) => r.doc.id)).toEqual(
          ["s2"],
        );
        expect((await notes.search(["tea"], { scan: 2 })).map((r) => r.doc.id)).toEqual(["s1"]);
        expect((await notes.search(["tea"], { limit: 2 })).map((r) => r.doc.id)).toEqual(["s1", "s3"]);
        expect(await notes.search(["nothing-like-it"])).toEqual([]);
      });

      it("with no words: the query's rows, none matching", async () => {
        const all = await notes.search([]);
        expect(all.map((r) => [r.doc.id, r.matches])).toEqual([
          ["s1", 0],
          ["s2", 0],
          ["s3", 0],
          ["s4", 0],
          ["s5", 0],
        ]);
      });
    });

    describe("rank", () => {
      let notes: Collection<Note>;
      const ranked = async (text: string, query?: Parameters<Collection<Note>["rank"]>[1]) =>
        (await notes.rank(text, query)).map((r) => r.doc.id);
      beforeAll(async () => {
        notes = fresh();
        for (let i = 0; i < 8; i++) {
          await notes.insert(
            note(`c${i}`, { at: at(i), title: "Apple notes", body: `an apple, number ${i}` }),
          );
        }
        await notes.insert(note("z1", { at: at(10), body: "a zebra crossing, and another zebra", who: "x" }));
        await notes.insert(
          note("z2", {
            at: at(11),
            title: "Zebras",
            body: "seen once, at the zoo, on a long walk",
            who: "y",
          }),
        );
        await notes.insert(note("r1", { at: at(12), body: "She was running to the teapots" }));
        await notes.insert(note("k1", { at: at(13), body: "住所 東京 です, near the station 🚉" }));
        await notes.insert(note("p1", { at: at(14), plain: "zebra in a field rank does not read" }));
      });

      it("ranks rows holding a rare term above rows holding a common one, scores positive and falling", async () => {
        const found = await notes.rank("apple zebra");
        expect(found[0]?.doc.id).toBe("z1");
        expect(found.map((r) => r.doc.id).sort()).toEqual(
          ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "z1", "z2"].sort(),
        );
        for (const [i, r] of found.entries()) {
          expect(r.score).toBeGreaterThan(0);
          if (i > 0) expect(r.score).toBeLessThanOrEqual(found[i - 1]?.score ?? 0);
        }
        expect(found.find((r) => r.doc.id === "z1")?.doc).toEqual(await notes.get("z1"));
      });

      it("filters by where and returns at most limit (default 50, 1 … 1,000)", async () => {
        expect(await ranked("zebra apple", { where: { who: "y" } })).toEqual(["z2"]);
        expect(await ranked("zebra", { where: { who: { in: ["x", "y"] } } })).toEqual(["z1", "z2"]);
        expect(await ranked("apple", { limit: 3 })).toHaveLength(3);
        expect(await ranked("apple", { where: { rank: 99 } })).toEqual([]);
        expect((await refusal(notes.rank("apple", { limit: 1001 }))).code).toBe("VALIDATION_FAILED");
        expect((await refusal(notes.rank("apple", { where: { body: "x" } }))).code).toBe("VALIDATION_FAILED");
        const odd = { order: { by: ["at"] } } as unknown as { limit: number };
        expect((await refusal(notes.rank("apple", odd))).code).toBe("VALIDATION_FAILED");
      });

      it("matches words a term of 3+ characters begins, word forms, and any case", async () => {
        expect(await ranked("ZEB")).toEqual(expect.arrayContaining(["z1", "z2"]));
        expect(await ranked("crossings")).toEqual(["z1"]);
        expect(await ranked("runs teapot")).toEqual(["r1"]);
        expect(await ranked("ze")).toEqual([]);
        expect(await ranked("東京")).toEqual(["k1"]);
        // Latin diacritics are folded on both sides; other scripts' marks are kept.
        await notes.insert(note("d1", { at: at(20), body: "Un café crème à Besançon, नमस्ते" }));
        expect(await ranked("CAFE creme besancon")).toEqual(["d1"]);
        expect(await ranked("crème")).toEqual(["d1"]);
        expect(await ranked("नमस्ते")).toEqual(["d1"]);
        await notes.delete("d1");
      });

      it("takes any text as words: operators, quotes, emoji, scripts and 100 kB are matched, never parsed", async () => {
        for (const text of [
          '"NEAR(a b)" OR x* -y ^z : {col}',
          '"',
          "*",
          "AND",
          "- : ( ) NOT",
          "zebra AND NOT apple",
          'station" OR "',
          "🚉🦓",
          "東京 ἀλφα עברית العربية देवनागरी",
          `${"zebra ".repeat(2)}${"ü̈x".repeat(20_000)} ${"雨".repeat(40_000)}`,
          "a".repeat(100_000),
        ]) {
          const found = await notes.rank(text);
          expect(Array.isArray(found)).toBe(true);
        }
        expect(await ranked("near(station)")).toEqual(["k1"]);
        expect(await ranked("zebra AND NOT apple")).toContain("c0");
        expect(await notes.rank("")).toEqual([]);
        expect(await notes.rank("-- ** :: 🚉")).toEqual([]);
      });

      it("a row updated or deleted leaves the index as it was written", async () => {
        const own = fresh();
        await own.insert(note("u1", { body: "a walrus" }));
        await own.insert(note("u2", { body: "a walrus too" }));
        await own.update("u1", { body: "a narwhal" });
        await own.put(note("u2", { title: "narwhal" }));
        expect((await own.rank("walrus")).map((r) => r.doc.id)).toEqual([]);
        expect((await own.rank("narwhal")).map((r) => r.doc.id).sort()).toEqual(["u1", "u2"]);
        await own.delete("u1");
        await own.deleteWhere({ who: "w" });
        expect(await own.rank("narwhal")).toEqual([]);
      });

      it("a collection that searches no fields is refused; search names the fields rank reads", async () => {
        const none: CollectionDeclaration = { ...NOTES, search: [] };
        expect((await refusal(fresh(none).rank("zebra"))).code).toBe("VALIDATION_FAILED");
        const plainOnly = fresh({ ...NOTES, search: ["plain", "who"] });
        await plainOnly.insert(note("f1", { plain: "okapi", body: "giraffe" }));
        expect((await plainOnly.rank("okapi")).map((r) => r.doc.id)).toEqual(["f1"]);
        expect(await plainOnly.rank("giraffe")).toEqual([]);
      });

      it("indexes the rows already there when a collection starts searching, or searches other fields", async () => {
        const plugin = newPlugin();
        const decl = (version: number, search?: string[]): CollectionDeclaration => ({
          ...NOTES,
          version,
          ...(search ? { search } : {}),
        });
        const v1 = handle(dataFor(store, { notes: decl(1, []) }, { plugin }));
        await v1.insert(note("b1", { body: "a quokka", plain: "a wombat" }));
        const v2 = handle(dataFor(store, { notes: decl(2) }, { plugin }));
        expect((await v2.rank("quokka")).map((r) => r.doc.id)).toEqual(["b1"]);
        await v2.insert(note("b2", { body: "quokka and wombat" }));
        const v3 = handle(dataFor(store, { notes: decl(3, ["plain"]) }, { plugin }));
        expect((await v3.rank("quokka wombat")).map((r) => r.doc.id)).toEqual(["b1"]);
      });

      it("the retention sweep takes rows out of the index", async () => {
        const plugin = newPlugin();
        const decl: CollectionDeclaration = { ...NOTES, retention: { field: "at", days: 2 } };
        let now = Date.parse("2026-03-10T12:00:00.000Z");
        const swept = handle(dataFor(store, { notes: decl }, { plugin, now: () => now }));
        const day = (d: number) => new Date(now - d * 86_400_000).toISOString();
        await swept.insert(note("old", { at: day(3), body: "an axolotl" }));
        await swept.insert(note("new", { at: day(0), body: "an axolotl" }));
        expect((await swept.rank("axolotl")).map((r) => r.doc.id)).toEqual(["old", "new"]);
        now += 3_600_001;
        expect((await swept.rank("axolotl")).map((r) => r.doc.id)).toEqual(["new"]);
      });

      it("ranks a 10,000-row collection in well under a second", async () => {
        const data = dataFor(store, { notes: NOTES });
        const big = handle(data);
        const words = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "heron"];
        for (let b = 0; b < 10; b++) {
          const batch = Array.from({ length: 1000 }, (_, i) => {
            const n = b * 1000 + i;
            return note(`m${n}`, {
              at: at(n),
              body: `${words[n % 8]} ${words[(n * 7) % 8]} entry ${n}${n === 4242 ? " zircon zircon" : ""}`,
            });
          });
          await data.transaction(async (tx) => {
            for (const doc of batch) tx.notes?.insert(doc);
          });
        }
        expect(await big.count()).toBe(10_000);
        await big.rank("warm up");
        const started = performance.now();
        const found = await big.rank("zircon amber heron", { limit: 20 });
        const took = performance.now() - started;
        expect(found[0]?.doc.id).toBe("m4242");
        expect(found).toHaveLength(20);
        expect(took).toBeLessThan(500);
        // 1,250 rows hold "amber": 50 when not told, at most 1,000.
        expect(await big.rank("amber")).toHaveLength(50);
        expect(await big.rank("amber", { limit: 1000 })).toHaveLength(1000);
      }, 120_000);
    });

    describe("uniques", () => {
      it("a taken unique is CONFLICT naming the collection and its fields, on insert, put and update", async () => {
        const notes = fresh();
        await notes.insert(note("a", { tag: "red" }));
        await notes.insert(note("b"));
        for (const attempt of [
          () => notes.insert(note("c", { tag: "red" })),
          () => notes.put(note("b", { tag: "red" })),
          () => notes.update("b", { tag: "red" }),
        ]) {
          const err = await refusal(attempt);
          expect(err.code).toBe("CONFLICT");
          expect(err.message).toContain("collection notes");
          expect(err.message).toContain("same tag");
          expect(err.extra).toMatchObject({ collection: "notes", fields: ["tag"] });
        }
        expect(await notes.get("c")).toBeUndefined();
        expect(await notes.get("b")).toEqual(note("b"));
      });

      it("a unique over two fields holds their pair; rows missing either field are not held", async () => {
        const notes = fresh();
        await notes.insert(note("a", { who: "ann", n: 1 }));
        await notes.insert(note("b", { who: "bob", n: 1 }));
        await notes.insert(note("c", { who: "ann" }));
        await notes.insert(note("d", { who: "ann" }));
        const err = await refusal(notes.insert(note("e", { who: "ann", n: 1 })));
        expect(err.code).toBe("CONFLICT");
        expect(err.extra).toMatchObject({ fields: ["who", "n"] });
        // Freed once the holder lets go of the field: "one running run" style.
        await notes.update("a", { n: null as never });
        await notes.insert(note("e", { who: "ann", n: 1 }));
        expect(await notes.count({ who: "ann" })).toBe(4);
      });

      it("insert on a taken key is CONFLICT naming the key", async () => {
        const notes = fresh();
        await notes.insert(note("a"));
        const err = await refusal(notes.insert(note("a", { plain: "again" })));
        expect(err.code).toBe("CONFLICT");
        expect(err.message).toContain('key "a"');
        expect(err.extra).toMatchObject({ collection: "notes" });
        expect(await notes.get("a")).toEqual(note("a"));
      });
    });

    describe("transactions", () => {
      afterEach(() => {
        vi.useRealTimers();
      });

      it("applies its writes together and returns the function's result; reads do not see its own writes", async () => {
        const data = dataFor(store, { notes: NOTES, tallies: NOTES });
        const notes = handle(data);
        const tallies = handle(data, "tallies");
        await notes.insert(note("a", { rank: 1 }));
        const result = await data.transaction(async (tx) => {
          const a = (await tx.notes?.get("a")) as Note;
          tx.notes?.put({ ...a, rank: a.rank + 1 });
          tx.notes?.insert(note("b"));
          tx.tallies?.insert(note("t"));
          expect(await tx.notes?.get("b")).toBeUndefined();
          expect(await tx.notes?.count()).toBe(1);
          tx.notes?.delete("a");
          tx.notes?.insert(note("a", { rank: 9 }));
          return "done";
        });
        expect(result).toBe("done");
        expect(await notes.get("a")).toEqual(note("a", { rank: 9 }));
        expect(ids(await notes.find())).toEqual(["b", "a"]);
        expect(await tallies.get("t")).toEqual(note("t"));
        const finds = await data.transaction(async (tx) => {
          tx.notes?.deleteWhere({ rank: 9 });
          return [await tx.notes?.find({ where: { rank: 9 } }), await tx.notes?.count({ rank: 9 })];
        });
        expect(finds).toEqual([[note("a", { rank: 9 })], 1]);
        expect(await notes.count()).toBe(1);
      });

      it("a throw writes nothing, and the error comes out as it was thrown", async () => {
        const data = dataFor(store, { notes: NOTES });
        const notes = handle(data);
        await notes.insert(note("a"));
        const thrown = new Error("the plugin changed its mind");
        const err = await data
          .transaction(async (tx) => {
            tx.notes?.delete("a");
            tx.notes?.insert(note("b"));
            await tx.notes?.get("a");
            throw thrown;
          })
          .catch((e: unknown) => e);
        expect(err).toBe(thrown);
        expect(ids(await notes.find())).toEqual(["a"]);
      });

      it("a unique clash in the middle writes nothing, before or after it", async () => {
        const data = dataFor(store, { notes: NOTES });
        const notes = handle(data);
        await notes.insert(note("a", { tag: "red" }));
        const err = await refusal(
          data.transaction(async (tx) => {
            tx.notes?.insert(note("b"));
            tx.notes?.delete("a");
            tx.notes?.insert(note("c", { tag: "blue" }));
            tx.notes?.insert(note("d", { tag: "blue" }));
            tx.notes?.insert(note("e"));
          }),
        );
        expect(err.code).toBe("CONFLICT");
        expect(err.extra).toMatchObject({ fields: ["tag"] });
        expect(ids(await notes.find())).toEqual(["a"]);
      });

      it("a bad document inside is refused at once and nothing is written", async () => {
        const data = dataFor(store, { notes: NOTES });
        const notes = handle(data);
        const err = await refusal(
          data.transaction(async (tx) => {
            tx.notes?.insert(note("a"));
            tx.notes?.insert({ id: "b" } as Note);
          }),
        );
        expect(err.code).toBe("VALIDATION_FAILED");
        expect(await notes.count()).toBe(0);
      });

      it("a handle used after its transaction ended is refused", async () => {
        const data = dataFor(store, { notes: NOTES });
        let kept: unknown;
        await data.transaction(async (tx) => {
          kept = tx.notes;
        });
        const err = await refusal(() => (kept as { insert(d: Doc): void }).insert(note("late")));
        expect(err.code).toBe("VALIDATION_FAILED");
        expect(await handle(data).count()).toBe(0);
      });

      it(`a function that holds the store over ${TRANSACTION_TIMEOUT_MS / 1000} s fails and writes nothing`, async () => {
        const data = dataFor(store, { notes: NOTES });
        const notes = handle(data);
        await notes.insert(note("a"));
        let started!: () => void;
        const running = new Promise<void>((resolve) => {
          started = resolve;
        });
        // Only the engine's timer is faked: the store's own I/O runs for real.
        vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
        const outcome = data
          .transaction(async (tx) => {
            await tx.notes?.get("a");
            tx.notes?.delete("a");
            started();
            await new Promise(() => undefined);
          })
          .catch((e: unknown) => e);
        await running;
        await vi.advanceTimersByTimeAsync(TRANSACTION_TIMEOUT_MS + 1);
        vi.useRealTimers();
        const err = (await outcome) as SparError;
        expect(err).toBeInstanceOf(SparError);
        expect(err.code).toBe("PLUGIN_FAILED");
        expect(err.message).toContain("nothing of it was written");
        expect(await notes.get("a")).toEqual(note("a"));
        // The store is free again.
        await data.transaction(async (tx) => {
          tx.notes?.insert(note("b"));
        });
        expect(await notes.count()).toBe(2);
      });
    });

    describe("isolation", () => {
      it("two plugins with a collection of one name never see each other's rows", async () => {
        const one = handle(dataFor(store, { notes: NOTES }));
        const two = handle(dataFor(store, { notes: NOTES }));
        await one.insert(note("same", { tag: "t", plain: "one's" }));
        await two.insert(note("same", { tag: "t", plain: "two's" }));
        await two.insert(note("only-two"));
        expect((await one.get("same"))?.plain).toBe("one's");
        expect((await two.get("same"))?.plain).toBe("two's");
        expect(await one.get("only-two")).toBeUndefined();
        expect(ids(await one.find({ where: { who: "w" } }))).toEqual(["same"]);
        expect(await one.count()).toBe(1);
        expect(await one.deleteWhere({ who: "w" })).toBe(1);
        expect(await two.count()).toBe(2);
        expect(await one.search([])).toEqual([]);
      });

      it("plugins of one kit sharing a namespace share its collections", async () => {
        const namespace = `kit-${serial}-${process.pid}`;
        const a = handle(dataFor(store, { notes: NOTES }, { plugin: "moves-kit-a", namespace }));
        const b = handle(dataFor(store, { notes: NOTES }, { plugin: "moves-kit-b", namespace }));
        await a.insert(note("from-a"));
        expect(await b.get("from-a")).toEqual(note("from-a"));
      });
    });

    it("keeps every row across close and open", async () => {
      const home = tempHome();
      const plugin = newPlugin();
      const first = await factory.open(home);
      const before = handle(dataFor(first, { notes: NOTES }, { plugin }));
      for (let i = 0; i < 4; i++) {
        await before.insert(note(`k${i}`, { who: i % 2 ? "odd" : "even", at: at(10 - i), tag: `t${i}` }));
      }
      await first.close();
      const again = await factory.open(home);
      try {
        const after = handle(dataFor(again, { notes: NOTES }, { plugin }));
        expect(await after.get("k2")).toEqual(note("k2", { who: "even", at: at(8), tag: "t2" }));
        expect(ids(await after.find({ where: { who: "odd" }, order: { by: ["at"] } }))).toEqual(["k3", "k1"]);
        expect(ids(await after.find())).toEqual(["k0", "k1", "k2", "k3"]);
        expect((await refusal(after.insert(note("k9", { tag: "t0" })))).code).toBe("CONFLICT");
      } finally {
        await again.close();
      }
    });

    describe("sweeps", () => {
      const HOUR = 3_600_000;

      it("retention deletes rows older than its days, at first use and then hourly", async () => {
        const plugin = newPlugin();
        const decl: CollectionDeclaration = { ...NOTES, retention: { field: "at", days: 2 } };
        let now = Date.parse("2026-03-10T12:00:00.000Z");
        const data = dataFor(store, { notes: decl }, { plugin, now: () => now });
        const notes = handle(data);
        const day = (d: number) => new Date(now - d * 86_400_000).toISOString();
        await notes.insert(note("old", { at: day(3) }));
        await notes.insert(note("edge", { at: day(1.9) }));
        await notes.insert(note("new", { at: day(0) }));
        // Swept when first used (before these were written): nothing until an hour has passed.
        expect(await notes.count()).toBe(3);
        now += HOUR + 1;
        expect(ids(await notes.find())).toEqual(["edge", "new"]);
        // Another plugin instance (a restart) sweeps at its first use.
        now += 0.2 * 86_400_000;
        const later = handle(dataFor(store, { notes: decl }, { plugin, now: () => now }));
        expect(ids(await later.find())).toEqual(["new"]);
      });

      it("max_rows keeps the newest written rows", async () => {
        const plugin = newPlugin();
        const decl: CollectionDeclaration = { ...NOTES, max_rows: 3 };
        let now = T0;
        const notes = handle(dataFor(store, { notes: decl }, { plugin, now: () => now }));
        for (const id of ["a", "b", "c", "d", "e"])
          await notes.insert(note(id, { at: at(100 - id.charCodeAt(0)) }));
        await notes.put(note("a", { plain: "rewritten, not rewritten in order" }));
        expect(await notes.count()).toBe(5);
        now += HOUR + 1;
        expect(ids(await notes.find())).toEqual(["c", "d", "e"]);
      });
    });

    describe("versions", () => {
      it("a new version's indexes find rows written under the old one", async () => {
        const plugin = newPlugin();
        const v1: CollectionDeclaration = { version: 1, key: "id", fields: NOTE_FIELDS, indexes: [["who"]] };
        const old = handle(dataFor(store, { notes: v1 }, { plugin }));
        await old.insert(note("a", { plain: "x", n: 5, done: true, score: 2 }));
        await old.insert(note("b", { plain: "y", n: 6, at: at(9) }));
        await old.insert(note("c", { plain: "x", n: 5, at: at(3) }));
        const v2: CollectionDeclaration = {
          ...v1,
          version: 2,
          indexes: [["plain", "at"], ["n"], ["done"], ["score"]],
          unique: [["tag"]],
        };
        const now = handle(dataFor(store, { notes: v2 }, { plugin }));
        expect(ids(await now.find({ where: { plain: "x" }, order: { by: ["at"], desc: true } }))).toEqual([
          "c",
          "a",
        ]);
        expect(ids(await now.find({ where: { n: { gte: 6 } } }))).toEqual(["b"]);
        expect(ids(await now.find({ where: { done: true } }))).toEqual(["a"]);
        expect(ids(await now.find({ where: { score: 2 } }))).toEqual(["a"]);
        expect((await refusal(now.find({ where: { who: "w" } }))).code).toBe("VALIDATION_FAILED");
        await now.insert(note("d", { tag: "u" }));
        expect((await refusal(now.insert(note("e", { tag: "u" })))).code).toBe("CONFLICT");
      });

      it("a declaration changed under its version, or older than the stored one, is PLUGIN_INVALID", async () => {
        const plugin = newPlugin();
        await handle(dataFor(store, { notes: NOTES }, { plugin })).insert(note("a"));
        const changed = { ...NOTES, indexes: [["who"]] };
        const err = await refusal(handle(dataFor(store, { notes: changed }, { plugin })).get("a"));
        expect(err.code).toBe("PLUGIN_INVALID");
        expect(err.message).toContain(`collection ${plugin}/notes`);
        expect(err.message).toContain("bump its version");
        await handle(dataFor(store, { notes: { ...changed, version: 2 } }, { plugin })).get("a");
        const older = await refusal(handle(dataFor(store, { notes: NOTES }, { plugin })).get("a"));
        expect(older.code).toBe("PLUGIN_INVALID");
        expect(older.message).toContain("version 2, newer than the plugin's 1");
        // Laid out differently, the same declaration is the same checksum.
        const reordered = {
          unique: NOTES.unique,
          indexes: changed.indexes,
          fields: NOTE_FIELDS,
          key: "id",
          version: 2,
        };
        expect(await handle(dataFor(store, { notes: reordered }, { plugin })).get("a")).toEqual(note("a"));
      });

      it("a unique that rows already break is PLUGIN_INVALID, and the old version still works", async () => {
        const plugin = newPlugin();
        const v1: CollectionDeclaration = { version: 1, key: "id", fields: NOTE_FIELDS, indexes: [["who"]] };
        const old = handle(dataFor(store, { notes: v1 }, { plugin }));
        await old.insert(note("a", { plain: "same" }));
        await old.insert(note("b", { plain: "same" }));
        const v2 = { ...v1, version: 2, unique: [["plain"]] };
        const err = await refusal(handle(dataFor(store, { notes: v2 }, { plugin })).get("a"));
        expect(err.code).toBe("PLUGIN_INVALID");
        expect(err.message).toContain("plain");
        expect(err.message).toContain("cannot be made unique");
        expect(
          ids(await handle(dataFor(store, { notes: v1 }, { plugin })).find({ where: { who: "w" } })),
        ).toEqual(["a", "b"]);
      });
    });

    describe("bad documents and queries", () => {
      const named = async (promise: Promise<unknown>, field?: string) => {
        const err = await refusal(promise);
        expect(err.code).toBe("VALIDATION_FAILED");
        expect(err.extra).toMatchObject({ collection: "notes", ...(field ? { field } : {}) });
        expect(err.message).toContain("collection notes");
        if (field) expect(err.message).toContain(`"${field}"`);
        return err;
      };

      it("a field of the wrong type, unknown, missing, or over its max_bytes is refused, naming it", async () => {
        const plugin = newPlugin();
        const notes = handle(dataFor(store, { notes: NOTES }, { plugin }));
        const wrong = await named(notes.insert(note("a", { rank: "1" as never })), "rank");
        expect(wrong.extra).toMatchObject({ plugin });
        expect(wrong.message).toContain(`plugin ${plugin}`);
        await named(notes.insert(note("a", { rank: 1.5 })), "rank");
        await named(notes.insert(note("a", { score: Number.NaN })), "score");
        await named(notes.insert(note("a", { done: 1 as never })), "done");
        await named(notes.insert(note("a", { at: "2026-01-01 00:00:00" })), "at");
        await named(notes.insert(note("a", { at: "2026-13-45T00:00:00.000Z" })), "at");
        await named(notes.insert({ ...note("a"), colour: "red" }), "colour");
        await named(notes.insert({ id: "a", who: "w", rank: 0 } as Note), "at");
        await named(notes.insert(note("a", { tag: "x".repeat(17) })), "tag");
        await named(notes.insert(note("a", { tag: "é".repeat(9) })), "tag");
        await named(notes.insert(note("a", { meta: { long: "y".repeat(64) } })), "meta");
        await named(notes.put([] as unknown as Note));
        const secret = await named(notes.insert(note("a", { token: 987654321 as never })), "token");
        expect(secret.message).not.toContain("987654321");
        expect(await notes.count()).toBe(0);
      });

      it("a query on a non-indexed field, a range on a string, an order on an optional or string field, a limit out of range", async () => {
        const notes = fresh();
        await named(notes.find({ where: { plain: "x" } }), "plain");
        await named(notes.find({ where: { body: "x" } }), "body");
        await named(notes.count({ token: "x" }), "token");
        await named(notes.deleteWhere({ meta: "x" }), "meta");
        await named(notes.find({ where: { who: { gt: "a" } } }), "who");
        await named(notes.find({ where: { done: { lt: 1 } as never } }), "done");
        await named(notes.find({ where: { at: { near: at(1) } as never } }), "at");
        await named(notes.find({ where: { at: {} } }), "at");
        await named(notes.find({ where: { rank: "1" as never } }), "rank");
        await named(notes.find({ where: { who: { in: ["a", 2 as never] } } }), "who");
        await named(notes.find({ order: { by: ["score"] } }), "score");
        await named(notes.find({ order: { by: ["who"] } }), "who");
        await named(notes.find({ order: { by: ["plain"] } }), "plain");
        for (const limit of [0, -1, 1.5, 10_001]) {
          const err = await named(notes.find({ limit }));
          expect(err.message).toContain("limit");
        }
        await named(notes.search(["x"], { limit: 0 }));
      });
    });
  });
}

// ---- The declaration checks: no store involved, so once. ----

describe("collection contract: declarations refused before any plugin code runs", () => {
  const base = (): CollectionDeclaration => structuredClone(NOTES);
  const refused = (data: DataDeclaration, where: string, plugin = "moves-bad") => {
    let err: unknown;
    try {
      checkDataDeclaration(plugin, data);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SparError);
    const e = err as SparError;
    expect(e.code).toBe("PLUGIN_INVALID");
    expect(e.extra).toMatchObject({ plugin });
    expect(e.message).toContain(`plugin ${plugin}`);
    expect(e.message).toContain(`data.${where}`);
    return e;
  };
  const withNotes = (change: (d: CollectionDeclaration) => void): DataDeclaration => {
    const decl = base();
    change(decl);
    return { collections: { notes: decl } };
  };

  it("accepts the suite's own declaration", () => {
    expect(() => checkDataDeclaration("moves-good", { collections: { notes: NOTES } })).not.toThrow();
  });

  it("refuses bad names: namespace, collection, the reserved one, field", () => {
    refused({ namespace: "Bad_NS", collections: { notes: NOTES } }, "namespace");
    refused({ collections: { "1notes": NOTES } }, "collections.1notes");
    refused({ collections: { Notes: NOTES } }, "collections.Notes");
    refused({ collections: { transaction: NOTES } }, "collections.transaction");
    refused(
      withNotes((d) => {
        d.fields["Bad-Field"] = { type: "string" };
      }),
      "collections.notes.fields.Bad-Field",
    );
  });

  it("refuses a bad version, an unknown type, max_bytes on a number", () => {
    refused(
      withNotes((d) => {
        d.version = 0;
      }),
      "collections.notes.version",
    );
    refused(
      withNotes((d) => {
        d.version = 1.5;
      }),
      "collections.notes.version",
    );
    const unknown = refused(
      withNotes((d) => {
        d.fields.colour = { type: "colour" as never };
      }),
      "collections.notes.fields.colour",
    );
    expect(unknown.message).toContain('"colour"');
    refused(
      withNotes((d) => {
        d.fields.rank = { type: "integer", max_bytes: 4 };
      }),
      "collections.notes.fields.rank",
    );
  });

  it("refuses a key that is missing, optional, or not a string", () => {
    for (const change of [
      (d: CollectionDeclaration) => {
        d.key = "nope";
      },
      (d: CollectionDeclaration) => {
        d.fields.id = { type: "string", optional: true };
      },
      (d: CollectionDeclaration) => {
        d.key = "rank";
      },
    ]) {
      refused(withNotes(change), "collections.notes.key");
    }
  });

  it("refuses indexes and uniques that are empty, repeat a field, or name one that cannot be indexed", () => {
    for (const kind of ["indexes", "unique"] as const) {
      refused(
        withNotes((d) => {
          d[kind] = [[]];
        }),
        `collections.notes.${kind}`,
      );
      refused(
        withNotes((d) => {
          d[kind] = [["who", "who"]];
        }),
        `collections.notes.${kind}`,
      );
      const undeclared = refused(
        withNotes((d) => {
          d[kind] = [["ghost"]];
        }),
        `collections.notes.${kind}`,
      );
      expect(undeclared.message).toContain('"ghost"');
      for (const [field, why] of [
        ["meta", "its type is json"],
        ["token", "it holds a secret"],
        ["body", "it holds free text"],
      ]) {
        const err = refused(
          withNotes((d) => {
            d[kind] = [[field as string]];
          }),
          `collections.notes.${kind}`,
        );
        expect(err.message).toContain(`"${field}"`);
        expect(err.message).toContain(why);
      }
    }
  });

  it("refuses search naming a field that is undeclared, repeated, not a string, or secret", () => {
    refused(
      withNotes((d) => {
        d.search = ["title", "title"];
      }),
      "collections.notes.search",
    );
    for (const [field, why] of [
      ["ghost", "not a declared field"],
      ["rank", "its type is integer"],
      ["meta", "its type is json"],
      ["token", "it holds a secret"],
    ]) {
      const err = refused(
        withNotes((d) => {
          d.search = [field as string];
        }),
        "collections.notes.search",
      );
      expect(err.message).toContain(`"${field}"`);
      expect(err.message).toContain(why);
    }
    // Any other string field may be searched: indexed, text, or neither.
    expect(() =>
      checkDataDeclaration("moves-ok", {
        collections: { notes: { ...NOTES, search: ["who", "body", "plain"] } },
      }),
    ).not.toThrow();
  });

  it("refuses retention on a field that is not an indexed time", () => {
    for (const field of ["rank", "ghost"]) {
      const err = refused(
        withNotes((d) => {
          d.retention = { field, days: 1 };
        }),
        "collections.notes.retention",
      );
      expect(err.message).toContain(`"${field}"`);
    }
    refused(
      withNotes((d) => {
        d.indexes = [["who"]];
        d.retention = { field: "at", days: 1 };
      }),
      "collections.notes.retention",
    );
  });

  it("namespaces: bundled plugins may share one declared identically; a user plugin may not take another's", () => {
    const shared = { namespace: "gorillas", collections: { runs: NOTES } };
    expect(() =>
      checkNamespaces([
        { id: "scheduler-local", source: "bundled", data: shared },
        { id: "scheduler-redis", source: "bundled", data: structuredClone(shared) },
        { id: "moves-own", source: "user", data: { collections: { notes: NOTES } } },
      ]),
    ).not.toThrow();
    const clash = (() => {
      try {
        checkNamespaces([
          { id: "scheduler-local", source: "bundled", data: shared },
          {
            id: "scheduler-redis",
            source: "bundled",
            data: { namespace: "gorillas", collections: { runs: { ...NOTES, version: 2 } } },
          },
        ]);
      } catch (e) {
        return e as SparError;
      }
      throw new Error("no clash");
    })();
    expect(clash.code).toBe("PLUGIN_INVALID");
    expect(clash.message).toContain("scheduler-local");
    expect(clash.message).toContain("scheduler-redis");
    expect(clash.message).toContain('"gorillas"');
    const taken = (() => {
      try {
        checkNamespaces([{ id: "moves-thief", source: "user", data: shared }]);
      } catch (e) {
        return e as SparError;
      }
      throw new Error("not refused");
    })();
    expect(taken.code).toBe("PLUGIN_INVALID");
    expect(taken.extra).toMatchObject({ plugin: "moves-thief" });
    expect(taken.message).toContain('"gorillas"');
    // A bad declaration is refused there too, naming its plugin.
    expect(() =>
      checkNamespaces([{ id: "moves-odd", source: "user", data: { collections: { transaction: NOTES } } }]),
    ).toThrow(/moves-odd/);
  });
});

// ---- PostgreSQL only: what the server sees, and several daemons on one schema. ----

describe.skipIf(!TEST_DATABASE_URL && !underCi())(
  `collection contract: store-postgres only${TEST_DATABASE_URL || underCi() ? "" : ` (${SKIP_REASON})`}`,
  () => {
    const opened: Store[] = [];
    afterAll(async () => {
      for (const s of opened) await s.close().catch(() => undefined);
      if (TEST_DATABASE_URL) await dropSchemas(PG_URL, pgSchemas);
    });
    const open = async (home: string) => {
      const s = await openPostgres(home);
      opened.push(s);
      return s;
    };

    async function rawRows(schema: string): Promise<string> {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const out: unknown[] = [];
        for (const table of ["collection_rows", "collection_schemas"]) {
          out.push((await client.query(`SELECT * FROM "${schema}".${table}`)).rows);
        }
        return JSON.stringify(out, (_k, v: unknown) =>
          v && typeof v === "object" && (v as { type?: unknown }).type === "Buffer"
            ? Buffer.from((v as { data: number[] }).data).toString("hex")
            : v,
        );
      } finally {
        await client.end();
      }
    }

    it("holds no plaintext of any string a plugin stored: keys, indexed, text, secret and json fields", async () => {
      const home = tempHome();
      const store = await open(home);
      const notes = handle(dataFor(store, { notes: NOTES }));
      const canary = (what: string) => `canary-${what}-${serial}-${process.pid}`;
      await notes.insert(
        note(canary("key"), {
          who: canary("who"),
          tag: canary("tag").slice(0, 16),
          title: canary("title"),
          body: canary("body"),
          token: canary("token"),
          plain: canary("plain"),
          meta: { nested: canary("meta") },
        }),
      );
      expect(ids(await notes.find({ where: { who: canary("who") } }))).toEqual([canary("key")]);
      const raw = await rawRows(schemaForHome(home));
      for (const what of ["key", "who", "title", "body", "token", "plain", "meta"]) {
        expect(raw).not.toContain(canary(what));
        expect(raw).not.toContain(Buffer.from(canary(what)).toString("hex"));
      }
      expect(raw).not.toContain(canary("tag").slice(0, 16));
      // Times and numbers are plain: the server orders them.
      expect(raw).toContain(at(0));
    });

    it("two daemons on one schema incrementing one counter in transactions lose no update", async () => {
      const home = tempHome();
      const a = await open(home);
      const b = await open(home);
      const plugin = newPlugin();
      const decl: CollectionDeclaration = {
        version: 1,
        key: "id",
        fields: { id: { type: "string" }, value: { type: "integer" } },
      };
      const onA = dataFor(a, { counters: decl }, { plugin });
      const onB = dataFor(b, { counters: decl }, { plugin });
      type Counter = { id: string; value: number };
      // Read by key, or found among the rows (what find read is held just the same).
      const bump = (data: PluginData, id: string, byFind: boolean) =>
        data.transaction(async (tx) => {
          const row = byFind
            ? ((await tx.counters?.find()) as Counter[] | undefined)?.find((r) => r.id === id)
            : ((await tx.counters?.get(id)) as Counter | undefined);
          tx.counters?.put({ id, value: (row?.value ?? 0) + 1 });
        });
      const ROUNDS = 12;
      // "present" exists first (its row is held); "absent" starts with no row (its key is held).
      await handle<Doc>(onA, "counters").insert({ id: "present", value: 0 });
      await Promise.all(
        [onA, onB].flatMap((data) =>
          Array.from({ length: ROUNDS }, (_, i) => [
            bump(data, "present", i % 3 === 0),
            bump(data, "absent", false),
          ]).flat(),
        ),
      );
      const counters = handle<Doc>(onB, "counters");
      expect(await counters.get("present")).toEqual({ id: "present", value: 2 * ROUNDS });
      expect(await counters.get("absent")).toEqual({ id: "absent", value: 2 * ROUNDS });
    });

    it("two transactions each writing what the other read: one is CONFLICT, the other commits", async () => {
      const home = tempHome();
      const [a, b] = [await open(home), await open(home)];
      const plugin = newPlugin();
      const decl: CollectionDeclaration = {
        version: 1,
        key: "id",
        fields: { id: { type: "string" }, value: { type: "integer" } },
      };
      const [onA, onB] = [
        dataFor(a, { counters: decl }, { plugin }),
        dataFor(b, { counters: decl }, { plugin }),
      ];
      await handle<Doc>(onA, "counters").insert({ id: "x", value: 0 });
      let arrived = 0;
      let bothRead!: () => void;
      const barrier = new Promise<void>((resolve) => {
        bothRead = resolve;
      });
      const cross = (data: PluginData, read: string, write: string) =>
        data.transaction(async (tx) => {
          await tx.counters?.get(read);
          if (++arrived === 2) bothRead();
          await barrier;
          tx.counters?.put({ id: write, value: 1 });
        });
      const outcomes = await Promise.allSettled([cross(onA, "x", "y"), cross(onB, "y", "x")]);
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      const failed = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
      expect(failed.reason).toBeInstanceOf(SparError);
      expect((failed.reason as SparError).code).toBe("CONFLICT");
      expect((failed.reason as SparError).message).toContain("try again");
    });

    it("daemons making one collection at once make it once", async () => {
      const home = tempHome();
      const stores = [await open(home), await open(home), await open(home)];
      const plugin = newPlugin();
      const counts = await Promise.all(
        stores.map((s, i) =>
          handle(dataFor(s, { notes: NOTES }, { plugin })).insert(note(`m${i}`, { tag: `t${i}` })),
        ),
      );
      expect(counts).toHaveLength(3);
      const v2 = { ...NOTES, version: 2, indexes: [...(NOTES.indexes ?? []), ["plain"]] };
      const found = await Promise.all(
        stores.map((s) => handle(dataFor(s, { notes: v2 }, { plugin })).find({ where: { plain: null } })),
      );
      for (const rows of found) expect(ids(rows).sort()).toEqual(["m0", "m1", "m2"]);
    });

    it("finds through the collection's partial indexes, on the slots of its indexed fields", async () => {
      const home = tempHome();
      const store = await open(home);
      const plugin = newPlugin();
      const notes = handle(dataFor(store, { notes: NOTES }, { plugin }));
      for (let i = 0; i < 20; i++)
        await notes.insert(note(`q${i}`, { who: `w${i % 4}`, at: at(i), rank: i }));
      const layout = layoutOf(NOTES);
      const slot = (field: string) => slotSql(layout[field] ?? "");
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        await client.query(`SET search_path TO "${schemaForHome(home)}"`);
        // Whether an index can serve, not whether the planner prefers it over 20 rows.
        await client.query("SET enable_seqscan = off");
        await client.query("ANALYZE collection_rows");
        const plan = async (where: string, order: string, value: unknown) =>
          (
            await client.query<{ "QUERY PLAN": string }>(
              `EXPLAIN SELECT seq, key_mac, doc FROM collection_rows WHERE namespace = '${plugin}' AND collection = 'notes'${where} ORDER BY ${order} LIMIT 10`,
              [value],
            )
          ).rows
            .map((r) => r["QUERY PLAN"])
            .join("\n");
        const own = /cx_[0-9a-f]{16}_\d/;
        expect(await plan(` AND ${slot("who")} = $1::bytea`, "seq", Buffer.alloc(32))).toMatch(own);
        const ordered = await plan(` AND ${slot("who")} = $1::bytea`, `${slot("at")}, seq`, Buffer.alloc(32));
        expect(ordered).toMatch(/Index Scan using cx_[0-9a-f]{16}_0/);
        expect(ordered).not.toContain("Sort");
        const ranked = await plan(` AND ${slot("rank")} > $1::float8`, `${slot("rank")} DESC, seq DESC`, 3);
        expect(ranked).toMatch(/Index Scan Backward using cx_[0-9a-f]{16}_1/);
      } finally {
        await client.end();
      }
    });

    /** Runs `sql` on the schema behind the store's back. */
    async function onSchema<R extends object>(home: string, sql: string): Promise<R[]> {
      const client = new pg.Client({
        connectionString: PG_URL,
        options: `-c search_path=${schemaForHome(home)}`,
      });
      await client.connect();
      try {
        return (await client.query<R>(sql)).rows;
      } finally {
        await client.end();
      }
    }

    it("keeps words as keyed tokens: no word of a searched field reaches the server", async () => {
      const home = tempHome();
      const store = await open(home);
      const notes = handle(dataFor(store, { notes: NOTES }));
      await notes.insert(note("w1", { title: "Pelican brief", body: "pelicans nest near Lisbon harbour" }));
      expect((await notes.rank("pelican lisbon")).map((r) => r.doc.id)).toEqual(["w1"]);
      const [row] = await onSchema<{ words: string }>(
        home,
        "SELECT words::text AS words FROM collection_rows",
      );
      const words = row?.words ?? "";
      expect(words).toMatch(/^('[wp][0-9a-f]{16}':[0-9A,]+ ?)+$/);
      for (const word of [
        "pelican",
        "pelicans",
        "brief",
        "nest",
        "near",
        "lisbon",
        "harbour",
        "pel",
        "lis",
      ]) {
        expect(words).not.toContain(word);
        // Hex of a short word may turn up in random hex by chance: only the longer ones are looked for.
        if (word.length >= 5) expect(words).not.toContain(Buffer.from(word).toString("hex"));
      }
    });

    it("a collection made before the word index (migration 9) is indexed at its next first use", async () => {
      const home = tempHome();
      const store = await open(home);
      const plugin = newPlugin();
      const notes = handle(dataFor(store, { notes: NOTES }, { plugin }));
      await notes.insert(note("o1", { body: "an old pangolin" }));
      await notes.insert(note("o2", { title: "Pangolins" }));
      // What migration 9 leaves a collection made before it: no words, no searched fields recorded.
      await onSchema(home, "UPDATE collection_rows SET words = NULL");
      await onSchema(home, "UPDATE collection_schemas SET search = NULL");
      expect(await notes.rank("pangolin")).toEqual([]);
      const restarted = handle(dataFor(store, { notes: NOTES }, { plugin }));
      expect((await restarted.rank("pangolin")).map((r) => r.doc.id).sort()).toEqual(["o1", "o2"]);
      expect(await restarted.get("o1")).toEqual(note("o1", { body: "an old pangolin" }));
    });

    it("imports docs in order, unslotted, and the next ensure slots them (before the collection is made or after)", async () => {
      const home = tempHome();
      const store = await open(home);
      const plugin = newPlugin();
      const schema = schemaForHome(home);
      const pool = new pg.Pool({ connectionString: PG_URL, options: `-c search_path=${schema}`, max: 1 });
      try {
        const cipher = await openCipher(pool, Buffer.from(MASTER_SECRET), schema);
        const imported = async (docs: Note[]) => {
          const client = await pool.connect();
          try {
            await client.query("BEGIN");
            await importDocs(
              client,
              cipher,
              plugin,
              "notes",
              docs.map((doc) => ({ key: doc.id, doc })),
            );
            await client.query("COMMIT");
          } finally {
            client.release();
          }
        };
        const legacy = Array.from({ length: 7 }, (_, i) =>
          note(`z${6 - i}`, { who: i % 2 ? "odd" : "even", at: at(i), tag: `t${i}` }),
        );
        await imported(legacy.slice(0, 4));
        const first = handle(dataFor(store, { notes: NOTES }, { plugin }));
        expect(ids(await first.find())).toEqual(["z6", "z5", "z4", "z3"]);
        expect(ids(await first.find({ where: { who: "odd" }, order: { by: ["at"], desc: true } }))).toEqual([
          "z3",
          "z5",
        ]);
        expect((await refusal(first.insert(note("dup", { tag: "t0" })))).code).toBe("CONFLICT");
        await imported(legacy.slice(4));
        const second = handle(dataFor(store, { notes: NOTES }, { plugin }));
        expect(ids(await second.find({ where: { who: "even" } }))).toEqual(["z6", "z4", "z2", "z0"]);
        expect(await second.get("z1")).toEqual(legacy[5]);
      } finally {
        await pool.end();
      }
    });
  },
);

// ---- SQLite only: the partial indexes serve the queries. ----

describe("collection contract: store-sqlite only", () => {
  it("a collection made before the word index (migration 23) is indexed at its first use; the index checks out", async () => {
    const home = tempHome();
    const plugin = newPlugin();
    const db = await legacySqlite(home, 23);
    db.prepare(
      "INSERT INTO collection_schemas (namespace, collection, version, checksum, updated_at) VALUES (?, 'notes', 1, ?, ?)",
    ).run(plugin, declarationChecksum(NOTES), at(0));
    const row = db.prepare(
      "INSERT INTO collection_rows (namespace, collection, key, doc) VALUES (?, 'notes', ?, ?)",
    );
    row.run(plugin, "o1", JSON.stringify(note("o1", { body: "an old pangolin" })));
    row.run(
      plugin,
      "o2",
      JSON.stringify(note("o2", { title: "Pangolins", body: "seen at dusk in the long grass" })),
    );
    db.close();
    const store = await openSqliteStore({ home, masterSecret: Buffer.from(MASTER_SECRET) });
    try {
      const notes = handle(dataFor(store, { notes: NOTES }, { plugin }));
      expect((await notes.rank("pangolin")).map((r) => r.doc.id).sort()).toEqual(["o1", "o2"]);
      await notes.insert(note("n1", { body: "a pangolin, a pangolin" }));
      await notes.delete("o1");
      expect((await notes.rank("pangolin")).map((r) => r.doc.id)).toEqual(["n1", "o2"]);
      const secret = Buffer.from(MASTER_SECRET);
      // integrity_check reads the FTS5 index too (SQLite 3.44 and later).
      expect(await queryRows(home, "PRAGMA integrity_check", secret)).toEqual([{ integrity_check: "ok" }]);
    } finally {
      await store.close();
    }
  });

  it("find with an equality on an indexed field uses the collection's partial index", async () => {
    const home = tempHome();
    const store = await openSqliteStore({ home, masterSecret: Buffer.from(MASTER_SECRET) });
    try {
      const plugin = newPlugin();
      const notes = handle(dataFor(store, { notes: NOTES }, { plugin }));
      for (let i = 0; i < 50; i++)
        await notes.insert(note(`q${i}`, { who: `w${i % 5}`, at: at(i), rank: i }));
      expect(ids(await notes.find({ where: { who: "w3" }, order: { by: ["at"] }, limit: 2 }))).toEqual([
        "q3",
        "q8",
      ]);
      const scope = `namespace = '${plugin}' AND collection = 'notes'`;
      // The statements collections.ts prepares for these finds, values bound as it binds them.
      const plan = async (where: string, order: string, value: string | number) =>
        (
          (await queryRows(
            home,
            `EXPLAIN QUERY PLAN SELECT seq, doc FROM collection_rows WHERE ${scope}${where} ORDER BY ${order} LIMIT ?`,
            Buffer.from(MASTER_SECRET),
            [value, 10],
          )) as { detail: string }[]
        )
          .map((r) => r.detail)
          .join("\n");
      // Index 0 is (who, at, seq), 1 (rank, seq), 5 the unique (who, n): any of this collection's serves.
      const own = new RegExp(`USING INDEX "?cx:${plugin}/notes:\\d"?`);
      const byWho = await plan(" AND json_extract(doc, '$.who') = ?", "seq", "w3");
      expect(byWho).toMatch(own);
      const byRank = await plan(" AND json_extract(doc, '$.rank') = ?", "seq", 3);
      expect(byRank).toMatch(new RegExp(`USING INDEX "?cx:${plugin}/notes:1"?`));
      expect(byRank).not.toContain("TEMP B-TREE");
      const ordered = await plan(
        " AND json_extract(doc, '$.who') = ?",
        "json_extract(doc, '$.at'), seq",
        "w3",
      );
      expect(ordered).toMatch(new RegExp(`USING INDEX "?cx:${plugin}/notes:0"?`));
      expect(ordered).not.toContain("TEMP B-TREE");
    } finally {
      await store.close();
    }
  });
});
