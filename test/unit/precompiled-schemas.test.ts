/**
 * The validators `npm run build` precompiles (scripts/compile-schemas.mjs) must judge exactly as Ajv
 * compiling the same schema at run time: same verdict, same defaults filled in, same error sentence.
 * Runs against the built dist/ (`npm test` builds first).
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import { describe, expect, it } from "vitest";
import { GORILLA_SCHEMA } from "../../lib/gorillas/manifest.js";
import { AJV_OPTIONS, formatSchemaErrors, type SchemaMode, schemaKey } from "../../sdk/schema.js";
import { CONFIG_SCHEMA, FIGHTER_MANIFEST_SCHEMA } from "../../sdk/schemas.js";

const root = join(import.meta.dirname, "..", "..");
const built = createRequire(import.meta.url)(join(root, "dist", "sdk", "validators.generated.cjs")) as Record<
  string,
  ValidateFunction
>;
const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;

function both(mode: SchemaMode, schema: object): [ValidateFunction, ValidateFunction] {
  const precompiled = built[schemaKey(mode, schema)];
  if (!precompiled) throw new Error(`no precompiled ${mode} validator for this schema`);
  return [precompiled, new Ajv(AJV_OPTIONS[mode]).compile(schema)];
}

/** Runs each sample through both (on copies: defaults mutate) and compares all they say. */
function judgeAlike(mode: SchemaMode, schema: object, samples: unknown[]): void {
  const [precompiled, runtime] = both(mode, schema);
  for (const sample of samples) {
    const [a, b] = [structuredClone(sample), structuredClone(sample)];
    const verdict = precompiled(a);
    expect(verdict).toBe(runtime(b));
    expect(a).toEqual(b);
    expect(formatSchemaErrors(precompiled.errors, "x")).toBe(formatSchemaErrors(runtime.errors, "x"));
  }
}

describe("precompiled schemas", () => {
  it("the config: defaults, wrong types, unknown keys, enums", () => {
    judgeAlike("defaults", CONFIG_SCHEMA, [
      {},
      { agent: { max_iterations: "25" } },
      { agent: { max_iteratons: 25 } },
      { api_listen: 6660 },
      { default_model: { provider: "openai", model: "gpt-4o" }, memory: { decay: { rate_per_day: -1 } } },
    ]);
  });

  it("GORILLA.toml: defaults, unknown keys, wrong types", () => {
    const gorilla = {
      name: "g",
      description: "d",
      schedule: "daily",
      moves: [],
      system_prompt: "s",
      task: "t",
    };
    judgeAlike("defaults", GORILLA_SCHEMA, [
      gorilla,
      { ...gorilla, settings: { timeout_s: "60" } },
      { ...gorilla, settings: { catch_up: "twice" } },
      { ...gorilla, extra: 1 },
    ]);
  });

  it("plugin manifests and fighter manifests, patterns with their descriptions included", () => {
    const manifest = readJson(join(root, "plugins", "moves-memory", "plugin.json"));
    judgeAlike("plain", readJson(join(root, "plugin.schema.json")), [
      manifest,
      { ...manifest, id: "Not An Id" },
      { ...manifest, kind: "widget" },
      { ...manifest, entry: "../escape.js" },
      { ...manifest, extra: true },
    ]);
    judgeAlike("plain", FIGHTER_MANIFEST_SCHEMA, [
      { name: "ada", description: "d", system_prompt: "s" },
      { name: "", description: "d", system_prompt: "s" },
      { name: "ada", description: "d", system_prompt: "s", capabilities: ["shell:*", 3] },
    ]);
  });

  it("covers every bundled plugin's config tables and move inputs", () => {
    for (const id of readdirSync(join(root, "plugins"))) {
      let manifest: Record<string, unknown>;
      try {
        manifest = readJson(join(root, "plugins", id, "plugin.json"));
      } catch {
        continue;
      }
      for (const schema of Object.values((manifest.sections ?? {}) as Record<string, object>)) {
        judgeAlike("defaults", schema, [{}, { nonsense: 1 }]);
      }
      const moves = ((manifest.contributes as { moves?: { input_schema?: object }[] } | undefined)?.moves ??
        []) as { input_schema?: object }[];
      for (const move of moves) if (move.input_schema) judgeAlike("plain", move.input_schema, [{}, { x: 1 }]);
    }
  });
});
