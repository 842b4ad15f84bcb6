/**
 * Checks answers against the OpenAPI document a daemon serves: each JSON response an e2e suite
 * receives must match the schema documented for its path template, method and status (a status the
 * route does not document is a mismatch too). OpenAPI 3.1 schemas are JSON Schema 2020-12; their
 * `$ref`s point into the document's `components`, which each compiled schema carries along.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";

type Json = Record<string, unknown>;

interface Operation {
  responses?: Record<string, Json>;
}

export interface OpenApiLike {
  paths: Record<string, Record<string, Operation>>;
  components?: Json;
}

/**
 * An Ajv for the document's schemas: `components` is an annotation it keeps, so that a schema
 * compiled with the document's components beside it resolves `#/components/...`.
 *
 * @example
 * const validate = compileWithin(doc, schema, strictAjv());
 */
export function compileWithin(doc: OpenApiLike, schema: Json, ajv: Ajv2020): ValidateFunction {
  if (!ajv.getKeyword("components")) ajv.addKeyword({ keyword: "components" });
  return ajv.compile({ ...schema, components: doc.components ?? {} });
}

/** The documented path template a request path falls under: literal segments win over `{params}`. */
export function templateOf(doc: OpenApiLike, path: string): string | undefined {
  const canonical = path.split("?")[0]?.replace(/^\/api\/(?!v1\/)/, "/api/v1/") ?? "";
  const parts = canonical.split("/");
  let best: { template: string; literals: number } | undefined;
  for (const template of Object.keys(doc.paths)) {
    const segments = template.split("/");
    const rest = segments.at(-1) === "{rest}";
    if (rest ? parts.length < segments.length : parts.length !== segments.length) continue;
    let literals = 0;
    const fits = segments.every((segment, i) => {
      if (/^\{.+\}$/.test(segment)) return (parts[i] ?? "") !== "";
      literals += 1;
      return segment === parts[i];
    });
    if (fits && (!best || literals > best.literals)) best = { template, literals };
  }
  return best?.template;
}

/** The response object for a status: the exact one, its class (`4XX`), or `default`. */
function responseFor(op: Operation, status: number): Json | undefined {
  const responses = op.responses ?? {};
  return responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
}

function deref(doc: OpenApiLike, node: Json | undefined): Json | undefined {
  const ref = node?.$ref;
  if (typeof ref !== "string") return node;
  let at: unknown = doc;
  for (const part of ref.slice(2).split("/")) at = (at as Json | undefined)?.[part];
  return at as Json | undefined;
}

/**
 * A checker for one document: `check(...)` returns why an answer does not match what is
 * documented, or undefined when it does (or when the path is none of the document's: a 404 for an
 * unknown route, the dashboard's files).
 */
export function conformance(doc: OpenApiLike) {
  const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, allErrors: true });
  const compiled = new Map<string, ValidateFunction>();
  return {
    check(
      method: string,
      path: string,
      status: number,
      contentType: string | null,
      body: unknown,
    ): string | undefined {
      const template = templateOf(doc, path);
      const op = template ? doc.paths[template]?.[method.toLowerCase()] : undefined;
      if (!template || !op) return undefined;
      const where = `${method.toUpperCase()} ${template} (${path}) answered ${status}`;
      const response = deref(doc, responseFor(op, status));
      if (!response) return `${where}: the document has no response for this status`;
      if (!contentType?.startsWith("application/json")) return undefined;
      const content = response.content as Record<string, { schema?: Json }> | undefined;
      const media = content?.["application/json"];
      if (!media) return `${where}: the document gives this status no JSON body`;
      // JSON of any shape: a plugin route that declares no response schema (OpenAPI: no schema, any value).
      const schema = media.schema;
      if (!schema) return undefined;
      const key = `${method} ${template} ${status}`;
      let validate = compiled.get(key);
      if (!validate) {
        validate = compileWithin(doc, schema, ajv);
        compiled.set(key, validate);
      }
      if (validate(body)) return undefined;
      const errors = (validate.errors ?? []) as ErrorObject[];
      return `${where}: the body does not match its schema: ${ajv.errorsText(errors)}\n${JSON.stringify(body).slice(0, 2000)}`;
    },
  };
}
