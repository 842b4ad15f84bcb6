import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

// `verbose` keeps the failing schema on each error, so a pattern's `description` can say what is allowed.
const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: false, verbose: true });
// Config tables get their schema's `default`s filled in as they are checked; request bodies never do.
const filling = new Ajv({ allErrors: false, strict: false, useDefaults: true, verbose: true });
const cache = new WeakMap<object, ValidateFunction>();
const fillingCache = new WeakMap<object, ValidateFunction>();

function compiled(engine: Ajv, store: WeakMap<object, ValidateFunction>, schema: object): ValidateFunction {
  let validate = store.get(schema);
  if (!validate) {
    validate = engine.compile(schema);
    store.set(schema, validate);
  }
  return validate;
}

/** Compiles (once per schema object) a JSON Schema validator. */
export function validatorFor(schema: object): ValidateFunction {
  return compiled(ajv, cache, schema);
}

/** Like validatorFor, but the value is completed with the schema's `default`s as it is checked. */
export function validatorWithDefaults(schema: object): ValidateFunction {
  return compiled(filling, fillingCache, schema);
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
