import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: false });
const cache = new WeakMap<object, ValidateFunction>();

/** Compiles (once per schema object) a JSON Schema validator. */
export function validatorFor(schema: object): ValidateFunction {
  let validate = cache.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    cache.set(schema, validate);
  }
  return validate;
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
  return `${base ? `"${base}"` : "value"} ${first.message ?? "is invalid"}`;
}
