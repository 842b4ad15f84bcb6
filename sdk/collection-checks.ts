/**
 * What every store shares about plugins' collections, checked before a store sees anything: the
 * declaration (before any plugin code runs) and its checksum, each document and each query.
 * collection-engine.ts builds `api.data` on them.
 */
import { createHash } from "node:crypto";
import type {
  CollectionDeclaration,
  DataDeclaration,
  Doc,
  FieldDeclaration,
  Query,
  StoredCondition,
  StoredQuery,
} from "./collections.js";
import { SparError } from "./errors.js";

const NAME = /^[a-z][a-z0-9_]{0,39}$/;
const INDEXABLE = new Set(["string", "integer", "number", "boolean", "time"]);
const ORDERED = new Set(["integer", "number", "time"]);
const TYPES = new Set([...INDEXABLE, "json"]);
/** Most rows one query returns, and the default. */
export const MAX_QUERY_ROWS = 10_000;
const RESERVED = new Set(["transaction"]);
/** An ISO 8601 UTC time to the millisecond at most: what a `Date` holds. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

function invalid(plugin: string, where: string, problem: string): SparError {
  return new SparError("PLUGIN_INVALID", `plugin ${plugin}: data.${where}: ${problem}`, { plugin });
}

/**
 * Checks a manifest's `data` beyond its JSON Schema: every name, the key, each index and unique
 * naming declared fields of an indexable type (neither secret nor text), retention on an indexed
 * time. PLUGIN_INVALID naming the plugin, the collection and the field.
 */
export function checkDataDeclaration(plugin: string, data: DataDeclaration): void {
  const namespace = data.namespace ?? plugin;
  if (!/^[a-z][a-z0-9-]{0,63}$/.test(namespace)) {
    throw invalid(plugin, "namespace", `"${namespace}" is not a namespace (lowercase letters, digits, "-")`);
  }
  for (const [name, decl] of Object.entries(data.collections)) {
    const at = `collections.${name}`;
    if (!NAME.test(name) || RESERVED.has(name)) {
      throw invalid(
        plugin,
        at,
        `"${name}" is not a collection name (a-z, 0-9, "_", at most 40, not "transaction")`,
      );
    }
    if (!Number.isInteger(decl.version) || decl.version < 1)
      throw invalid(plugin, `${at}.version`, "must be an integer ≥ 1");
    for (const [field, f] of Object.entries(decl.fields ?? {})) {
      if (!NAME.test(field))
        throw invalid(plugin, `${at}.fields.${field}`, 'is not a field name (a-z, 0-9, "_")');
      if (!TYPES.has(f.type)) throw invalid(plugin, `${at}.fields.${field}`, `unknown type "${f.type}"`);
      if (f.max_bytes !== undefined && !(f.type === "string" || f.type === "json")) {
        throw invalid(plugin, `${at}.fields.${field}`, "max_bytes is for string and json fields");
      }
    }
    const key = decl.fields?.[decl.key];
    if (key?.type !== "string" || key.optional) {
      throw invalid(plugin, `${at}.key`, `"${decl.key}" must be a required string field`);
    }
    const lists: [string, string[][]][] = [
      ["indexes", decl.indexes ?? []],
      ["unique", decl.unique ?? []],
    ];
    for (const [kind, groups] of lists) {
      for (const group of groups) {
        if (group.length === 0 || new Set(group).size !== group.length) {
          throw invalid(plugin, `${at}.${kind}`, "each list names one or more distinct fields");
        }
        for (const field of group) {
          const f = decl.fields[field];
          if (!f) throw invalid(plugin, `${at}.${kind}`, `"${field}" is not a declared field`);
          if (!INDEXABLE.has(f.type) || f.secret || f.text) {
            throw invalid(plugin, `${at}.${kind}`, `"${field}" cannot be indexed (${describe(f)})`);
          }
        }
      }
    }
    checkSearch(plugin, at, decl);
    if (decl.retention) {
      const f = decl.fields[decl.retention.field];
      if (f?.type !== "time" || !indexedFields(decl).has(decl.retention.field)) {
        throw invalid(plugin, `${at}.retention`, `"${decl.retention.field}" must be an indexed time field`);
      }
    }
  }
}

/** `search`: distinct declared string fields, none secret. */
function checkSearch(plugin: string, at: string, decl: CollectionDeclaration): void {
  if (decl.search === undefined) return;
  if (!Array.isArray(decl.search) || new Set(decl.search).size !== decl.search.length) {
    throw invalid(plugin, `${at}.search`, "lists distinct fields");
  }
  for (const field of decl.search) {
    const f = decl.fields[field];
    if (!f) throw invalid(plugin, `${at}.search`, `"${field}" is not a declared field`);
    if (f.type !== "string" || f.secret) {
      throw invalid(plugin, `${at}.search`, `"${field}" cannot be searched (${describe(f)})`);
    }
  }
}

/** The fields `rank` reads: `search`, or else the text fields of type string. */
export function searchedFields(decl: CollectionDeclaration): string[] {
  if (decl.search) return [...decl.search];
  return Object.entries(decl.fields)
    .filter(([, f]) => f.text && f.type === "string" && !f.secret)
    .map(([name]) => name);
}

/** The searched fields' text of a document, a line each, for a store to index. */
export function searchedText(decl: CollectionDeclaration, doc: Doc): string {
  return searchedFields(decl)
    .map((field) => doc[field])
    .filter((v): v is string => typeof v === "string")
    .join("\n");
}

function describe(f: FieldDeclaration): string {
  if (f.secret) return "it holds a secret";
  if (f.text) return "it holds free text";
  return `its type is ${f.type}`;
}

/** Every field some index or unique names. */
export function indexedFields(decl: CollectionDeclaration): Set<string> {
  return new Set([...(decl.indexes ?? []), ...(decl.unique ?? [])].flat());
}

/** A digest of the declaration as stored: the same declaration, however its JSON is laid out, the same checksum. */
export function declarationChecksum(decl: CollectionDeclaration): string {
  return createHash("sha256").update(canonical(decl)).digest("hex");
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * Checks the plugins' namespaces together, before any plugin code runs: a namespace other than the
 * plugin's own id is for bundled plugins only, and the plugins sharing one declare it identically.
 */
export function checkNamespaces(
  plugins: readonly { id: string; source: "bundled" | "user"; data?: DataDeclaration }[],
): void {
  const seen = new Map<string, { id: string; digest: string }>();
  for (const p of plugins) {
    if (!p.data) continue;
    checkDataDeclaration(p.id, p.data);
    const namespace = p.data.namespace ?? p.id;
    if (namespace !== p.id && p.source !== "bundled") {
      throw invalid(
        p.id,
        "namespace",
        `"${namespace}" is not this plugin's id: only bundled plugins share a namespace`,
      );
    }
    const digest = createHash("sha256").update(canonical(p.data.collections)).digest("hex");
    const other = seen.get(namespace);
    if (other && other.digest !== digest) {
      throw new SparError(
        "PLUGIN_INVALID",
        `plugins ${other.id} and ${p.id} both declare the collections of "${namespace}", differently`,
        { plugin: p.id },
      );
    }
    if (!other) seen.set(namespace, { id: p.id, digest });
  }
}

export interface Scope {
  plugin: string;
  namespace: string;
  name: string;
  declaration: CollectionDeclaration;
}

export function dataError(scope: Scope, field: string | undefined, problem: string): SparError {
  const at = field === undefined ? "" : ` field "${field}"`;
  return new SparError(
    "VALIDATION_FAILED",
    `plugin ${scope.plugin}: collection ${scope.name}${at}: ${problem}`,
    { plugin: scope.plugin, collection: scope.name, ...(field === undefined ? {} : { field }) },
  );
}

/** The document as stored: every field of its type, required ones present, no other field. */
export function checkDoc(scope: Scope, doc: Doc): Doc {
  if (!doc || typeof doc !== "object" || Array.isArray(doc))
    throw dataError(scope, undefined, "a document must be an object");
  const out: Doc = {};
  for (const field of Object.keys(doc)) {
    if (!scope.declaration.fields[field]) throw dataError(scope, field, "is not a declared field");
  }
  for (const [field, f] of Object.entries(scope.declaration.fields)) {
    const value = doc[field];
    if (value === undefined || value === null) {
      if (!f.optional) throw dataError(scope, field, "is required");
      continue;
    }
    out[field] = checkValue(scope, field, f, value);
  }
  return out;
}

/**
 * The value as stored, or VALIDATION_FAILED. A time is stored as `toISOString()` writes it (always three
 * digits of milliseconds), so that stores compare times as strings in time order.
 */
function checkValue<T>(scope: Scope, field: string, f: FieldDeclaration, value: T): T {
  const shown = f.secret ? "a value" : JSON.stringify(value)?.slice(0, 60);
  const wrong = () => dataError(scope, field, `${shown} is not of type ${f.type}`);
  switch (f.type) {
    case "string":
      if (typeof value !== "string") throw wrong();
      break;
    case "integer":
      if (!Number.isSafeInteger(value)) throw wrong();
      break;
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) throw wrong();
      break;
    case "boolean":
      if (typeof value !== "boolean") throw wrong();
      break;
    case "time":
      if (typeof value !== "string" || !ISO_TIME.test(value) || Number.isNaN(Date.parse(value)))
        throw wrong();
      return new Date(value).toISOString() as T;
    case "json":
      if (JSON.stringify(value) === undefined) throw wrong();
      break;
  }
  if (f.max_bytes !== undefined) {
    const bytes = Buffer.byteLength(typeof value === "string" ? value : JSON.stringify(value), "utf8");
    if (bytes > f.max_bytes) throw dataError(scope, field, `is ${bytes} bytes, over its ${f.max_bytes}`);
  }
  return value;
}

/** `where` as a store takes it: every field indexed, every value of the field's type. */
export function checkWhere(scope: Scope, where: Query["where"] = {}): StoredCondition[] {
  const indexed = indexedFields(scope.declaration);
  const out: StoredCondition[] = [];
  for (const [field, condition] of Object.entries(where)) {
    const f = scope.declaration.fields[field];
    if (!f || !indexed.has(field)) throw dataError(scope, field, "a query filters on indexed fields only");
    if (condition === null) {
      out.push({ field, op: "null" });
    } else if (typeof condition !== "object") {
      out.push({ field, op: "eq", value: checkValue(scope, field, f, condition) });
    } else if ("in" in condition) {
      out.push({ field, op: "in", values: condition.in.map((v) => checkValue(scope, field, f, v)) });
    } else {
      if (!ORDERED.has(f.type))
        throw dataError(scope, field, `a range needs a time or number field, not ${f.type}`);
      const ops = Object.entries(condition) as [string, unknown][];
      if (ops.length === 0) throw dataError(scope, field, "an empty condition");
      for (const [op, value] of ops) {
        if (!["lt", "lte", "gt", "gte"].includes(op))
          throw dataError(scope, field, `unknown condition "${op}"`);
        out.push({ field, op: op as "lt", value: checkValue(scope, field, f, value as string | number) });
      }
    }
  }
  return out;
}

export function checkOrder(scope: Scope, order: Query["order"]): StoredQuery["order"] {
  const by = [...(order?.by ?? [])];
  const indexed = indexedFields(scope.declaration);
  for (const field of by) {
    const f = scope.declaration.fields[field];
    if (!f || !indexed.has(field) || !ORDERED.has(f.type) || f.optional) {
      throw dataError(scope, field, "orders only on a required, indexed time or number field");
    }
  }
  return { by, desc: order?.desc ?? false };
}

export function checkLimit(
  scope: Scope,
  limit: number | undefined,
  most = MAX_QUERY_ROWS,
  fallback = most,
): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > most) {
    throw dataError(scope, undefined, `limit must be an integer from 1 to ${most}`);
  }
  return limit;
}

/** How many of `words` (folded) occur in the doc's text fields (folded). */
export function countWords(scope: Scope, doc: Doc, words: readonly string[]): number {
  const texts: string[] = [];
  for (const [field, f] of Object.entries(scope.declaration.fields)) {
    if (f.text && typeof doc[field] === "string") texts.push(doc[field] as string);
  }
  const hay = texts.join("\n").toLowerCase();
  let found = 0;
  for (const word of words) if (hay.includes(word)) found += 1;
  return found;
}
