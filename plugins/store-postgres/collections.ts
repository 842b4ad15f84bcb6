/**
 * Every plugin's collections in one table (migration 5, schema.ts). PostgreSQL never sees a value a
 * plugin stored: each document is sealed (AES-GCM, bound to its namespace, collection and key HMAC,
 * so a value moved to another row does not open), its key is an HMAC, and the indexed fields are
 * copied into slots: strings as HMACs (equality only), numbers, booleans and times plain (they need
 * ranges and order). A field's slot follows from the declaration alone (`layoutOf`); per collection
 * the partial expression indexes its declaration asks for are made by `ensure`. The engine
 * (sdk/collection-engine.ts) has checked names, documents and queries before they get here, so names
 * are written into the SQL (a partial index serves only a query naming its collection literally)
 * and values are bound.
 */
import { createHash } from "node:crypto";
import type {
  CollectionDeclaration,
  CollectionReader,
  CollectionRef,
  CollectionStore,
  CollectionWrite,
  Doc,
  StoredCondition,
  StoredQuery,
  StoredRow,
} from "../../sdk/index.js";
import { indexedFields, isSparError, SparError, TRANSACTION_TIMEOUT_MS } from "../../sdk/index.js";
import type { Cipher } from "./cipher.js";
import { type Db, inTransaction, isUniqueViolation } from "./connection.js";
import type { StoreContext } from "./context.js";

type Kind = "s" | "n" | "t";
/** Field → slot ("s1": the first string slot, s[1] in SQL). */
type Layout = Record<string, string>;
type Scope = Pick<CollectionRef, "namespace" | "name">;
interface Slots {
  s: (Buffer | null)[];
  n: (number | null)[];
  t: (string | null)[];
}
interface DbRow {
  seq: number;
  key_mac: Buffer;
  doc: Buffer;
}

const KIND: Record<string, Kind> = { string: "s", integer: "n", number: "n", boolean: "n", time: "t" };
const CAST: Record<Kind, string> = { s: "bytea", n: "float8", t: "text" };
const OPS = { lt: "<", lte: "<=", gt: ">", gte: ">=" } as const;
const BATCH = 500;
const KEY_CONSTRAINT = "collection_rows_key";

/** Each indexed field's slot: fields by name, numbered per kind, so the same declaration, the same layout. */
export function layoutOf(decl: CollectionDeclaration): Layout {
  const counts: Record<Kind, number> = { s: 0, n: 0, t: 0 };
  const layout: Layout = {};
  for (const field of [...indexedFields(decl)].sort()) {
    const kind = KIND[decl.fields[field]?.type ?? ""];
    if (!kind) continue;
    counts[kind] += 1;
    layout[field] = `${kind}${counts[kind]}`;
  }
  return layout;
}

const kindOf = (slot: string) => slot[0] as Kind;
const slotSql = (slot: string) => `${slot[0]}[${slot.slice(1)}]`;
/** Names were checked by the engine; checked again before they are written into SQL. */
function scopeSql(at: Scope): string {
  if (!/^[a-z][a-z0-9-]{0,63}$/.test(at.namespace) || !/^[a-z][a-z0-9_]{0,39}$/.test(at.name)) {
    throw new SparError("INTERNAL", `not a collection: ${JSON.stringify(`${at.namespace}/${at.name}`)}`);
  }
  return `namespace = '${at.namespace}' AND collection = '${at.name}'`;
}
const indexPrefix = (at: Scope) =>
  `cx_${createHash("sha256").update(`${at.namespace}/${at.name}`).digest("hex").slice(0, 16)}_`;
const keyMac = (cipher: Cipher, at: Scope, key: string) =>
  cipher.mac(`collection_rows.key ${at.namespace}/${at.name}`, key);
const docColumn = (at: Scope, mac: Buffer) =>
  `collection_rows.doc ${at.namespace}/${at.name} ${mac.toString("hex")}`;
const seal = (cipher: Cipher, at: Scope, mac: Buffer, key: string, doc: Doc) =>
  cipher.seal(docColumn(at, mac), JSON.stringify([key, doc]));
function open(cipher: Cipher, at: Scope, mac: Buffer, sealed: Buffer): [string, Doc] {
  return JSON.parse(cipher.open(docColumn(at, mac), sealed)) as [string, Doc];
}

/** What a slot holds of `value`: a string's HMAC, a number (a boolean as 0/1), a time's text. */
function slotValue(cipher: Cipher, at: Scope, field: string, slot: string, value: unknown) {
  switch (kindOf(slot)) {
    case "s":
      return typeof value === "string"
        ? cipher.mac(`collection_rows.field ${at.namespace}/${at.name}/${field}`, value)
        : null;
    case "n":
      return typeof value === "boolean" ? Number(value) : typeof value === "number" ? value : null;
    default:
      return typeof value === "string" ? value : null;
  }
}

function slotsOf(cipher: Cipher, at: Scope, layout: Layout, doc: Doc): Slots {
  const slots: Slots = { s: [], n: [], t: [] };
  for (const [field, slot] of Object.entries(layout)) {
    (slots[kindOf(slot)] as unknown[])[Number(slot.slice(1)) - 1] = slotValue(
      cipher,
      at,
      field,
      slot,
      doc[field],
    );
  }
  for (const list of Object.values(slots)) for (let i = 0; i < list.length; i++) list[i] ??= null;
  return slots;
}

/** `where` as SQL over the slots, its values pushed to `params`. */
function whereSql(cipher: Cipher, ref: CollectionRef, where: StoredCondition[], params: unknown[]): string {
  const layout = layoutOf(ref.declaration);
  let sql = "";
  for (const c of where) {
    const slot = layout[c.field];
    if (!slot) throw new SparError("INTERNAL", `collection ${ref.name}: "${c.field}" is not indexed`);
    const e = slotSql(slot);
    const cast = CAST[kindOf(slot)];
    const bound = (v: unknown) => slotValue(cipher, ref, c.field, slot, v);
    if (c.op === "null") sql += ` AND ${e} IS NULL`;
    else if (c.op === "eq") {
      params.push(bound(c.value));
      sql += ` AND ${e} = $${params.length}::${cast}`;
    } else if (c.op === "in") {
      params.push(c.values.map(bound));
      sql += ` AND ${e} = ANY($${params.length}::${cast}[])`;
    } else {
      params.push(c.value);
      sql += ` AND ${e} ${OPS[c.op]} $${params.length}::${cast}`;
    }
  }
  return sql;
}

/** Two int4s of an HMAC: the advisory lock that holds one key, present or not. */
const lockArgs = (mac: Buffer): [number, number] => [mac.readInt32BE(0), mac.readInt32BE(4)];

/** Rewrites rows' key HMAC, document, layout and slots, a batch per statement. */
async function rewrite(
  db: Db,
  rows: { seq: number; key_mac: Buffer; doc: Buffer; layout: number; slots: Slots }[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) {
    const params: unknown[] = [];
    const values = rows.slice(i, i + BATCH).map((r) => {
      params.push(r.seq, r.key_mac, r.doc, r.layout, r.slots.s, r.slots.n, r.slots.t);
      const at = params.length - 7;
      return `($${at + 1}::bigint, $${at + 2}::bytea, $${at + 3}::bytea, $${at + 4}::int, $${at + 5}::bytea[], $${at + 6}::float8[], $${at + 7}::text[])`;
    });
    await db.query(
      `UPDATE collection_rows AS r SET key_mac = v.key_mac, doc = v.doc, layout = v.layout, s = v.s, n = v.n, t = v.t
       FROM (VALUES ${values.join(", ")}) AS v(seq, key_mac, doc, layout, s, n, t) WHERE r.seq = v.seq`,
      params,
    );
  }
}

/**
 * Adds documents as they are (sealed, not yet slotted) in array order, inside the caller's
 * transaction: for the moves that bring an older Spar's records into a plugin's collection. The
 * collection's next `ensure` slots them.
 */
export async function importDocs(
  client: Db,
  cipher: Cipher,
  namespace: string,
  collection: string,
  docs: { key: string; doc: Record<string, unknown> }[],
): Promise<void> {
  const at = { namespace, name: collection };
  scopeSql(at);
  for (let i = 0; i < docs.length; i += BATCH) {
    const params: unknown[] = [namespace, collection];
    const values = docs.slice(i, i + BATCH).map(({ key, doc }) => {
      const mac = keyMac(cipher, at, key);
      params.push(mac, seal(cipher, at, mac, key, doc));
      return `($1, $2, $${params.length - 1}::bytea, $${params.length}::bytea)`;
    });
    await client.query(
      `INSERT INTO collection_rows (namespace, collection, key_mac, doc) VALUES ${values.join(", ")}`,
      params,
    );
  }
  await client.query("UPDATE collection_schemas SET reslot = true WHERE namespace = $1 AND collection = $2", [
    namespace,
    collection,
  ]);
}

/**
 * For `rekey` (inside its transaction): every row opened with `old` and sealed again with `next`, its
 * key HMAC and string slots computed again. Rows not slotted under their collection's recorded
 * layout lose their slots, and the collection is marked for its next `ensure` to slot them.
 */
export async function resealCollections(client: Db, old: Cipher, next: Cipher): Promise<void> {
  const recorded = new Map<string, { version: number; layout: Layout }>();
  const schemas = await client.query<{
    namespace: string;
    collection: string;
    version: number;
    layout: string;
  }>("SELECT namespace, collection, version, layout FROM collection_schemas");
  for (const r of schemas.rows) {
    recorded.set(`${r.namespace}/${r.collection}`, {
      version: r.version,
      layout: JSON.parse(r.layout) as Layout,
    });
  }
  const stale = new Set<string>();
  for (let last = 0; ; ) {
    const { rows } = await client.query<DbRow & { namespace: string; collection: string; layout: number }>(
      `SELECT seq, namespace, collection, key_mac, doc, layout FROM collection_rows
       WHERE seq > $1 ORDER BY seq LIMIT ${BATCH} FOR UPDATE`,
      [last],
    );
    if (rows.length === 0) break;
    last = Number(rows[rows.length - 1]?.seq);
    await rewrite(
      client,
      rows.map((row) => {
        const at = { namespace: row.namespace, name: row.collection };
        const [key, doc] = open(old, at, row.key_mac, row.doc);
        const mac = keyMac(next, at, key);
        const schema = recorded.get(`${at.namespace}/${at.name}`);
        const slotted = schema !== undefined && schema.version === row.layout;
        if (!slotted && row.layout !== 0) stale.add(`${at.namespace}/${at.name}`);
        return {
          seq: row.seq,
          key_mac: mac,
          doc: seal(next, at, mac, key, doc),
          layout: slotted ? row.layout : 0,
          slots: slotted ? slotsOf(next, at, schema.layout, doc) : { s: [], n: [], t: [] },
        };
      }),
    );
  }
  for (const name of stale) {
    const [namespace, collection] = name.split("/");
    await client.query(
      "UPDATE collection_schemas SET reslot = true WHERE namespace = $1 AND collection = $2",
      [namespace, collection],
    );
  }
}

interface SchemaRow {
  version: number;
  checksum: string;
  layout: string;
  reslot: boolean;
}

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
        `collections: ${doing} waited too long on rows another transaction holds; try again`,
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
  const toRow = (ref: CollectionRef, row: DbRow): StoredRow => ({
    seq: Number(row.seq),
    doc: open(cipher, ref, row.key_mac, row.doc)[1],
  });

  function readerOn(db: Db, held: boolean): CollectionReader {
    const lock = held ? " FOR UPDATE" : "";
    return {
      async get(ref, key) {
        const mac = keyMac(cipher, ref, key);
        // Holds the key even while no row has it, so two transactions reading one absent key take turns.
        if (held) await query(db, "get", "SELECT pg_advisory_xact_lock($1, $2)", lockArgs(mac));
        const { rows } = await query<DbRow>(
          db,
          "get",
          `SELECT seq, key_mac, doc FROM collection_rows WHERE ${scopeSql(ref)} AND key_mac = $1${lock}`,
          [mac],
        );
        return rows[0] ? toRow(ref, rows[0]) : undefined;
      },
      async find(ref, q: StoredQuery) {
        const params: unknown[] = [];
        let sql = `SELECT seq, key_mac, doc FROM collection_rows WHERE ${scopeSql(ref)}${whereSql(cipher, ref, q.where, params)}`;
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
        return (await query<DbRow>(db, "find", sql, params)).rows.map((row) => toRow(ref, row));
      },
      async count(ref, where) {
        const params: unknown[] = [];
        const rows = `SELECT 1 FROM collection_rows WHERE ${scopeSql(ref)}${whereSql(cipher, ref, where, params)}${lock}`;
        const { rows: found } = await query<{ n: number }>(
          db,
          "count",
          `SELECT count(*) AS n FROM (${rows}) AS counted`,
          params,
        );
        return Number(found[0]?.n ?? 0);
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
    if (w.op === "deleteWhere") {
      const params: unknown[] = [];
      const sql = `DELETE FROM collection_rows WHERE ${scopeSql(w.ref)}${whereSql(cipher, w.ref, w.where, params)}`;
      return (await query(db, "deleteWhere", sql, params)).rowCount ?? 0;
    }
    const mac = keyMac(cipher, w.ref, w.key);
    if (w.op === "delete") {
      const sql = `DELETE FROM collection_rows WHERE ${scopeSql(w.ref)} AND key_mac = $1`;
      return (await query(db, "delete", sql, [mac])).rowCount ?? 0;
    }
    const slots = slotsOf(cipher, w.ref, layoutOf(w.ref.declaration), w.doc);
    const onConflict =
      w.op === "put"
        ? ` ON CONFLICT ON CONSTRAINT ${KEY_CONSTRAINT} DO UPDATE SET doc = excluded.doc,
            layout = excluded.layout, s = excluded.s, n = excluded.n, t = excluded.t`
        : w.ifAbsent
          ? ` ON CONFLICT ON CONSTRAINT ${KEY_CONSTRAINT} DO NOTHING`
          : "";
    try {
      const done = await db.query(
        `INSERT INTO collection_rows (namespace, collection, key_mac, doc, layout, s, n, t)
         VALUES ($1, $2, $3, $4, $5, $6::bytea[], $7::float8[], $8::text[])${onConflict}`,
        [
          w.ref.namespace,
          w.ref.name,
          mac,
          seal(cipher, w.ref, mac, w.key, w.doc),
          w.ref.declaration.version,
          slots.s,
          slots.n,
          slots.t,
        ],
      );
      return done.rowCount ?? 0;
    } catch (err) {
      throw isUniqueViolation(err) ? conflict(w.ref, w.key, err) : failure(err, w.op);
    }
  }

  async function apply(db: Db, writes: CollectionWrite[]): Promise<number[]> {
    // The keys written are held like the keys read (sorted: writers never wait on each other in a cycle).
    const locks = [
      ...new Set(
        writes.flatMap((w) => (w.op === "deleteWhere" ? [] : [keyMac(cipher, w.ref, w.key).toString("hex")])),
      ),
    ]
      .sort()
      .map((hex) => lockArgs(Buffer.from(hex, "hex")));
    if (locks.length > 0) {
      await query(
        db,
        "transact",
        "SELECT pg_advisory_xact_lock(a, b) FROM unnest($1::int[], $2::int[]) AS k(a, b)",
        [locks.map((l) => l[0]), locks.map((l) => l[1])],
      );
    }
    const outcomes: number[] = [];
    for (const w of writes) outcomes.push(await applyOne(db, w));
    return outcomes;
  }

  async function ensure(ref: CollectionRef, checksum: string): Promise<void> {
    const scope = scopeSql(ref);
    const { namespace, name, declaration } = ref;
    const read = async (db: Db) =>
      (
        await query<SchemaRow>(
          db,
          "ensure",
          "SELECT version, checksum, layout, reslot FROM collection_schemas WHERE namespace = $1 AND collection = $2",
          [namespace, name],
        )
      ).rows[0];
    const settled = (r: SchemaRow | undefined) =>
      r !== undefined && r.version === declaration.version && r.checksum === checksum && !r.reslot;
    if (settled(await read(pool))) return;
    const layout = layoutOf(declaration);
    try {
      await inTransaction(pool, async (client) => {
        // Daemons sharing the database make a collection once: the others wait, then find it made.
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
          `spar:collection:${namespace}/${name}`,
        ]);
        const recorded = await read(client);
        refuseChanged(ref, checksum, recorded);
        if (settled(recorded)) return;
        const changed = recorded?.version !== declaration.version;
        const prefix = indexPrefix(ref);
        if (changed) {
          const { rows } = await client.query<{ indexname: string }>(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND left(indexname, length($1)) = $1",
            [prefix],
          );
          for (const { indexname } of rows) await client.query(`DROP INDEX "${indexname}"`);
        }
        if (recorded && recorded.layout === JSON.stringify(layout)) {
          // The same slots: rows slotted under the recorded version need nothing but the new number.
          await client.query(`UPDATE collection_rows SET layout = $1 WHERE ${scope} AND layout = $2`, [
            declaration.version,
            recorded.version,
          ]);
        }
        await reslot(client, ref, layout, scope);
        if (changed) await createIndexes(client, ref, layout, scope, prefix);
        await client.query(
          `INSERT INTO collection_schemas (namespace, collection, version, checksum, layout, reslot, updated_at)
           VALUES ($1, $2, $3, $4, $5, false, $6)
           ON CONFLICT (namespace, collection) DO UPDATE SET version = excluded.version, checksum = excluded.checksum,
             layout = excluded.layout, reslot = false, updated_at = excluded.updated_at`,
          [namespace, name, declaration.version, checksum, JSON.stringify(layout), ctx.now()],
        );
      });
    } catch (err) {
      if (isUniqueViolation(err)) {
        const fields = uniqueFields(ref, err);
        throw new SparError(
          "PLUGIN_INVALID",
          `collection ${namespace}/${name}: rows already share ${fields ? fields.join(", ") : "a unique field"}, so they cannot be made unique`,
          { plugin: namespace },
        );
      }
      throw failure(err, "ensure");
    }
  }

  /** Slots the rows of the collection not yet slotted under this version, a batch at a time. */
  async function reslot(client: Db, ref: CollectionRef, layout: Layout, scope: string): Promise<void> {
    for (;;) {
      const { rows } = await client.query<DbRow>(
        `SELECT seq, key_mac, doc FROM collection_rows WHERE ${scope} AND layout <> $1 ORDER BY seq LIMIT ${BATCH}`,
        [ref.declaration.version],
      );
      if (rows.length === 0) return;
      await rewrite(
        client,
        rows.map((row) => ({
          ...row,
          layout: ref.declaration.version,
          slots: slotsOf(cipher, ref, layout, open(cipher, ref, row.key_mac, row.doc)[1]),
        })),
      );
    }
  }

  return {
    ensure,
    reader: readerOn(pool, false),
    async transact(work) {
      // No wait on another transaction's rows outlasts the engine's limit on the whole transaction.
      const begin = `BEGIN; SET LOCAL lock_timeout = ${TRANSACTION_TIMEOUT_MS}`;
      let own: { err: unknown } | undefined;
      try {
        return await inTransaction(
          pool,
          async (client) => {
            const { writes, result } = await work(readerOn(client, true)).catch((err: unknown) => {
              own = { err };
              throw err;
            });
            const outcomes = writes.length === 0 ? [] : await apply(client, writes);
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

/** PLUGIN_INVALID for a declaration older than the recorded one, or changed under the same version. */
function refuseChanged(ref: CollectionRef, checksum: string, recorded: SchemaRow | undefined): void {
  const { namespace, name, declaration } = ref;
  if (!recorded) return;
  if (recorded.version > declaration.version) {
    throw new SparError(
      "PLUGIN_INVALID",
      `collection ${namespace}/${name}: the database holds version ${recorded.version}, newer than the plugin's ${declaration.version}; run the Spar that wrote it`,
      { plugin: namespace },
    );
  }
  if (recorded.version === declaration.version && recorded.checksum !== checksum) {
    throw new SparError(
      "PLUGIN_INVALID",
      `collection ${namespace}/${name}: its declaration changed under version ${declaration.version} (checksum ${recorded.checksum.slice(0, 12)}… recorded, ${checksum.slice(0, 12)}… now); bump its version`,
      { plugin: namespace },
    );
  }
}

async function createIndexes(
  client: Db,
  ref: CollectionRef,
  layout: Layout,
  scope: string,
  prefix: string,
): Promise<void> {
  const lists: [boolean, string[]][] = [
    ...(ref.declaration.indexes ?? []).map((l): [boolean, string[]] => [false, l]),
    ...(ref.declaration.unique ?? []).map((l): [boolean, string[]] => [true, l]),
  ];
  for (const [i, [unique, fields]] of lists.entries()) {
    const columns = [...fields.map((f) => `(${slotSql(layout[f] ?? "")})`), ...(unique ? [] : ["seq"])];
    await client.query(
      `CREATE ${unique ? "UNIQUE " : ""}INDEX "${prefix}${i}" ON collection_rows (${columns.join(", ")}) WHERE ${scope}`,
    );
  }
}

function uniqueFields(ref: CollectionRef, err: unknown): string[] | undefined {
  const constraint = String((err as { constraint?: unknown }).constraint ?? "");
  const prefix = indexPrefix(ref);
  if (!constraint.startsWith(prefix)) return undefined;
  return [...(ref.declaration.indexes ?? []), ...(ref.declaration.unique ?? [])][
    Number(constraint.slice(prefix.length))
  ];
}
