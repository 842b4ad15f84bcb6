/**
 * A plugin's document as a row of `collection_rows` (migration 5, schema.ts): sealed (AES-GCM, bound
 * to its namespace, collection and key HMAC, so a value moved to another row does not open), found
 * by an HMAC of its key, its indexed fields copied into slots by kind: `s` string HMACs (equality
 * only), `n` numbers and booleans (0/1), `t` ISO times (bytewise, as SQLite compares them). A field's
 * slot follows from the declaration alone (`layoutOf`). Also the bulk rewrites: slotting, rekey, import.
 */
import { createHash } from "node:crypto";
import type { CollectionDeclaration, CollectionRef, Doc, StoredCondition } from "../../sdk/index.js";
import { indexedFields, SparError, searchedFields } from "../../sdk/index.js";
import type { Cipher } from "./cipher.js";
import { wordsVector } from "./collection-words.js";
import type { Db } from "./connection.js";

export type Kind = "s" | "n" | "t";
/** Field → slot ("s1": the first string slot, s[1] in SQL). */
export type Layout = Record<string, string>;
export type Scope = Pick<CollectionRef, "namespace" | "name">;
interface Slots {
  s: (Buffer | null)[];
  n: (number | null)[];
  t: (string | null)[];
}
export interface DbRow {
  seq: number;
  key_mac: Buffer;
  /** NULL only in a transaction's own placeholder rows (readerOn), never committed. */
  doc: Buffer | null;
}
export type SealedRow = DbRow & { doc: Buffer };

const KIND: Record<string, Kind> = { string: "s", integer: "n", number: "n", boolean: "n", time: "t" };
export const CAST: Record<Kind, string> = { s: "bytea", n: "float8", t: "text" };
const OPS = { lt: "<", lte: "<=", gt: ">", gte: ">=" } as const;
const BATCH = 500;
export const KEY_CONSTRAINT = "collection_rows_key";

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

export const kindOf = (slot: string) => slot[0] as Kind;
/** The column of each kind's slots (an array: slot s2 is mac_slots[2]). */
export const COLUMN: Record<Kind, string> = { s: "mac_slots", n: "num_slots", t: "time_slots" };
export const slotSql = (slot: string) => `${COLUMN[kindOf(slot)]}[${slot.slice(1)}]`;
/** Names were checked by the engine; checked again before they are written into SQL. */
export function scopeSql(at: Scope): string {
  if (!/^[a-z][a-z0-9-]{0,63}$/.test(at.namespace) || !/^[a-z][a-z0-9_]{0,39}$/.test(at.name)) {
    throw new SparError("INTERNAL", `not a collection: ${JSON.stringify(`${at.namespace}/${at.name}`)}`);
  }
  return `namespace = '${at.namespace}' AND collection = '${at.name}'`;
}
export const indexPrefix = (at: Scope) =>
  `cx_${createHash("sha256").update(`${at.namespace}/${at.name}`).digest("hex").slice(0, 16)}_`;
export const keyMac = (cipher: Cipher, at: Scope, key: string) =>
  cipher.mac(`collection_rows.key ${at.namespace}/${at.name}`, key);
const docColumn = (at: Scope, mac: Buffer) =>
  `collection_rows.doc ${at.namespace}/${at.name} ${mac.toString("hex")}`;
export const seal = (cipher: Cipher, at: Scope, mac: Buffer, key: string, doc: Doc) =>
  cipher.seal(docColumn(at, mac), JSON.stringify([key, doc]));
export function open(cipher: Cipher, at: Scope, mac: Buffer, sealed: Buffer): [string, Doc] {
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

export function slotsOf(cipher: Cipher, at: Scope, layout: Layout, doc: Doc): Slots {
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
export function whereSql(
  cipher: Cipher,
  ref: CollectionRef,
  where: StoredCondition[],
  params: unknown[],
): string {
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

/** Rewrites rows' key HMAC, document, layout, slots and words, a batch per statement. */
async function rewrite(
  db: Db,
  rows: {
    seq: number;
    key_mac: Buffer;
    doc: Buffer;
    layout: number;
    slots: Slots;
    words: string | null;
  }[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) {
    const params: unknown[] = [];
    const values = rows.slice(i, i + BATCH).map((r) => {
      params.push(r.seq, r.key_mac, r.doc, r.layout, r.slots.s, r.slots.n, r.slots.t, r.words);
      const at = params.length - 8;
      return `($${at + 1}::bigint, $${at + 2}::bytea, $${at + 3}::bytea, $${at + 4}::int, $${at + 5}::bytea[], $${at + 6}::float8[], $${at + 7}::text[], $${at + 8}::tsvector)`;
    });
    await db.query(
      `UPDATE collection_rows AS r SET key_mac = v.key_mac, doc = v.doc, layout = v.layout,
         mac_slots = v.s, num_slots = v.n, time_slots = v.t, words = v.words
       FROM (VALUES ${values.join(", ")}) AS v(seq, key_mac, doc, layout, s, n, t, words) WHERE r.seq = v.seq`,
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
  const recorded = new Map<string, { version: number; layout: Layout; search: string[] }>();
  const schemas = await client.query<{
    namespace: string;
    collection: string;
    version: number;
    layout: string;
    search: string | null;
  }>("SELECT namespace, collection, version, layout, search FROM collection_schemas");
  for (const r of schemas.rows) {
    recorded.set(`${r.namespace}/${r.collection}`, {
      version: r.version,
      layout: JSON.parse(r.layout) as Layout,
      search: r.search === null ? [] : (JSON.parse(r.search) as string[]),
    });
  }
  const stale = new Set<string>();
  for (let last = 0; ; ) {
    const { rows } = await client.query<
      SealedRow & { namespace: string; collection: string; layout: number }
    >(
      `SELECT seq, namespace, collection, key_mac, doc, layout FROM collection_rows
       WHERE seq > $1 AND doc IS NOT NULL ORDER BY seq LIMIT ${BATCH} FOR UPDATE`,
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
          // Tokens are MACs under the store key: made again under the new one (none until slotted).
          words: slotted ? wordsVector(next, at, schema.search, doc) : null,
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

/** Slots (and indexes the words of) the collection's rows not yet slotted under its version, a batch at a time. */
export async function slotRows(
  client: Db,
  cipher: Cipher,
  ref: CollectionRef,
  layout: Layout,
): Promise<void> {
  const scope = scopeSql(ref);
  for (;;) {
    const { rows } = await client.query<SealedRow>(
      `SELECT seq, key_mac, doc FROM collection_rows WHERE ${scope} AND layout <> $1 AND doc IS NOT NULL
       ORDER BY seq LIMIT ${BATCH}`,
      [ref.declaration.version],
    );
    if (rows.length === 0) return;
    const fields = searchedFields(ref.declaration);
    await rewrite(
      client,
      rows.map((row) => {
        const doc = open(cipher, ref, row.key_mac, row.doc)[1];
        return {
          ...row,
          layout: ref.declaration.version,
          slots: slotsOf(cipher, ref, layout, doc),
          words: wordsVector(cipher, ref, fields, doc),
        };
      }),
    );
  }
}
