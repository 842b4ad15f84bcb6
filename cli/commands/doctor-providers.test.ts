import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../kernel/host/config.js";
import { configuredModels } from "./doctor-providers.js";

const home = mkdtempSync(join(tmpdir(), "spar-doctor-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("the models spar doctor checks", () => {
  it("include [memory.embeddings]' model, with its endpoint and key variable, when it is configured", () => {
    expect(configuredModels(loadConfig(home, {})).map((m) => m.used_by)).toEqual(["default_model"]);
    writeFileSync(
      join(home, "config.toml"),
      '[memory.embeddings]\nprovider = "openai"\nmodel = "text-embedding-3-small"\n' +
        'base_url = "http://127.0.0.1:8080/v1"\napi_key_env = "EMB_KEY"\ndimensions = 256\n',
    );
    expect(configuredModels(loadConfig(home, {})).at(-1)).toEqual({
      settings: {
        provider: "openai",
        model: "text-embedding-3-small",
        base_url: "http://127.0.0.1:8080/v1",
        api_key_env: "EMB_KEY",
      },
      used_by: "memory.embeddings",
    });
  });
});
