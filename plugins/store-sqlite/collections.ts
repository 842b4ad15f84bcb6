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

  /** The word index of the collection's rows made again when its searched fields are not the recorded ones. */
  const indexWords = (ref: CollectionRef) => {
    const fields = searchedFields(ref.declaration);
    const wanted = fields.length === 0 ? undefined : JSON.stringify(fields);
    const recorded = words.get.get(ref.namespace, ref.name);
    if (recorded?.fields === wanted) return;
    const scope = scopeSql(ref);
    if (recorded)
      db.exec(`DELETE FROM collection_words WHERE rowid IN (SELECT seq FROM collection_rows WHERE ${scope})`);
    if (!wanted) {
      words.drop.run(ref.namespace, ref.name);
      return;
    }
    words.put.run(ref.namespace, ref.name, wanted);
    prepared(
      `INSERT INTO collection_words (rowid, scope, words)
       SELECT r.seq, 'c' || s.id, (SELECT group_concat(json_extract(r.doc, '$.' || f.value), char(10)) FROM json_each(s.fields) f)
       FROM collection_rows r JOIN collection_search s ON s.namespace = r.namespace AND s.collection = r.collection
       WHERE r.${scope.replace(" AND collection", " AND r.collection")}`,
    ).run();
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
      const params: Bound[] = [matchOf(scope.id, query.terms)];
      const sql = `SELECT seq, doc, -bm25(collection_words, 0.0, 1.0) AS score
        FROM collection_words JOIN collection_rows ON seq = collection_words.rowid
        WHERE collection_words MATCH ? AND ${scopeSql(ref)}${conditionsSql(query.where, params)}
        ORDER BY bm25(collection_words, 0.0, 1.0), seq LIMIT ?`;
      params.push(query.limit);
      const found = prepared(sql).all(...params) as (DbRow & { score: number })[];
      return found.map((r) => ({ row: toRow(r), score: r.score }));
    },
    apply: (writes) => apply(writes),
  };
}

/**
 * The FTS5 query for `terms` in the collection whose scope token is `c<id>`: each term a quoted
 * string (so nothing in it is syntax), a prefix for terms of 3+ characters, OR-ed.
 */
export function matchOf(id: number, terms: readonly string[]): string {
  const quoted = terms.map((t) => `"${t.replaceAll('"', '""')}"${[...t].length >= 3 ? "*" : ""}`);
  return `scope : "c${id}" AND words : (${quoted.join(" OR ")})`;
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
