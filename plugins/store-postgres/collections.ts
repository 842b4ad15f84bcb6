/**
 * Plugins' collections on PostgreSQL: the CollectionStore over `collection_rows` (how a document is
 * a row: collection-rows.ts; what `ensure` makes: collection-schemas.ts). PostgreSQL never sees a
 * value a plugin stored: documents sealed, keys and indexed strings as HMACs, only numbers, booleans
 * and times plain. The engine (sdk/collection-checks.ts) has checked names, documents and queries
 * before they get here, so names are written into the SQL (a partial index serves only a query
 * naming its collection literally) and values are bound.
 */
import type {
  CollectionReader,
  CollectionRef,
  CollectionStore,
  CollectionWrite,
  StoredQuery,
  StoredRow,
} from "../../sdk/index.js";
import { isSparError, SparError, searchedFields, TRANSACTION_TIMEOUT_MS } from "../../sdk/index.js";
import {
  CAST,
  type DbRow,
  KEY_CONSTRAINT,
  keyMac,
  kindOf,
  layoutOf,
  open,
  type SealedRow,
  scopeSql,
  seal,
  slotSql,
  slotsOf,
  whereSql,
} from "./collection-rows.js";
import { ensureCollection, uniqueFields } from "./collection-schemas.js";
import { RANK_WEIGHTS, termQueries, wordsVector } from "./collection-words.js";
import { type Db, inTransaction, isUniqueViolation } from "./connection.js";
import type { StoreContext } from "./context.js";

export { importDocs } from "./collection-rows.js";

/**
 * The CollectionStore. `fail` turns a driver error into the store's (STORE_FAILED, the URL scrubbed);
 * a plugin's own error, thrown by a transaction's function, goes through as it is.
 */
export function createCollections(
  ctx: StoreContext,
  fail: (err: unknown, doing: string) => SparError = (err) =>
    new SparError("STORE_FAILED", `PostgreSQL store: ${err instanceof Error ? err.message : String(err)}`),
): CollectionStore {
  const { pool, cipher } = ctx;

  const failure = (err: unknown, doing: string): SparError => {
    if (isSparError(err)) return err;
    const code = (err as { code?: unknown } | null)?.code;
    if (code === "40P01" || code === "55P03" || code === "40001") {
      return new SparError(
        "CONFLICT",
        `collections: ${doing} met another transaction holding the same rows (a deadlock, or a wait over ${TRANSACTION_TIMEOUT_MS} ms); try again`,
      );
    }
    return fail(err, `collections.${doing}`);
  };
  const query = async <R extends object>(db: Db, doing: string, sql: string, params: unknown[] = []) => {
    try {
      return await db.query<R>(sql, params);
    } catch (err) {
      throw failure(err, doing);
    }
  };
  const toRow = (ref: CollectionRef, row: SealedRow): StoredRow => ({
    seq: Number(row.seq),
    doc: open(cipher, ref, row.key_mac, row.doc)[1],
  });

  /**
   * Reads on `db`. Inside a transaction (`held` given) each holds what it read: rows by `FOR UPDATE`,
   * and a key read absent by a placeholder row (no document) inserted under it, which makes any other
   * writer of that key wait; nobody else sees it (it is never committed: `transact` deletes what is
   * left of them before COMMIT), and these reads skip it.
   */
  function readerOn(db: Db, held?: number[]): CollectionReader {
    const own = held ? " AND doc IS NOT NULL" : "";
    const lock = held ? " FOR UPDATE" : "";
    const rowsOf = (ref: CollectionRef, rows: DbRow[]) =>
      rows.flatMap((row) => (row.doc === null ? [] : [toRow(ref, row as SealedRow)]));
    return {
      async get(ref, key) {
        const mac = keyMac(cipher, ref, key);
        if (held) {
          const placed = await query<{ seq: number }>(
            db,
            "get",
            `INSERT INTO collection_rows (namespace, collection, key_mac) VALUES ($1, $2, $3)
             ON CONFLICT ON CONSTRAINT ${KEY_CONSTRAINT} DO NOTHING RETURNING seq`,
            [ref.namespace, ref.name, mac],
          );
          held.push(...placed.rows.map((r) => Number(r.seq)));
          if (placed.rows.length > 0) return undefined;
        }
        const { rows } = await query<DbRow>(
          db,
          "get",
          `SELECT seq, key_mac, doc FROM collection_rows WHERE ${scopeSql(ref)} AND key_mac = $1${own}${lock}`,
          [mac],
        );
        return rowsOf(ref, rows)[0];
      },
      async find(ref, q: StoredQuery) {
        const params: unknown[] = [];
        let sql = `SELECT seq, key_mac, doc FROM collection_rows WHERE ${scopeSql(ref)}${own}${whereSql(cipher, ref, q.where, params)}`;
        const layout = layoutOf(ref.declaration);
        const slots = q.order.by.map((f) => layout[f] ?? "");
        const order = [...slots.map(slotSql), "seq"];
        if (q.after) {
          const first = params.length;
          params.push(...q.after.values, q.after.seq);
          const casts = [...slots.map((s) => CAST[kindOf(s)]), "bigint"];
          const anchor = casts.map((cast, i) => `$${first + i + 1}::${cast}`).join(", ");
          sql += ` AND (${order.join(", ")}) ${q.order.desc ? "<" : ">"} (${anchor})`;
        }
        const dir = q.order.desc ? " DESC" : "";
        params.push(q.limit);
        sql += ` ORDER BY ${order.map((e) => `${e}${dir}`).join(", ")} LIMIT $${params.length}::int${lock}`;
        return rowsOf(ref, (await query<DbRow>(db, "find", sql, params)).rows);
      },
      async count(ref, where) {
        const params: unknown[] = [];
        const rows = `SELECT 1 FROM collection_rows WHERE ${scopeSql(ref)}${own}${whereSql(cipher, ref, where, params)}${lock}`;
        const { rows: found } = await query<{ n: number }>(
          db,
          "count",
          `SELECT count(*) AS n FROM (${rows}) AS counted`,
          params,
        );
        return Number(found[0]?.n ?? 0);
      },
      async rank(ref, q) {
        // Every row holding a term matches the OR of them all, so the hits hold each term's document
        // frequency: the IDFs come from them and the collection's size, in the same statement.
        const terms = termQueries(cipher, ref, q.terms);
        const params: unknown[] = [terms.join(" | "), ...terms];
        const scope = scopeSql(ref);
        const df = terms.map(
          (_, i) => `count(*) FILTER (WHERE words @@ $${i + 2}::tsquery)::float8 AS d${i}`,
        );
        const score = terms.map(
          (_, i) =>
            `ln(1 + (total.n - df.d${i} + 0.5) / (df.d${i} + 0.5)) * ts_rank('${RANK_WEIGHTS}', words, $${i + 2}::tsquery)`,
        );
        // Only the best rows' documents are read; the count of the collection's rows is index-only.
        const top = `WITH hits AS MATERIALIZED (
            SELECT seq, words, mac_slots, num_slots, time_slots FROM collection_rows
            WHERE ${scope} AND doc IS NOT NULL AND words @@ $1::tsquery),
          total AS MATERIALIZED (SELECT count(*)::float8 AS n FROM collection_rows WHERE ${scope}),
          df AS MATERIALIZED (SELECT ${df.join(", ")} FROM hits),
          top AS MATERIALIZED (SELECT seq, ${score.join(" + ")} AS score FROM hits, total, df
            WHERE true${whereSql(cipher, ref, q.where, params)}`;
        params.push(q.limit);
        const sql = `${top} ORDER BY score DESC, seq LIMIT $${params.length}::int)
          SELECT r.seq, r.key_mac, r.doc, top.score FROM top JOIN collection_rows r ON r.seq = top.seq
          ORDER BY top.score DESC, top.seq`;
        const { rows } = await query<DbRow & { score: number }>(db, "rank", sql, params);
        return rows.flatMap((row) =>
          row.doc === null ? [] : [{ row: toRow(ref, row as SealedRow), score: Number(row.score) }],
        );
      },
    };
  }

  const conflict = (ref: CollectionRef, key: string, err: unknown): SparError => {
    const fields = uniqueFields(ref, err);
    return new SparError(
      "CONFLICT",
      fields
        ? `collection ${ref.name}: another row has the same ${fields.join(", ")}`
        : `collection ${ref.name}: a row with key "${key}" exists`,
      { collection: ref.name, ...(fields ? { fields } : {}) },
    );
  };

  async function applyOne(db: Db, w: CollectionWrite): Promise<number> {
    // A placeholder (doc NULL) is no row: never counted as deleted, always replaced by an insert.
    if (w.op === "deleteWhere") {
      const params: unknown[] = [];
      const sql = `DELETE FROM collection_rows WHERE ${scopeSql(w.ref)} AND doc IS NOT NULL${whereSql(cipher, w.ref, w.where, params)}`;
      return (await query(db, "deleteWhere", sql, params)).rowCount ?? 0;
    }
    const mac = keyMac(cipher, w.ref, w.key);
    if (w.op === "delete") {
      const sql = `DELETE FROM collection_rows WHERE ${scopeSql(w.ref)} AND key_mac = $1 AND doc IS NOT NULL`;
      return (await query(db, "delete", sql, [mac])).rowCount ?? 0;
    }
    const slots = slotsOf(cipher, w.ref, layoutOf(w.ref.declaration), w.doc);
    const words = wordsVector(cipher, w.ref, searchedFields(w.ref.declaration), w.doc);
    const replace = `ON CONFLICT ON CONSTRAINT ${KEY_CONSTRAINT} DO UPDATE SET doc = excluded.doc,
      layout = excluded.layout, mac_slots = excluded.mac_slots, num_slots = excluded.num_slots,
      time_slots = excluded.time_slots, words = excluded.words`;
    const onConflict = w.op === "put" ? replace : `${replace} WHERE collection_rows.doc IS NULL`;
    try {
      const done = await db.query(
        `INSERT INTO collection_rows (namespace, collection, key_mac, doc, layout, mac_slots, num_slots, time_slots, words)
         VALUES ($1, $2, $3, $4, $5, $6::bytea[], $7::float8[], $8::text[], $9::tsvector) ${onConflict}`,
        [
          w.ref.namespace,
          w.ref.name,
          mac,
          seal(cipher, w.ref, mac, w.key, w.doc),
          w.ref.declaration.version,
          slots.s,
          slots.n,
          slots.t,
          words,
        ],
      );
      const written = done.rowCount ?? 0;
      if (written === 0 && w.op === "insert" && !w.ifAbsent) throw conflict(w.ref, w.key, undefined);
      return written;
    } catch (err) {
      throw isUniqueViolation(err) ? conflict(w.ref, w.key, err) : failure(err, w.op);
    }
  }

  async function apply(db: Db, writes: CollectionWrite[]): Promise<number[]> {
    const outcomes: number[] = [];
    for (const w of writes) outcomes.push(await applyOne(db, w));
    return outcomes;
  }

  async function ensure(ref: CollectionRef, checksum: string): Promise<void> {
    try {
      await ensureCollection(pool, cipher, ref, checksum, ctx.now());
    } catch (err) {
      throw failure(err, "ensure");
    }
  }

  return {
    ensure,
    reader: readerOn(pool),
    async transact(work) {
      // No wait on another transaction's rows outlasts the engine's limit on the whole transaction.
      const begin = `BEGIN; SET LOCAL lock_timeout = ${TRANSACTION_TIMEOUT_MS}`;
      let own: { err: unknown } | undefined;
      try {
        return await inTransaction(
          pool,
          async (client) => {
            const placeholders: number[] = [];
            const { writes, result } = await work(readerOn(client, placeholders)).catch((err: unknown) => {
              own = { err };
              throw err;
            });
            const outcomes = writes.length === 0 ? [] : await apply(client, writes);
            if (placeholders.length > 0) {
              await query(
                client,
                "transact",
                "DELETE FROM collection_rows WHERE seq = ANY($1::bigint[]) AND doc IS NULL",
                [placeholders],
              );
            }
            return { result, outcomes };
          },
          begin,
        );
      } catch (err) {
        // What the transaction's function threw (the plugin's or the engine's) goes through as it is.
        throw own?.err === err ? err : failure(err, "transact");
      }
    },
  };
}
