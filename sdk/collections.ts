/**
 * A plugin's own data (DESIGN §5): the collections its manifest declares under `data`, stored by the
 * active store plugin with the same encryption, transactions and durability as the Ring's records,
 * and reached as `api.data.<collection>`, never another plugin's.
 *
 * Three layers: the declaration (plugin.json, checked by `collection-checks.ts` before any plugin code
 * runs), the handle a plugin uses (`Collection`), and what a store plugin implements once for every
 * collection (`CollectionStore`).
 */

/**
 * A field's type. `time` is an ISO 8601 UTC timestamp to the millisecond at most
 * (`2026-01-01T00:00:00Z`, `…00.5Z`); it is stored and read back as `toISOString()` writes it
 * (`…00.500Z`), so it orders as time.
 */
export type FieldType = "string" | "integer" | "number" | "boolean" | "time" | "json";

export interface FieldDeclaration {
  type: FieldType;
  /** May be absent (or null). Default false: the field is required. */
  optional?: boolean;
  /** Holds a secret (a token, a key): never indexed, never named with its value in an error. */
  secret?: boolean;
  /** Holds free text `search` reads, and `rank` by default (`search` in the collection); never indexed. */
  text?: boolean;
  /** For `string`, `json`: the most bytes of UTF-8 (JSON for `json`) a value may have. */
  max_bytes?: number;
}

/** One collection in a plugin's manifest: `data.collections.<name>`. */
export interface CollectionDeclaration {
  /**
   * Bump it whenever the declaration changes: the store records each collection's version with a
   * checksum of its declaration, and refuses a declaration that changed under the same version.
   */
  version: number;
  /** The primary key: a required `string` field. */
  key: string;
  fields: Record<string, FieldDeclaration>;
  /**
   * Fields a query may filter or order on, as lists (the leading fields of a list serve a filter on
   * them alone). Only `string`, `integer`, `number`, `boolean` and `time` fields, neither secret nor text.
   */
  indexes?: string[][];
  /**
   * Field lists no two rows may share (CONFLICT): each is also an index. A row with any of the
   * fields absent is not held to it (SQL's rule), which makes "at most one running run per gorilla"
   * a unique on a field set only while running.
   */
  unique?: string[][];
  /** Rows whose `field` (an indexed `time`) is older than `days` are deleted (at first use, then hourly). */
  retention?: { field: string; days: number };
  /** At most this many rows: past it, the oldest written are deleted (at first use, then hourly). */
  max_rows?: number;
  /**
   * The fields `rank` reads: string fields, none secret. Absent: the `text` fields; `[]`: none (no
   * word index is kept). The store indexes their words on every write; changing the list re-indexes
   * the collection at its next first use.
   */
  search?: string[];
}

/** A manifest's `data`: its collections, under its own id unless a bundled kit shares a namespace. */
export interface DataDeclaration {
  /**
   * Whose data this is; the plugin's id when absent. Only bundled plugins may name another (the
   * plugins of one kit, such as the two gorilla schedulers, share one), and every plugin naming a
   * namespace must declare it identically.
   */
  namespace?: string;
  collections: Record<string, CollectionDeclaration>;
}

/** A stored value: what a field may hold. */
export type FieldValue = string | number | boolean | null | FieldValue[] | { [key: string]: FieldValue };
export type Doc = Record<string, unknown>;

/** A condition on one indexed field: a value (equality; null: absent), a list (any of), or a range. */
export type Condition =
  | string
  | number
  | boolean
  | null
  | { in: readonly (string | number | boolean)[] }
  | { lt?: string | number; lte?: string | number; gt?: string | number; gte?: string | number };

/**
 * What `find` returns, in order. Every field in `where` must be indexed; ranges and `order` take
 * `time`, `integer` and `number` fields only (a store that encrypts may keep strings as digests,
 * which keep equality but not order). Rows that tie are in the order they were first written
 * (newest first when `desc`: the write order is the last field of the order).
 */
export interface Query {
  where?: Record<string, Condition>;
  /** Fields to order by (required ones), all one direction; without it, the order rows were written in. */
  order?: { by: readonly string[]; desc?: boolean };
  /** At most this many (1 … 10,000); default 10,000. */
  limit?: number;
  /** A key: the page after that row, in this order (NOT_FOUND when that row is gone). */
  after?: string;
}

/** What `rank` takes besides its text. */
export interface RankQuery {
  where?: Query["where"];
  /** At most this many (1 … 1,000); default 50. */
  limit?: number;
}

/** A plugin's handle on one of its collections. Writes resolve once durable. */
export interface Collection<T extends Doc = Doc> {
  get(key: string): Promise<T | undefined>;
  find(query?: Query): Promise<T[]>;
  count(where?: Query["where"]): Promise<number>;
  /**
   * Rows of `query` whose text fields hold any of `words` (anywhere in the text, as memories are
   * matched: "tea" finds "teapot"; any case), most words first, then in the query's order; reads at
   * most `scan` rows of the query (default 10,000). With no words, the query's rows, none matching.
   */
  search(words: readonly string[], query?: Query & { scan?: number }): Promise<{ doc: T; matches: number }[]>;
  /**
   * Rows whose searched fields (`search` in the declaration) hold any term of `text`, best first by
   * a BM25-like score (higher is better, always > 0), filtered by `where` (indexed fields, as `find`).
   * The terms are `text`'s letter and digit runs (case- and width-folded, at most 32, each at most 64
   * characters), never operators: any text a model sends is safe. A term of 3+ characters also
   * matches words it begins, and stores match simple English word forms ("runs" finds "running").
   * No terms: `[]`. VALIDATION_FAILED on a collection that searches no fields.
   *
   * @example
   * const hits = await api.data.notes.rank("where does Ada live", { where: { fighter_id }, limit: 5 });
   * // [{ doc: { id, text: "Ada moved to Lisbon", … }, score: 3.2 }, …]
   */
  rank(text: string, query?: RankQuery): Promise<{ doc: T; score: number }[]>;
  /** Adds a row; CONFLICT when its key or a unique field set is taken. */
  insert(doc: T): Promise<T>;
  /** Adds a row unless its key is taken; false when it was (nothing written). */
  add(doc: T): Promise<boolean>;
  /** Adds or replaces the row under its key. */
  put(doc: T): Promise<T>;
  /** Changes a row: the fields given (null removes an optional one), or what `change` returns; undefined when none. */
  update(key: string, change: Partial<T> | ((doc: T) => T)): Promise<T | undefined>;
  delete(key: string): Promise<boolean>;
  /** Deletes the rows `where` selects; how many. */
  deleteWhere(where: NonNullable<Query["where"]>): Promise<number>;
}

/**
 * Reads and writes inside `transaction`: reads see the data as committed (the rows they read are held
 * against other transactions until this one ends), writes are applied together when the function
 * returns, or none of them when it throws.
 */
export interface TxCollection<T extends Doc = Doc> {
  get(key: string): Promise<T | undefined>;
  find(query?: Query): Promise<T[]>;
  count(where?: Query["where"]): Promise<number>;
  insert(doc: T): void;
  put(doc: T): void;
  delete(key: string): void;
  deleteWhere(where: NonNullable<Query["where"]>): void;
}

/**
 * `api.data`: one `Collection` per declared collection, by name, and `transaction` over them all. A
 * transaction's function must only read and write data (it holds the store): at most 10 s.
 *
 * @example
 * const notes = api.data.notes as Collection<Note>;
 * await notes.insert({ id: randomUUID(), fighter: "scribe", text: "hi", at: new Date().toISOString() });
 * await api.data.transaction(async (tx) => {
 *   const n = await tx.notes.get(id);
 *   if (n) tx.notes.put({ ...n, text: "edited" });
 * });
 */
export type PluginData = {
  readonly [collection: string]: Collection;
} & {
  transaction<R>(work: (tx: Readonly<Record<string, TxCollection>>) => Promise<R>): Promise<R>;
};

// ---- What a store implements, once, for every plugin's collections. ----

/** A collection as a store sees it: whose, which, and its (checked) declaration. */
export interface CollectionRef {
  namespace: string;
  name: string;
  declaration: CollectionDeclaration;
}

/** `where`, checked and normalized by the engine: every field indexed, every value of its type. */
export type StoredCondition =
  | { field: string; op: "eq"; value: string | number | boolean }
  | { field: string; op: "null" }
  | { field: string; op: "in"; values: (string | number | boolean)[] }
  | { field: string; op: "lt" | "lte" | "gt" | "gte"; value: string | number };

export interface StoredQuery {
  where: StoredCondition[];
  order: { by: string[]; desc: boolean };
  limit: number;
  /** The page after this row: its values of `order.by` and its write sequence. */
  after?: { values: (string | number)[]; seq: number };
}

/** A stored row: its document and its write sequence (the tie-break order, kept by `put`). */
export interface StoredRow {
  doc: Doc;
  seq: number;
}

/** `rank` as a store gets it: the terms (folded, distinct, 1 … 32), `where` checked, `limit` 1 … 1,000. */
export interface StoredRankQuery {
  terms: string[];
  where: StoredCondition[];
  limit: number;
}

export interface CollectionReader {
  get(ref: CollectionRef, key: string): Promise<StoredRow | undefined>;
  find(ref: CollectionRef, query: StoredQuery): Promise<StoredRow[]>;
  count(ref: CollectionRef, where: StoredCondition[]): Promise<number>;
  /**
   * The rows whose searched fields (`searchedFields`) match any term, best first (score > 0, higher
   * better; ties in write order). Each term is matched as a word, never parsed as query syntax.
   */
  rank(ref: CollectionRef, query: StoredRankQuery): Promise<{ row: StoredRow; score: number }[]>;
}

/**
 * One write of a transaction. Outcomes: insert 1 (CONFLICT when taken, or 0 with `ifAbsent` when the
 * key was); put 1; delete and deleteWhere the rows deleted.
 */
export type CollectionWrite =
  | { op: "insert"; ref: CollectionRef; key: string; doc: Doc; ifAbsent?: boolean }
  | { op: "put"; ref: CollectionRef; key: string; doc: Doc }
  | { op: "delete"; ref: CollectionRef; key: string }
  | { op: "deleteWhere"; ref: CollectionRef; where: StoredCondition[] };

/**
 * Every plugin's collections, in the store's own database. The engine (`collection-engine.ts`, with `collection-checks.ts`) checks
 * declarations, documents and queries before they reach it; the store stores, indexes, encrypts.
 */
export interface CollectionStore {
  /**
   * Makes (or brings up to date) the collection's storage: its indexes and uniques, and its word
   * index when it searches fields (indexing the rows it holds, again when `search` changed). Records the
   * version and `checksum` (of the declaration); a declaration whose checksum changed under a
   * recorded version, or whose version is older than the recorded one, is PLUGIN_INVALID.
   */
  ensure(ref: CollectionRef, checksum: string): Promise<void>;
  /** Reads, outside any transaction. */
  readonly reader: CollectionReader;
  /**
   * Runs `work` with a reader whose reads hold what they read (a row lock on a server, the store's
   * write lock on a file), then applies the writes it returns in one transaction, durably. Unique
   * violations are CONFLICT naming the collection and fields; nothing of a failed transaction stays.
   */
  transact<R>(
    work: (reader: CollectionReader) => Promise<{ writes: CollectionWrite[]; result: R }>,
  ): Promise<{ result: R; outcomes: number[] }>;
}
