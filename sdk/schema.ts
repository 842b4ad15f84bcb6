import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import type { Ajv, ErrorObject, Options, ValidateFunction } from "ajv";

/**
 * JSON Schema validation, in two modes: `plain` (request bodies, manifests, move input) and
 * `defaults` (config tables, completed with their schema's `default`s as they are checked).
 *
 * Compiling a schema with Ajv costs milliseconds, and the daemon checks its config, every plugin
 * manifest and every bundled plugin's config tables at each start. So `npm run build` compiles those
 * schemas ahead of time into standalone validators (scripts/compile-schemas.mjs), found here by a
 * hash of mode and schema; any other schema (a user's plugin, a route body) is compiled with Ajv on
 * first use, and Ajv itself is only loaded then.
 */
export type SchemaMode = "plain" | "defaults";

/** The options of each mode; the build's precompiled validators are generated with the same ones. */
export const AJV_OPTIONS: Record<SchemaMode, Options> = {
  // `verbose` keeps the failing schema on each error, so a pattern's `description` can say what is allowed.
  // `format` is a hint, not a check (no format library is loaded): an MCP tool's `date-time` is
  // shown to the model and checked by its server, and Ajv stays quiet about formats it does not know.
  plain: { allErrors: false, strict: false, useDefaults: false, verbose: true, validateFormats: false },
  defaults: { allErrors: false, strict: false, useDefaults: true, verbose: true, validateFormats: false },
};

const require = createRequire(import.meta.url);
const engines: Partial<Record<SchemaMode, Ajv>> = {};
const caches: Record<SchemaMode, WeakMap<object, ValidateFunction>> = {
  plain: new WeakMap(),
  defaults: new WeakMap(),
};
let built: Record<string, ValidateFunction> | null | undefined;

/** The name a schema's precompiled validator is exported under: mode and a hash of its JSON. */
export function schemaKey(mode: SchemaMode, schema: object): string {
  return `${mode}_${createHash("sha256").update(JSON.stringify(schema)).digest("hex").slice(0, 32)}`;
}

function precompiled(key: string): ValidateFunction | undefined {
  if (built === undefined) {
    try {
      built = require("./validators.generated.cjs") as Record<string, ValidateFunction>;
    } catch {
      built = null; // running from sources (tests): everything is compiled on first use
    }
  }
  return built?.[key];
}

function compiled(mode: SchemaMode, schema: object): ValidateFunction {
  const cache = caches[mode];
  let validate = cache.get(schema);
  if (!validate) {
    validate = precompiled(schemaKey(mode, schema));
    if (!validate) {
      engines[mode] ??= new (require("ajv") as typeof import("ajv")).Ajv(AJV_OPTIONS[mode]);
      validate = engines[mode].compile(schema);
    }
    cache.set(schema, validate);
  }
  return validate;
}

/** A JSON Schema validator for `schema`, made once per schema object. */
export function validatorFor(schema: object): ValidateFunction {
  return compiled("plain", schema);
}

/** Like validatorFor, but the value is completed with the schema's `default`s as it is checked. */
export function validatorWithDefaults(schema: object): ValidateFunction {
  return compiled("defaults", schema);
}

/**
 * Turns ajv's errors into one sentence with the path of the offending key, e.g.
 * `unknown key "agent.max_iteratons"` or `"agent.max_iterations" must be integer`.
 */
export function formatSchemaErrors(errors: ErrorObject[] | null | undefined, prefix: string): string {
  const first = errors?.[0];
  if (!first) return "invalid";
  const base = [prefix, ...first.instancePath.split("/").filter(Boolean)].filter(Boolean).join(".");
  if (first.keyword === "additionalProperties") {
    const key = String((first.params as { additionalProperty: string }).additionalProperty);
    return `unknown key "${base ? `${base}.${key}` : key}"`;
  }
  if (first.keyword === "required") {
    const key = String((first.params as { missingProperty: string }).missingProperty);
    return `missing required key "${base ? `${base}.${key}` : key}"`;
  }
  const what = base ? `"${base}"` : "the value";
  const params = first.params as { allowedValues?: unknown[]; allowedValue?: unknown };
  if (first.keyword === "enum") return `${what} must be one of: ${(params.allowedValues ?? []).join(", ")}`;
  if (first.keyword === "const") return `${what} must be ${JSON.stringify(params.allowedValue)}`;
  // A pattern says nothing to people; the schema's description says what is allowed.
  const description = (first.parentSchema as { description?: unknown } | undefined)?.description;
  if (first.keyword === "pattern" && typeof description === "string") return `${what} must be ${description}`;
  return `${what} ${first.message ?? "is invalid"}`;
}
