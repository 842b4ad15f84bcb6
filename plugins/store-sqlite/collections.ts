/**
 * Every plugin's collections in the one encrypted database (migration 13): a row per document in
 * `collection_rows` (its JSON, its key, its write sequence), and per collection the partial
 * expression indexes its declaration asks for, over `json_extract` of the indexed fields. The engine
 * (sdk/collection-checks.ts) has checked every name, document and query before it gets here, so
 * names are written into the SQL as they are (a partial index serves only a query that names its
 * collection literally) and values are bound.
 */
import type Database from "better-sqlite3-multiple-ciphers";
import type {
  CollectionRef,
  CollectionStore,
  CollectionWrite,
  StoredCondition,
  StoredQuery,
  StoredRankQuery,
  StoredRow,
} from "../../sdk/index.js";
import { SparError, searchedFields } from "../../sdk/index.js";
import type { Synced } from "./sync-store.js";

/** What store.ts builds the asynchronous CollectionStore from: reads, `ensure`, and the writes of one transaction. */
export interface CollectionRows {
  ensure(ref: CollectionRef, checksum: string): Promise<void>;
  get(ref: CollectionRef, key: string): Promise<StoredRow | undefined>;
  find(ref: CollectionRef, query: StoredQuery): Promise<StoredRow[]>;
  count(ref: CollectionRef, where: StoredCondition[]): Promise<number>;
  rank(ref: CollectionRef, query: StoredRankQuery): Promise<{ row: StoredRow; score: number }[]>;
  apply(writes: CollectionWrite[]): Promise<number[]>;
}

interface DbRow {
  seq: number;
  doc: string;
}

type Bound = string | number;

const field = (name: string) => `json_extract(doc, '$.${name}')`;
const scopeSql = (ref: CollectionRef) => `namespace = '${ref.namespace}' AND collection = '${ref.name}'`;
const indexPrefix = (ref: CollectionRef) => `cx:${ref.namespace}/${ref.name}:`;
const bind = (v: string | number | boolean): Bound => (typeof v === "boolean" ? (v ? 1 : 0) : v);

const OPS = { lt: "<", lte: "<=", gt: ">", gte: ">=" } as const;

function conditionsSql(where: StoredCondition[], params: Bound[]): string {
  let sql = "";
  for (const c of where) {
    const e = field(c.field);
    if (c.op === "null") sql += ` AND ${e} IS NULL`;
    else if (c.op === "eq") {
      sql += ` AND ${e} = ?`;
      params.push(bind(c.value));
    } else if (c.op === "in") {
      if (c.values.length === 0) sql += " AND 0";
      else sql += ` AND ${e} IN (${c.values.map(() => "?").join(", ")})`;
      params.push(...c.values.map(bind));
    } else {
      sql += ` AND ${e} ${OPS[c.op]} ?`;
      params.push(c.value);
    }
  }
  return sql;
}

/** The synchronous rows over `db`; corruption.ts wraps them like every other write and read. */
export function createCollectionRows(db: Database.Database, now: () => string): Synced<CollectionRows> {
  const statements = new Map<string, Database.Statement>();
  const prepared = (sql: string): Database.Statement => {
    let s = statements.get(sql);
    if (!s) {
      s = db.prepare(sql);
      statements.set(sql, s);
    }
    return s;
  };
  const schema = {
    get: db.prepare<[string, string], { version: number; checksum: string }>(
      "SELECT version, checksum FROM collection_schemas WHERE namespace = ? AND collection = ?",
    ),
    put: db.prepare(
      `INSERT INTO collection_schemas (namespace, collection, version, checksum, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (namespace, collection) DO UPDATE SET version = excluded.version,
         checksum = excluded.checksum, updated_at = excluded.updated_at`,
    ),
    indexes: db
      .prepare<[{ prefix: string }], string>(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND substr(name, 1, length(@prefix)) = @prefix",
      )
      .pluck(),
  };
  const rows = {
    get: db.prepare<[string, string, string], DbRow>(
      "SELECT seq, doc FROM collection_rows WHERE namespace = ? AND collection = ? AND key = ?",
    ),
    insert: db.prepare("INSERT INTO collection_rows (namespace, collection, key, doc) VALUES (?, ?, ?, ?)"),
    add: db.prepare(
      `INSERT INTO collection_rows (namespace, collection, key, doc) VALUES (?, ?, ?, ?)
       ON CONFLICT (namespace, collection, key) DO NOTHING`,
    ),
    put: db.prepare(
      `INSERT INTO collection_rows (namespace, collection, key, doc) VALUES (?, ?, ?, ?)
       ON CONFLICT (namespace, collection, key) DO UPDATE SET doc = excluded.doc`,
    ),
    delete: db.prepare("DELETE FROM collection_rows WHERE namespace = ? AND collection = ? AND key = ?"),
  };

  const words = {
    get: db.prepare<[string, string], { id: number; fields: string }>(
      "SELECT id, fields FROM collection_search WHERE namespace = ? AND collection = ?",
    ),
    put: db.prepare(
      `INSERT INTO collection_search (namespace, collection, fields) VALUES (?, ?, ?)
       ON CONFLICT (namespace, collection) DO UPDATE SET fields = excluded.fields`,
    ),
    drop: db.prepare("DELETE FROM collection_search WHERE namespace = ? AND collection = ?"),
  };

  /** The collection's word index made again when its searched fields are not the recorded ones. */
  const indexWords = (ref: CollectionRef) => {
    const fields = searchedFields(ref.declaration);
    const wanted = fields.length === 0 ? undefined : JSON.stringify(fields);
    const recorded = words.get.get(ref.namespace, ref.name);
    if (recorded?.fields === wanted) return;
    if (recorded) db.exec(dropWordsSql(recorded.id));
    if (!wanted) {
      words.drop.run(ref.namespace, ref.name);
      return;
    }
    words.put.run(ref.namespace, ref.name, wanted);
    const made = words.get.get(ref.namespace, ref.name) as { id: number };
    db.exec(wordsTableSql(made.id, ref, fields));
  };

  const ensure = db.transaction((ref: CollectionRef, checksum: string) => {
    ensureIndexes(ref, checksum);
    indexWords(ref);
  });

  const ensureIndexes = (ref: CollectionRef, checksum: string) => {
    const { namespace, name, declaration } = ref;
    const recorded = schema.get.get(namespace, name);
    if (recorded) {
      if (recorded.version > declaration.version) {
        throw new SparError(
          "PLUGIN_INVALID",
          `collection ${namespace}/${name}: the database holds version ${recorded.version}, newer than the plugin's ${declaration.version}; run the Spar that wrote it`,
          { plugin: namespace },
        );
      }
      if (recorded.version === declaration.version) {
        if (recorded.checksum !== checksum) {
          throw new SparError(
            "PLUGIN_INVALID",
            `collection ${namespace}/${name}: its declaration changed under version ${declaration.version} (checksum ${recorded.checksum.slice(0, 12)}… recorded, ${checksum.slice(0, 12)}… now); bump its version`,
            { plugin: namespace },
          );
        }
        return;
      }
    }
    const prefix = indexPrefix(ref);
    for (const index of schema.indexes.all({ prefix })) db.exec(`DROP INDEX "${index}"`);
    const lists: [boolean, string[]][] = [
      ...(declaration.indexes ?? []).map((l): [boolean, string[]] => [false, l]),
      ...(declaration.unique ?? []).map((l): [boolean, string[]] => [true, l]),
    ];
    lists.forEach(([unique, fields], i) => {
      const columns = [...fields.map(field), ...(unique ? [] : ["seq"])].join(", ");
      try {
        db.exec(
          `CREATE ${unique ? "UNIQUE " : ""}INDEX "${prefix}${i}" ON collection_rows (${columns}) WHERE ${scopeSql(ref)}`,
        );
      } catch (err) {
        if (unique && isUniqueViolation(err)) {
          throw new SparError(
            "PLUGIN_INVALID",
            `collection ${namespace}/${name}: rows already share ${fields.join(", ")}, so they cannot be made unique`,
            { plugin: namespace },
          );
        }
        throw err;
      }
    });
    schema.put.run(namespace, name, declaration.version, checksum, now());
  };

  const conflict = (ref: CollectionRef, key: string, err: unknown): unknown => {
    if (!isUniqueViolation(err)) return err;
    const message = err instanceof Error ? err.message : "";
    const index = /index '([^']+)'/.exec(message)?.[1];
    const prefix = indexPrefix(ref);
    const n = index?.startsWith(prefix) ? Number(index.slice(prefix.length)) : Number.NaN;
    const lists = [...(ref.declaration.indexes ?? []), ...(ref.declaration.unique ?? [])];
    const fields = lists[n];
    return new SparError(
      "CONFLICT",
      fields
        ? `collection ${ref.name}: another row has the same ${fields.join(", ")}`
        : `collection ${ref.name}: a row with key "${key}" exists`,
      { collection: ref.name, ...(fields ? { fields } : {}) },
    );
  };

  const apply = db.transaction((writes: CollectionWrite[]): number[] =>
    writes.map((w) => {
      const { namespace, name } = w.ref;
      switch (w.op) {
        case "insert":
          try {
            const doc = JSON.stringify(w.doc);
            return (w.ifAbsent ? rows.add : rows.insert).run(namespace, name, w.key, doc).changes;
          } catch (err) {
            throw conflict(w.ref, w.key, err);
          }
        case "put":
          try {
            return rows.put.run(namespace, name, w.key, JSON.stringify(w.doc)).changes > 0 ? 1 : 0;
          } catch (err) {
            throw conflict(w.ref, w.key, err);
          }
        case "delete":
          return rows.delete.run(namespace, name, w.key).changes;
        case "deleteWhere": {
          const params: Bound[] = [];
          const sql = `DELETE FROM collection_rows WHERE ${scopeSql(w.ref)}${conditionsSql(w.where, params)}`;
          return prepared(sql).run(...params).changes;
        }
        default:
          throw new SparError("INTERNAL", `unknown collection write ${(w as { op: string }).op}`);
      }
    }),
  );

  const toRow = (row: DbRow): StoredRow => ({ seq: row.seq, doc: JSON.parse(row.doc) as StoredRow["doc"] });

  return {
    ensure: (ref, checksum) => ensure.immediate(ref, checksum),
    get(ref, key) {
      const row = rows.get.get(ref.namespace, ref.name, key);
      return row ? toRow(row) : undefined;
    },
    find(ref, query) {
      const params: Bound[] = [];
      let sql = `SELECT seq, doc FROM collection_rows WHERE ${scopeSql(ref)}${conditionsSql(query.where, params)}`;
      const order = [...query.order.by.map(field), "seq"];
      if (query.after) {
        sql += ` AND (${order.join(", ")}) ${query.order.desc ? "<" : ">"} (${order.map(() => "?").join(", ")})`;
        params.push(...query.after.values, query.after.seq);
      }
      const dir = query.order.desc ? " DESC" : "";
      sql += ` ORDER BY ${order.map((e) => `${e}${dir}`).join(", ")} LIMIT ?`;
      params.push(query.limit);
      return (prepared(sql).all(...params) as DbRow[]).map(toRow);
    },
    count(ref, where) {
      const params: Bound[] = [];
      const sql = `SELECT count(*) FROM collection_rows WHERE ${scopeSql(ref)}${conditionsSql(where, params)}`;
      return prepared(sql)
        .pluck()
        .get(...params) as number;
    },
    rank(ref, query) {
      const scope = words.get.get(ref.namespace, ref.name);
      if (!scope) return [];
      const table = `collection_words_${scope.id}`;
      const match = matchOf(query.terms);
      // The best matches by words first, without their documents (a sort of row ids and scores is
      // cheap; one carrying every matching document is not), then the where conditions on those.
      // Only when the conditions leave too few of them is every match read.
      const cap = Math.max(RANK_SHORTLIST, query.limit * 20);
      const run = (shortlist: boolean) => {
        const params: Bound[] = [match];
        if (shortlist) params.push(cap);
        const sql = `SELECT seq, doc, -weight AS score FROM (
            SELECT rowid AS hit, bm25(${table}) AS weight FROM ${table} WHERE ${table} MATCH ?
            ${shortlist ? "ORDER BY weight LIMIT ?" : ""}
          ) CROSS JOIN collection_rows ON seq = hit
          WHERE ${scopeSql(ref)}${conditionsSql(query.where, params)} ORDER BY weight, seq LIMIT ?`;
        params.push(query.limit);
        return prepared(sql).all(...params) as (DbRow & { score: number })[];
      };
      let found = run(true);
      if (found.length < query.limit && query.where.length > 0) {
        const matched = prepared(`SELECT count(*) FROM ${table} WHERE ${table} MATCH ?`)
          .pluck()
          .get(match) as number;
        if (matched > cap) found = run(false);
      }
      return found.map((r) => ({ row: toRow(r), score: r.score }));
    },
    apply: (writes) => apply(writes),
  };
}

/** How many of the best word matches a rank reads before its where conditions, at least. */
const RANK_SHORTLIST = 1_000;

/**
 * The FTS5 query for `terms`: each term a quoted string (so nothing in it is syntax), a prefix for
 * terms of 3+ characters, OR-ed.
 */
export function matchOf(terms: readonly string[]): string {
  return terms.map((t) => `"${t.replaceAll('"', '""')}"${[...t].length >= 3 ? "*" : ""}`).join(" OR ");
}

/**
 * A collection's word index (`collection_words_<id>`) with its rows' words, and the triggers that
 * keep it in step. Names were checked by the engine (plain identifiers), so they are written in.
 */
export function wordsTableSql(id: number, ref: CollectionRef, fields: readonly string[]): string {
  const table = `collection_words_${id}`;
  const when = `new.namespace = '${ref.namespace}' AND new.collection = '${ref.name}'`;
  const text = (row: string) =>
    `concat_ws(char(10), ${fields.map((f) => `json_extract(${row}.doc, '$.${f}')`).join(", ")})`;
  return `
CREATE VIRTUAL TABLE ${table} USING fts5(
  words, tokenize = 'porter unicode61 remove_diacritics 2', content = '', contentless_delete = 1
);
INSERT INTO ${table} (rowid, words) SELECT seq, ${text("r")} FROM collection_rows r
  WHERE r.namespace = '${ref.namespace}' AND r.collection = '${ref.name}';
CREATE TRIGGER ${table}_insert AFTER INSERT ON collection_rows WHEN ${when} BEGIN
  INSERT INTO ${table} (rowid, words) VALUES (new.seq, ${text("new")});
END;
CREATE TRIGGER ${table}_update AFTER UPDATE OF doc ON collection_rows WHEN ${when} BEGIN
  DELETE FROM ${table} WHERE rowid = old.seq;
  INSERT INTO ${table} (rowid, words) VALUES (new.seq, ${text("new")});
END;
CREATE TRIGGER ${table}_delete AFTER DELETE ON collection_rows
  WHEN old.namespace = '${ref.namespace}' AND old.collection = '${ref.name}' BEGIN
  DELETE FROM ${table} WHERE rowid = old.seq;
END;`;
}

export function dropWordsSql(id: number): string {
  const table = `collection_words_${id}`;
  return `DROP TRIGGER IF EXISTS ${table}_insert; DROP TRIGGER IF EXISTS ${table}_update;
DROP TRIGGER IF EXISTS ${table}_delete; DROP TABLE IF EXISTS ${table};`;
}

/**
 * The CollectionStore over the guarded (asynchronous, durable) rows. Transactions take turns: one
 * holds the store's collections from its first read to its writes' commit, so what it read is what
 * it writes over; reads outside a transaction do not wait.
 */
export function sqliteCollections(rows: CollectionRows): CollectionStore {
  let tail: Promise<unknown> = Promise.resolve();
  const reader = { get: rows.get, find: rows.find, count: rows.count, rank: rows.rank };
  return {
    ensure: rows.ensure,
    reader,
    transact(work) {
      const run = tail.then(async () => {
        const { writes, result } = await work(reader);
        // The guarded `apply` runs the writes on the connection within the call (its promise then
        // waits for the disk): the next transaction may read them from now on, so the turn ends
        // here and transactions made together share a flush, as the store's other writes do.
        const applied: Promise<number[]> = writes.length === 0 ? Promise.resolve([]) : rows.apply(writes);
        applied.catch(() => undefined);
        return { result, applied };
      });
      tail = run.catch(() => undefined);
      return run.then(async ({ result, applied }) => ({ result, outcomes: await applied }));
    },
  };
}

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}
