import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseDotEnv } from "../../lib/home.js";
import { parseListen } from "../../sdk/config.js";
import { loadConfig } from "./config.js";

const homes: string[] = [];
afterEach(() => {
  for (const h of homes.splice(0)) rmSync(h, { recursive: true, force: true });
});

function homeWith(toml: string): string {
  const home = mkdtempSync(join(tmpdir(), "spar-config-"));
  homes.push(home);
  writeFileSync(join(home, "config.toml"), toml);
  return home;
}

describe("config", () => {
  it("applies defaults when the file is empty", () => {
    const config = loadConfig(homeWith(""), {});
    expect(config.api_listen).toBe("127.0.0.1:6660");
    expect(config.default_model).toEqual({
      provider: "ollama",
      model: "llama3.2",
      base_url: "http://127.0.0.1:11434",
    });
    expect(config.agent).toEqual({
      max_iterations: 25,
      tool_timeout_s: 120,
      loop_guard_repeats: 4,
      max_call_depth: 4,
      max_tool_result_chars: 20_000,
    });
    expect(config.quotas).toEqual({ requests_per_minute: 60, tokens_per_minute: 200_000, window_s: 60 });
    expect(config.plugins.store).toBe("store-sqlite");
  });

  it("takes [memory.embeddings] with its defaults, leaves it undefined when absent, and names a bad key", () => {
    expect(loadConfig(homeWith(""), {}).memory.embeddings).toBeUndefined();
    const table = (lines: string) => homeWith(`[memory.embeddings]\n${lines}\n`);
    expect(
      loadConfig(table('provider = "ollama"\nmodel = "nomic-embed-text"'), {}).memory.embeddings,
    ).toEqual({
      provider: "ollama",
      model: "nomic-embed-text",
      batch_size: 64,
      min_similarity: 0.2,
    });
    const full =
      'provider = "openai"\nmodel = "text-embedding-3-small"\nbase_url = "http://127.0.0.1:8080/v1"';
    expect(
      loadConfig(table(`${full}\napi_key_env = "EMB_KEY"\ndimensions = 256\nbatch_size = 96`), {}).memory
        .embeddings,
    ).toEqual({
      provider: "openai",
      model: "text-embedding-3-small",
      base_url: "http://127.0.0.1:8080/v1",
      api_key_env: "EMB_KEY",
      dimensions: 256,
      batch_size: 96,
      min_similarity: 0.2,
    });
    // The decay and compaction tables keep their defaults beside it.
    expect(loadConfig(table('provider = "ollama"\nmodel = "m"'), {}).memory.decay.rate_per_day).toBe(0.05);
    const refused: [string, string | RegExp][] = [
      ['model = "m"', 'missing required key "memory.embeddings.provider"'],
      ['provider = "openai"', 'missing required key "memory.embeddings.model"'],
      ['provider = "openai"\nmodel = "m"\nmodle = "x"', 'unknown key "memory.embeddings.modle"'],
      ['provider = "openai"\nmodel = "m"\ndimensions = 4', '"memory.embeddings.dimensions" must be >= 8'],
      [
        'provider = "openai"\nmodel = "m"\ndimensions = 5000',
        '"memory.embeddings.dimensions" must be <= 4096',
      ],
      [
        'provider = "openai"\nmodel = "m"\ndimensions = 64.5',
        '"memory.embeddings.dimensions" must be integer',
      ],
      ['provider = "openai"\nmodel = "m"\nbatch_size = 0', '"memory.embeddings.batch_size" must be >= 1'],
      ['provider = "openai"\nmodel = "m"\nbatch_size = 97', '"memory.embeddings.batch_size" must be <= 96'],
      ['provider = "openai"\nmodel = "m"\nbase_url = "ftp://x"', /memory\.embeddings\.base_url/],
      ['provider = "openai"\nmodel = "m"\napi_key_env = "NOT A VAR"', /memory\.embeddings\.api_key_env/],
    ];
    for (const [lines, message] of refused) {
      const err = (() => {
        try {
          loadConfig(table(lines), {});
        } catch (e) {
          return e as { code?: string; message: string };
        }
        throw new Error(`accepted: ${lines}`);
      })();
      expect(err.code).toBe("CONFIG_INVALID");
      expect(err.message).toMatch(message);
    }
  });

  it("rejects unknown keys with their path", () => {
    expect(() => loadConfig(homeWith("[agent]\nmax_iteratons = 3\n"), {})).toThrow(
      'unknown key "agent.max_iteratons"',
    );
    expect(() => loadConfig(homeWith('colour = "red"\n'), {})).toThrow('unknown key "colour"');
    expect(() =>
      loadConfig(homeWith('[default_model]\nprovider = "openai"\nmodel = "m"\nkey = "x"\n'), {}),
    ).toThrow('unknown key "default_model.key"');
  });

  it("rejects wrong types and bad TOML with the file path", () => {
    expect(() => loadConfig(homeWith('[agent]\nmax_iterations = "many"\n'), {})).toThrow(
      '"agent.max_iterations" must be integer',
    );
    expect(() => loadConfig(homeWith("api_listen = \n"), {})).toThrow(/config\.toml/);
    expect(() => loadConfig(homeWith('api_listen = "nowhere"\n'), {})).toThrow(/api_listen/);
  });

  it("takes [providers.<name>] prompt_cache beside [providers]' own keys, and refuses anything else in it", () => {
    const config = loadConfig(
      homeWith(
        '[providers]\nallow_manifest_base_url = ["http://127.0.0.1:8080/v1"]\n\n[providers.anthropic]\nprompt_cache = false\n',
      ),
      {},
    );
    expect(config.providers.anthropic).toEqual({ prompt_cache: false });
    expect(config.providers.endpoints).toEqual([]);
    expect(() => loadConfig(homeWith("[providers.anthropic]\ncache = false\n"), {})).toThrow(
      'unknown key "providers.anthropic.cache"',
    );
    expect(() => loadConfig(homeWith('[providers.openai]\nprompt_cache = "no"\n'), {})).toThrow(
      '"providers.openai.prompt_cache" must be boolean',
    );
  });

  it("takes [[pricing]] entries, and refuses a negative or absurd price naming the key", () => {
    const entry = (rates: string) => `[[pricing]]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n${rates}\n`;
    expect(loadConfig(homeWith(""), {}).pricing).toEqual([]);
    expect(
      loadConfig(
        homeWith(entry("input_per_mtok = 0.15\noutput_per_mtok = 0.6\ncached_input_per_mtok = 0.075")),
        {},
      ).pricing,
    ).toEqual([
      {
        provider: "openai",
        model: "gpt-4o-mini",
        input_per_mtok: 0.15,
        output_per_mtok: 0.6,
        cached_input_per_mtok: 0.075,
      },
    ]);
    const refusal = (rates: string) => {
      try {
        loadConfig(homeWith(entry(rates)), {});
      } catch (err) {
        return err;
      }
      throw new Error("accepted");
    };
    expect(refusal("input_per_mtok = -1\noutput_per_mtok = 1")).toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining('"pricing.0.input_per_mtok" must be >= 0'),
    });
    expect(refusal("input_per_mtok = 1\noutput_per_mtok = 5000")).toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining('"pricing.0.output_per_mtok" must be <= 1000'),
    });
    expect(refusal("input_per_mtok = 1")).toMatchObject({
      message: expect.stringContaining('missing required key "pricing.0.output_per_mtok"'),
    });
    expect(refusal('input_per_mtok = 1\noutput_per_mtok = 1\ncurrency = "EUR"')).toMatchObject({
      message: expect.stringContaining('unknown key "pricing.0.currency"'),
    });
  });

  it("lets SPAR_API_LISTEN override the file", () => {
    const config = loadConfig(homeWith('api_listen = "127.0.0.1:7000"\n'), {
      SPAR_API_LISTEN: "127.0.0.1:7001",
    });
    expect(config.api_listen).toBe("127.0.0.1:7001");
  });

  it("keeps other tables for the plugins that own them", () => {
    const config = loadConfig(homeWith('["moves-x"]\nlevel = 1\n'), {});
    expect(config.sections).toEqual({ "moves-x": { level: 1 } });
  });

  it("parses listen addresses, IPv6 included", () => {
    expect(parseListen("127.0.0.1:6660")).toEqual({ host: "127.0.0.1", port: 6660 });
    expect(parseListen("[::1]:6660")).toEqual({ host: "::1", port: 6660 });
    expect(() => parseListen("localhost:99999")).toThrow();
  });
});

describe(".env", () => {
  it("parses names, quotes, comments and export", () => {
    expect(
      parseDotEnv(
        "# keys\nOPENAI_API_KEY=sk-1\nexport A=\"two words\"\nB='single'\nC=plain # note\nnot a line\n",
      ),
    ).toEqual({ OPENAI_API_KEY: "sk-1", A: "two words", B: "single", C: "plain" });
  });
});
