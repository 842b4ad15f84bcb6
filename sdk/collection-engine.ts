/**
 * `api.data`: a plugin's collections built on whichever `CollectionStore` the active store plugin
 * provides, every document and query checked first (collection-checks.ts). A store only stores
 * (collections.ts).
 */
import { withDeadline } from "./cancel.js";
import {
  checkDoc,
  checkLimit,
  checkOrder,
  checkWhere,
  countWords,
  dataError,
  declarationChecksum,
  MAX_QUERY_ROWS,
  type Scope,
  searchedFields,
} from "./collection-checks.js";
import { queryTerms } from "./collection-terms.js";
import type {
  Collection,
  CollectionRef,
  CollectionStore,
  CollectionWrite,
  DataDeclaration,
  Doc,
  PluginData,
  Query,
  RankQuery,
  StoredQuery,
  TxCollection,
} from "./collections.js";
import { SparError } from "./errors.js";

/** The longest a transaction's function may hold the store. */
export const TRANSACTION_TIMEOUT_MS = 10_000;
const HOUR_MS = 3_600_000;
/** Most rows one `rank` returns, and how many when not told. */
export const MAX_RANK_ROWS = 1_000;
const DEFAULT_RANK_ROWS = 50;

export interface PluginDataOptions {
  plugin: string;
  data: DataDeclaration;
  /** The active store's collections; looked up on use (the store opens after plugins apply). */
  store: () => CollectionStore;
  now?: () => number;
}

/**
 * `api.data` for one plugin: a `Collection` per declared collection, each made (`ensure`) on its
 * first use, and `transaction`. Documents and queries are checked here, before the store sees them.
 */
export function createPluginData(options: PluginDataOptions): PluginData {
  const { plugin, data } = options;
  const namespace = data.namespace ?? plugin;
  const now = options.now ?? Date.now;
  const scopes = new Map<string, Scope>(
    Object.entries(data.collections).map(([name, declaration]) => [
      name,
      { plugin, namespace, name, declaration },
    ]),
  );
  const ready = new WeakMap<CollectionStore, Map<string, Promise<void>>>();
  const swept = new Map<string, number>();

  async function storeFor(scope: Scope): Promise<{ store: CollectionStore; ref: CollectionRef }> {
    const store = options.store();
    const ref: CollectionRef = { namespace, name: scope.name, declaration: scope.declaration };
    let made = ready.get(store);
    if (!made) {
      made = new Map();
      ready.set(store, made);
    }
    let pending = made.get(scope.name);
    if (!pending) {
      pending = store.ensure(ref, declarationChecksum(scope.declaration));
      made.set(scope.name, pending);
      pending.catch(() => made?.delete(scope.name));
    }
    await pending;
    await sweep(store, ref, scope);
    return { store, ref };
  }

  /** Retention and max_rows, at first use and then at most hourly. */
  async function sweep(store: CollectionStore, ref: CollectionRef, scope: Scope): Promise<void> {
    const { retention, max_rows } = scope.declaration;
    if (!retention && max_rows === undefined) return;
    const last = swept.get(scope.name) ?? 0;
    if (now() - last < HOUR_MS) return;
    swept.set(scope.name, now());
    if (retention) {
      const before = new Date(now() - retention.days * 86_400_000).toISOString();
      await store.transact(async () => ({
        writes: [{ op: "deleteWhere", ref, where: [{ field: retention.field, op: "lt", value: before }] }],
        result: undefined,
      }));
    }
    if (max_rows !== undefined) {
      const total = await store.reader.count(ref, []);
      if (total > max_rows) {
        const oldest = await store.reader.find(ref, {
          where: [],
          order: { by: [], desc: false },
          limit: total - max_rows,
        });
        const key = scope.declaration.key;
        await store.transact(async () => ({
          writes: oldest.map((row) => ({ op: "delete" as const, ref, key: String(row.doc[key]) })),
          result: undefined,
        }));
      }
    }
  }

  async function storedQuery(
    scope: Scope,
    reader: CollectionStore["reader"],
    ref: CollectionRef,
    query: Query = {},
  ): Promise<StoredQuery> {
    const stored: StoredQuery = {
      where: checkWhere(scope, query.where),
      order: checkOrder(scope, query.order),
      limit: checkLimit(scope, query.limit),
    };
    if (query.after !== undefined) {
      const anchor = await reader.get(ref, query.after);
      if (!anchor) throw new SparError("NOT_FOUND", `no ${scope.name} "${query.after}" to page after`);
      stored.after = {
        values: stored.order.by.map((f) => anchor.doc[f] as string | number),
        seq: anchor.seq,
      };
    }
    return stored;
  }

  function keyOf(scope: Scope, doc: Doc): string {
    return doc[scope.declaration.key] as string;
  }

  function collection(scope: Scope): Collection {
    const write = async (writes: (ref: CollectionRef) => CollectionWrite[]) => {
      const { store, ref } = await storeFor(scope);
      return (await store.transact(async () => ({ writes: writes(ref), result: undefined }))).outcomes;
    };
    return Object.freeze({
      async get(key) {
        const { store, ref } = await storeFor(scope);
        return (await store.reader.get(ref, key))?.doc;
      },
      async find(query) {
        const { store, ref } = await storeFor(scope);
        const rows = await store.reader.find(ref, await storedQuery(scope, store.reader, ref, query));
        return rows.map((r) => r.doc);
      },
      async count(where) {
        const { store, ref } = await storeFor(scope);
        return store.reader.count(ref, checkWhere(scope, where));
      },
      async search(words, query = {}) {
        const { store, ref } = await storeFor(scope);
        const folded = [...new Set(words.map((w) => w.toLowerCase()).filter((w) => w.length > 0))];
        const stored = await storedQuery(scope, store.reader, ref, {
          ...query,
          limit: query.scan ?? MAX_QUERY_ROWS,
        });
        const rows = await store.reader.find(ref, stored);
        const limit = checkLimit(scope, query.limit);
        const found = rows
          .map((r, i) => ({
            doc: r.doc,
            matches: folded.length === 0 ? 0 : countWords(scope, r.doc, folded),
            i,
          }))
          .filter((r) => folded.length === 0 || r.matches > 0)
          .sort((a, b) => b.matches - a.matches || a.i - b.i)
          .slice(0, limit);
        return found.map(({ doc, matches }) => ({ doc, matches }));
      },
      async rank(text, query = {}) {
        const { where, limit } = checkRank(scope, text, query);
        const terms = queryTerms(text);
        const { store, ref } = await storeFor(scope);
        if (terms.length === 0) return [];
        const found = await store.reader.rank(ref, { terms, where, limit });
        return found.map(({ row, score }) => ({ doc: row.doc, score }));
      },
      async insert(doc) {
        const checked = checkDoc(scope, doc);
        await write((ref) => [{ op: "insert", ref, key: keyOf(scope, checked), doc: checked }]);
        return checked;
      },
      async add(doc) {
        const checked = checkDoc(scope, doc);
        const [n] = await write((ref) => [
          { op: "insert", ref, key: keyOf(scope, checked), doc: checked, ifAbsent: true },
        ]);
        return n === 1;
      },
      async put(doc) {
        const checked = checkDoc(scope, doc);
        await write((ref) => [{ op: "put", ref, key: keyOf(scope, checked), doc: checked }]);
        return checked;
      },
      async update(key, change) {
        const { store, ref } = await storeFor(scope);
        const { result } = await store.transact(async (reader) => {
          const row = await reader.get(ref, key);
          if (!row) return { writes: [], result: undefined };
          const next = changed(scope, row.doc, change);
          return { writes: [{ op: "put", ref, key, doc: next }], result: next };
        });
        return result;
      },
      async delete(key) {
        const [n] = await write((ref) => [{ op: "delete", ref, key }]);
        return n === 1;
      },
      async deleteWhere(where) {
        const conditions = checkWhere(scope, where);
        const [n] = await write((ref) => [{ op: "deleteWhere", ref, where: conditions }]);
        return n ?? 0;
      },
    } satisfies Collection);
  }

  function changed(scope: Scope, doc: Doc, change: Doc | ((doc: Doc) => Doc)): Doc {
    const next = typeof change === "function" ? change({ ...doc }) : { ...doc, ...change };
    for (const [k, v] of Object.entries(next)) if (v === null) delete next[k];
    const checked = checkDoc(scope, next);
    if (keyOf(scope, checked) !== keyOf(scope, doc))
      throw dataError(scope, scope.declaration.key, "an update cannot change the key");
    return checked;
  }

  const handles: Record<string, unknown> = {};
  for (const scope of scopes.values()) handles[scope.name] = collection(scope);

  handles.transaction = async <R>(
    work: (tx: Readonly<Record<string, TxCollection>>) => Promise<R>,
  ): Promise<R> => {
    const refs = new Map<string, CollectionRef>();
    let store: CollectionStore | undefined;
    for (const scope of scopes.values()) {
      const opened = await storeFor(scope);
      refs.set(scope.name, opened.ref);
      store = opened.store;
    }
    if (!store) throw new SparError("PLUGIN_FAILED", `plugin ${plugin} declares no collections`, { plugin });
    const { result } = await store.transact(async (reader) => {
      const writes: CollectionWrite[] = [];
      let open = true;
      const tx: Record<string, TxCollection> = {};
      for (const scope of scopes.values()) {
        const ref = refs.get(scope.name) as CollectionRef;
        const guard = () => {
          if (!open) throw dataError(scope, undefined, "used after its transaction ended");
        };
        tx[scope.name] = Object.freeze({
          async get(key: string) {
            guard();
            return (await reader.get(ref, key))?.doc;
          },
          async find(query?: Query) {
            guard();
            return (await reader.find(ref, await storedQuery(scope, reader, ref, query))).map((r) => r.doc);
          },
          async count(where?: Query["where"]) {
            guard();
            return reader.count(ref, checkWhere(scope, where));
          },
          insert(doc: Doc) {
            guard();
            const checked = checkDoc(scope, doc);
            writes.push({ op: "insert", ref, key: keyOf(scope, checked), doc: checked });
          },
          put(doc: Doc) {
            guard();
            const checked = checkDoc(scope, doc);
            writes.push({ op: "put", ref, key: keyOf(scope, checked), doc: checked });
          },
          delete(key: string) {
            guard();
            writes.push({ op: "delete", ref, key });
          },
          deleteWhere(where: NonNullable<Query["where"]>) {
            guard();
            writes.push({ op: "deleteWhere", ref, where: checkWhere(scope, where) });
          },
        });
      }
      try {
        const value = await withTimeout(work(Object.freeze(tx)), plugin);
        return { writes, result: value };
      } finally {
        open = false;
      }
    });
    return result;
  };
  return Object.freeze(handles) as PluginData;
}

/** A rank's query as a store takes it, or VALIDATION_FAILED. */
function checkRank(scope: Scope, text: unknown, query: RankQuery) {
  if (typeof text !== "string") throw dataError(scope, undefined, "rank takes a text");
  if (searchedFields(scope.declaration).length === 0) {
    throw dataError(scope, undefined, "rank needs searched fields (text fields, or the collection's search)");
  }
  for (const k of Object.keys(query ?? {})) {
    if (k !== "where" && k !== "limit") throw dataError(scope, undefined, `rank takes no "${k}"`);
  }
  return {
    where: checkWhere(scope, query.where),
    limit: checkLimit(scope, query.limit, MAX_RANK_ROWS, DEFAULT_RANK_ROWS),
  };
}

function withTimeout<T>(work: Promise<T>, plugin: string): Promise<T> {
  return withDeadline(
    work,
    TRANSACTION_TIMEOUT_MS,
    () =>
      new SparError(
        "PLUGIN_FAILED",
        `plugin ${plugin}: a data transaction took over ${TRANSACTION_TIMEOUT_MS} ms; nothing of it was written`,
        { plugin },
      ),
  );
}
