import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";
import { checkSections } from "./config-sections.js";
import type { DiscoveredPlugin } from "./plugin-manifest.js";

function plugin(id: string, sections: Record<string, Record<string, unknown>>): DiscoveredPlugin {
  return {
    manifest: {
      id,
      version: "0.1.0",
      kernel: "^0.1.0",
      kind: "moves",
      description: id,
      entry: "index.js",
      activation: ["onStartup"],
      sections,
    },
    dir: `/plugins/${id}`,
    source: "bundled",
  };
}

const table = (properties: Record<string, object>) => ({
  type: "object",
  additionalProperties: false,
  properties,
});
const ARENA = plugin("moves-arena", {
  channels: table({ webhook_listen: { type: "string", default: "127.0.0.1:6661" } }),
});
const TELEGRAM = plugin("moves-telegram", {
  "channels.telegram": table({ allowlist: { type: "array", items: { type: "integer" } } }),
});
const MCP = plugin("moves-mcp", { mcp: table({ servers: { type: "object", default: {} } }) });

function sections(toml: string, plugins: DiscoveredPlugin[]) {
  const home = mkdtempSync(join(tmpdir(), "spar-sections-"));
  writeFileSync(join(home, "config.toml"), toml);
  return checkSections(loadConfig(home, {}), plugins, join(home, "config.toml"));
}

describe("plugin-owned config tables", () => {
  it("checks a table against its owner and fills in its defaults", () => {
    expect(sections("[mcp]\n", [MCP])).toEqual({ mcp: { servers: {} } });
    expect(() => sections("[mcp]\nservers = 3\n", [MCP])).toThrow('"mcp.servers" must be object');
  });

  it("gives an owned table left out of config.toml its defaults", () => {
    expect(sections("", [ARENA, MCP])).toEqual({
      channels: { webhook_listen: "127.0.0.1:6661" },
      mcp: { servers: {} },
    });
  });

  it("refuses a table nobody owns, naming the key and the file", () => {
    expect(() => sections('[tunnel]\nmode = "quick"\n', [MCP])).toThrow(
      /config\.toml: unknown key "tunnel" \(no installed plugin owns it\)/,
    );
  });

  it("lets a nested table have an owner of its own", () => {
    const checked = sections(
      '[channels]\nwebhook_listen = "127.0.0.1:7000"\n[channels.telegram]\nallowlist = [42]\n',
      [ARENA, TELEGRAM],
    );
    expect(checked).toEqual({
      channels: { webhook_listen: "127.0.0.1:7000" },
      "channels.telegram": { allowlist: [42] },
    });
    expect(() => sections("[channels.slack]\ntoken = 1\n", [ARENA, TELEGRAM])).toThrow(
      'unknown key "channels.slack"',
    );
    expect(() => sections('[channels.telegram]\nallowlist = ["@me"]\n', [ARENA, TELEGRAM])).toThrow(
      '"channels.telegram.allowlist.0" must be integer',
    );
    // Without its owner installed, a platform's table is nobody's.
    expect(() => sections("[channels.telegram]\nallowlist = [1]\n", [ARENA])).toThrow(
      /unknown key "channels.telegram"/,
    );
  });

  it("refuses two owners of one table with different schemas, and shares one declared alike", () => {
    expect(() => sections("", [MCP, plugin("moves-other", { mcp: table({}) })])).toThrow(
      "the config table [mcp] is claimed by both moves-mcp and moves-other",
    );
    const redis = { redis: table({ url_env: { type: "string", default: "SPAR_REDIS_URL" } }) };
    const shared = [plugin("bus-redis", redis), plugin("scheduler-bullmq", redis)];
    expect(sections('[redis]\nurl_env = "MY_REDIS"\n', shared)).toEqual({ redis: { url_env: "MY_REDIS" } });
    expect(() => sections("[redis]\nurl = 1\n", shared)).toThrow('unknown key "redis.url"');
  });
});
