/**
 * The OpenAPI 3.1 document the real daemon serves at `/api/v1/openapi.json`: every route is in it
 * (checked against the README's route tables, an independent list), every request body's schema
 * compiles as JSON Schema 2020-12, takes the bodies the real API accepts on its happy path and
 * refuses an unknown field as the API does, and the document keeps OpenAPI 3.1's structural rules.
 * There is no OpenAPI validator among the dependencies, so those rules are checked here directly.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { compileWithin } from "../helpers/openapi-check.js";

const ROOT = join(import.meta.dirname, "..", "..");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Json;
}
interface Operation {
  operationId?: string;
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema?: Json }> };
  responses?: Record<string, Json>;
}
interface Document {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json>; securitySchemes: Record<string, Json> };
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const PATH_ITEM_FIELDS = new Set([...METHODS, "$ref", "summary", "description", "servers", "parameters"]);
const TOP_FIELDS = new Set([
  "openapi",
  "info",
  "jsonSchemaDialect",
  "servers",
  "paths",
  "webhooks",
  "components",
  "security",
  "tags",
  "externalDocs",
]);
const SCHEME_TYPES = new Set(["apiKey", "http", "mutualTLS", "oauth2", "openIdConnect"]);

/** `METHOD /path/{param}` for each operation of the document. */
function operationsOf(doc: Document): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => METHODS.includes(key))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
}

/** Every value under `node` with its JSON pointer. */
function* walk(node: unknown, pointer = "#"): Generator<[string, unknown]> {
  yield [pointer, node];
  if (typeof node !== "object" || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    yield* walk(value, `${pointer}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`);
  }
}

function resolve(doc: Document, ref: string): unknown {
  return ref
    .slice(2)
    .split("/")
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .reduce<unknown>((node, key) => (node as Json | undefined)?.[key], doc);
}

/** OpenAPI 3.1's rules that a generator can break, as a list of what is wrong (empty when sound). */
function structuralProblems(doc: Document): string[] {
  const problems: string[] = [];
  const extension = (key: string) => key.startsWith("x-");
  if (!/^3\.1\.\d+$/.test(doc.openapi)) problems.push(`openapi is "${doc.openapi}", not 3.1.x`);
  for (const key of Object.keys(doc)) {
    if (!TOP_FIELDS.has(key) && !extension(key)) problems.push(`unknown top-level field ${key}`);
  }
  if (typeof doc.info?.title !== "string" || doc.info.title === "") problems.push("info.title is missing");
  if (typeof doc.info?.version !== "string") problems.push("info.version is missing");
  if (typeof doc.paths !== "object" || doc.paths === null) problems.push("paths is missing");
  const templates = new Map<string, string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    if (!path.startsWith("/")) problems.push(`path ${path} does not start with /`);
    const template = path.replace(/\{[^}]+\}/g, "{}");
    if (templates.has(template))
      problems.push(`${path} and ${templates.get(template)} are the same template`);
    templates.set(template, path);
    for (const key of Object.keys(item)) {
      if (!PATH_ITEM_FIELDS.has(key) && !extension(key)) problems.push(`${path}: unknown field ${key}`);
    }
    const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
    for (const method of Object.keys(item).filter((key) => METHODS.includes(key))) {
      const where = `${method.toUpperCase()} ${path}`;
      const op = item[method] as Operation;
      const responses = Object.entries(op.responses ?? {});
      if (responses.length === 0) problems.push(`${where} has no responses`);
      for (const [status, response] of responses) {
        if (!/^([1-5](\d\d|XX)|default)$/.test(status)) problems.push(`${where}: response key ${status}`);
        if (typeof response.$ref !== "string" && typeof response.description !== "string") {
          problems.push(`${where}: response ${status} has no description`);
        }
      }
      const parameters = op.parameters ?? [];
      const declared = parameters.filter((p) => p.in === "path");
      for (const name of inPath) {
        if (!declared.some((p) => p.name === name)) problems.push(`${where}: {${name}} is not declared`);
      }
      for (const p of declared) {
        if (!inPath.includes(p.name)) problems.push(`${where}: path parameter ${p.name} is not in the path`);
        if (p.required !== true) problems.push(`${where}: path parameter ${p.name} is not required`);
      }
      for (const p of parameters) {
        if (!["path", "query", "header", "cookie"].includes(p.in))
          problems.push(`${where}: ${p.name} in ${p.in}`);
        if (p.schema === undefined) problems.push(`${where}: parameter ${p.name} has no schema`);
      }
      const keys = parameters.map((p) => `${p.in}:${p.name}`);
      if (new Set(keys).size !== keys.length) problems.push(`${where}: a parameter is declared twice`);
      if (op.requestBody && Object.keys(op.requestBody.content ?? {}).length === 0) {
        problems.push(`${where}: requestBody has no content`);
      }
    }
  }
  for (const [pointer, node] of walk(doc)) {
    const ref = (node as Json | null)?.$ref;
    if (typeof node === "object" && typeof ref === "string") {
      if (!ref.startsWith("#/") || resolve(doc, ref) === undefined)
        problems.push(`${pointer}: $ref ${ref} resolves to nothing`);
    }
  }
  const schemes = doc.components?.securitySchemes ?? {};
  for (const requirement of doc.security ?? []) {
    for (const name of Object.keys(requirement)) {
      if (!schemes[name]) problems.push(`security names ${name}, which components.securitySchemes lacks`);
    }
  }
  for (const [name, scheme] of Object.entries(schemes)) {
    if (!SCHEME_TYPES.has(scheme.type as string))
      problems.push(`security scheme ${name}: type ${scheme.type}`);
    if (
      scheme.type === "apiKey" &&
      (typeof scheme.name !== "string" || !["query", "header", "cookie"].includes(scheme.in as string))
    ) {
      problems.push(`security scheme ${name}: an apiKey needs a name and in`);
    }
  }
  return problems;
}

/** The routes README.md's tables list (`| \`GET /api/v1/...\` |` rows), in OpenAPI's syntax. */
function readmeRoutes(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  return [...readme.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) (\/api\/v1\/[^`?\s]*)/gm)].map(
    ([, method, path]) => `${method} ${(path as string).replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`,
  );
}

/**
 * Served but not in the README's tables: the `/chat` twin of `/message` (named in the message row),
 * channels and the tunnel (their own README sections), the document itself, and the
 * OpenAI-compatible routes.
 */
const NOT_IN_TABLES = [
  "POST /api/v1/fighters/{id}/chat",
  "GET /api/v1/channels",
  "GET /api/v1/channels/{id}",
  "GET /api/v1/tunnel",
  "GET /api/v1/openapi.json",
  "POST /v1/chat/completions",
  "GET /v1/models",
  "GET /v1/models/{model}",
];

/** JSON Schema 2020-12, strict: a keyword it does not know (`nullable`, `additionalItems`) is an error. */
const strictAjv = () => new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });

describe("the OpenAPI document at /api/v1/openapi.json", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let doc: Document;
  /** The bodies the real API took on its happy path, by operation (`POST /api/v1/fighters`). */
  const accepted = new Map<string, unknown[]>();

  /** Sends `body` to the operation at `template` (params filled in), expecting `status`; keeps the body. */
  const happy = async (method: string, template: string, params: Json, body: unknown, status: number) => {
    const path = template.replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeURIComponent(String(params[name])),
    );
    const res = await daemon.request(method, path, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status);
    const key = `${method} ${template}`;
    accepted.set(key, [...(accepted.get(key) ?? []), body]);
    return res.body as Json;
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[creed]\nreflect = false\n");
    daemon = await startDaemon(home, port);
    const res = await daemon.request<Document>("GET", "/api/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    doc = res.body;

    // The happy path, through the real API: each body here is one a client really sends.
    await happy(
      "POST",
      "/api/v1/fighters",
      {},
      { manifest: { name: "scout", description: "scout", system_prompt: "You are scout." } },
      201,
    );
    await happy("POST", "/api/v1/fighters", {}, { template: "coder", name: "builder" }, 201);
    await happy("POST", "/api/v1/store/backup", {}, { path: join(home, "openapi-backup.db") }, 201);
    await happy("POST", "/api/v1/fighters/{id}/message", { id: "scout" }, { message: "hello" }, 200);
    const { bout_id } = await happy(
      "POST",
      "/api/v1/fighters/{id}/chat",
      { id: "scout" },
      { message: "a new one", bout: "new" },
      200,
    );
    await happy(
      "POST",
      "/api/v1/fighters/{id}/message",
      { id: "scout" },
      { message: "and on", bout_id },
      200,
    );
    await happy(
      "POST",
      "/api/v1/fighters/{id}/message-to/{target}",
      { id: "spar", target: "scout" },
      { content: "hi scout" },
      200,
    );
    await happy(
      "PUT",
      "/api/v1/fighters/{id}/creed",
      { id: "scout" },
      { identity: "A scout.", traits: ["curious"], directives: ["be brief"] },
      200,
    );
    await happy(
      "POST",
      "/api/v1/troops",
      {},
      { name: "pair", leader: "spar", members: ["scout"], strategy: "broadcast" },
      201,
    );
    await happy("POST", "/api/v1/troops/{id}/tasks", { id: "pair" }, { task: "say hi", async: true }, 202);
    await happy(
      "PATCH",
      "/api/v1/troops/{id}",
      { id: "pair" },
      { members: ["scout"], strategy: "pipeline" },
      200,
    );
    await happy("POST", "/api/v1/moves/scan", {}, { source: "adjust-tone" }, 200);
    const skill = readFileSync(join(ROOT, "skills", "adjust-tone", "SKILL.md"), "utf8").replace(
      /^name: .*$/m,
      "name: my-tone",
    );
    await happy(
      "POST",
      "/api/v1/moves/install",
      {},
      { files: { "SKILL.md": Buffer.from(skill).toString("base64") } },
      201,
    );
    await happy("POST", "/api/v1/moves/update", {}, { name: "my-tone" }, 200);
    const chat = { model: "scout", messages: [{ role: "user", content: "hello" }] };
    await happy("POST", "/v1/chat/completions", {}, chat, 200);
    // Approvals: the builder's model asks to run a command; its turn waits for each answer.
    const asked = async (argv: string[]) => {
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: { argv } }] });
      const reply = daemon.request("POST", "/api/v1/fighters/builder/message", { message: "run it" });
      for (;;) {
        const { body } = await daemon.request<{ approvals: { id: string }[] }>(
          "GET",
          "/api/v1/approvals?status=pending",
        );
        const id = body.approvals[0]?.id;
        if (id) return { id, reply };
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const first = await asked(["true"]);
    await happy("POST", "/api/v1/approvals/{id}/approve", first, { always: true, pattern: "true" }, 200);
    expect((await first.reply).status).toBe(200);
    const second = await asked(["false"]);
    await happy("POST", "/api/v1/approvals/{id}/deny", second, { reason: "not now" }, 200);
    expect((await second.reply).status).toBe(200);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("keeps OpenAPI 3.1's structural rules, for this version of Spar", () => {
    expect(structuralProblems(doc)).toEqual([]);
    expect(doc.info.title).toBe("Spar");
    expect(doc.info.version).toBe(VERSION);
    expect(doc.servers).toEqual([{ url: "/" }]);
    expect(doc.info.description).toContain("also served under `/api/...`");
  });

  it("has only schemas that compile as JSON Schema 2020-12: parameters, bodies, answers, components", () => {
    const schemas = [...walk(doc)].filter(
      ([pointer, node]) =>
        /\/(schema|components\/schemas\/[^/]+)$/.test(pointer) &&
        typeof node === "object" &&
        typeof (node as Json).$ref !== "string",
    );
    expect(schemas.length).toBeGreaterThan(10);
    const ajv = strictAjv();
    const failures = schemas.flatMap(([pointer, schema]) => {
      try {
        compileWithin(doc, schema as Json, ajv);
        return [];
      } catch (err) {
        return [`${pointer}: ${(err as Error).message}`];
      }
    });
    expect(failures).toEqual([]);
  });

  it("has every route the README's tables list and the routes plugins add, and no other", () => {
    const listed = readmeRoutes();
    // The HTTP API table and the troops and gorillas tables, all read.
    expect(listed).toEqual(
      expect.arrayContaining([
        "GET /api/v1/fighters/{id}",
        "GET /api/v1/ws",
        "POST /api/v1/troops/{id}/tasks/{task_id}/cancel",
        "GET /api/v1/gorillas/{id}/runs/{run_id}",
      ]),
    );
    expect(operationsOf(doc).sort()).toEqual([...new Set([...listed, ...NOT_IN_TABLES])].sort());
  });

  it("names every operation (uniquely), summarises it and says what its success answers, plugins' routes included", () => {
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })),
    );
    const problems = operations.flatMap(({ key, op }) => {
      const responses = op.responses ?? {};
      const described = Object.entries(responses).some(([status, response]) => {
        if (status === "204" || status === "101") return true;
        const content = (response.content ?? {}) as Record<string, { schema?: Json }>;
        return (
          /^2/.test(status) && Object.values(content).some((c) => Object.keys(c.schema ?? {}).length > 0)
        );
      });
      return [
        ...(op.operationId ? [] : [`${key}: no operationId`]),
        ...(op.summary ? [] : [`${key}: no summary`]),
        ...(described ? [] : [`${key}: no schema for its success`]),
      ];
    });
    expect(problems).toEqual([]);
    const ids = operations.map(({ op }) => op.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    // The main resources are named types with an example, the manifest the kernel's own schema.
    for (const name of ["Fighter", "Bout", "MessageReply", "Gorilla", "Troop"]) {
      expect(doc.components.schemas[name]?.examples, name).toHaveLength(1);
    }
    expect(doc.components.schemas.FighterManifest).toMatchObject({
      additionalProperties: false,
      required: ["name", "description", "system_prompt"],
    });
    const sse = doc.paths["/api/v1/fighters/{id}/message"]?.post?.responses?.["200"]?.content as Json;
    expect(Object.keys(sse)).toEqual(["application/json", "text/event-stream"]);
    expect(doc.paths["/api/v1/ws"]?.get?.responses?.["101"]).toBeDefined();
  });

  it("has no /api alias and no HEAD twin: one operation per route", () => {
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/api/") && !p.startsWith("/api/v1/"))).toEqual(
      [],
    );
    expect(operationsOf(doc).filter((op) => op.startsWith("HEAD "))).toEqual([]);
  });

  it("gives a schema for every body that compiles as JSON Schema 2020-12, takes the API's own bodies and refuses an unknown field", async () => {
    const ajv = strictAjv();
    const withBody = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => op.requestBody)
        .map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, method, op })),
    );
    expect(withBody.length).toBeGreaterThan(0);
    // Every documented body has an example from the happy path above, so none goes unchecked.
    expect(withBody.map((b) => b.key).filter((key) => !accepted.has(key))).toEqual([]);
    for (const { key, method, op } of withBody) {
      const schema = op.requestBody?.content["application/json"]?.schema;
      expect(schema, key).toBeDefined();
      const validate = compileWithin(doc, schema as Json, ajv);
      for (const body of accepted.get(key) ?? []) {
        expect(validate(body), `${key} ${JSON.stringify(body)}: ${ajv.errorsText(validate.errors)}`).toBe(
          true,
        );
        const extra = { ...(body as Json), unexpected_field: true };
        expect(validate(extra), `${key} takes an unknown field`).toBe(false);
        expect(validate.errors).toContainEqual(
          expect.objectContaining({
            keyword: "additionalProperties",
            params: { additionalProperty: "unexpected_field" },
          }),
        );
        // And the API refuses it too, before doing anything with it.
        const path = key.slice(method.length + 1).replace(/\{[^}]+\}/g, "scout");
        const refused = await daemon.request<{ error: { code: string; message: string } }>(
          method.toUpperCase(),
          path,
          extra,
        );
        expect(refused.status, `${key}: ${JSON.stringify(refused.body)}`).toBe(400);
        expect(refused.body.error).toMatchObject({
          code: "VALIDATION_FAILED",
          message: expect.stringContaining("unexpected_field"),
        });
      }
    }
  });

  it("documents each route's errors in the envelope the API answers them in", async () => {
    const deref = (node: Json | undefined) =>
      (typeof node?.$ref === "string" ? resolve(doc, node.$ref) : node) as Json | undefined;
    const errorSchemaOf = (path: string) => {
      const responses = doc.paths[path]?.get?.responses ?? {};
      const response = deref(responses["404"] ?? responses["4XX"] ?? responses.default);
      const content = response?.content as Record<string, { schema?: Json }> | undefined;
      return deref(content?.["application/json"]?.schema);
    };
    // The Arena's own envelope, and the OpenAI-compatible routes' (OpenAI's), each as really answered.
    for (const [template, path] of [
      ["/api/v1/fighters/{id}", "/api/v1/fighters/nobody"],
      ["/v1/models/{model}", "/v1/models/nobody"],
    ] as const) {
      const answer = await daemon.request("GET", path);
      expect(answer.status).toBe(404);
      const schema = errorSchemaOf(template);
      expect(schema, template).toBeDefined();
      const ajv = strictAjv();
      const validate = compileWithin(doc, schema as Json, ajv);
      expect(
        validate(answer.body),
        `${path} ${JSON.stringify(answer.body)}: ${ajv.errorsText(validate.errors)}`,
      ).toBe(true);
    }
    for (const [path, item] of Object.entries(doc.paths).filter(([p]) => p.startsWith("/api/v1/"))) {
      for (const op of Object.values(item)) {
        expect(op.responses?.default, path).toEqual({ $ref: "#/components/responses/Error" });
      }
    }
  });

  it("documents the signature scheme by the headers the API reads", () => {
    expect(doc.security).toEqual([{ signature: [] }, {}]);
    expect(doc.components.securitySchemes.signature).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "Signature",
    });
    expect(doc.components.securitySchemes.signature?.description).toContain("Signature-Input");
  });

  it("is the same under /api, and holds no secret and no local path", async () => {
    const alias = await daemon.request<Document>("GET", "/api/openapi.json");
    expect(alias.body).toEqual(doc);
    const text = JSON.stringify(doc);
    expect(text).not.toContain("sk-test-secret-0000");
    expect(text).not.toContain(home);
  });
});

describe("the OpenAPI document behind the API's authentication", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("is refused unsigned when only signed requests are accepted, and served signed", async () => {
    const unsigned = await daemon.request<{ error: { code: string } }>("GET", "/api/v1/openapi.json");
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.error.code).toBe("UNAUTHORIZED");
    const signed = await daemon.cli(["sign", "GET", "/api/v1/openapi.json", "--json"]);
    const { url, headers } = JSON.parse(signed.stdout) as { url: string; headers: Record<string, string> };
    const res = await fetch(url, { headers });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Document).openapi).toBe("3.1.0");
  });
});
