import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createEventBus } from "../../plugins/bus-local/events.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import type { RingServices } from "../../sdk/services.js";
import { createHooks } from "../hooks.js";
import { createLogger } from "../logger.js";
import { loadConfig } from "./config.js";
import { createPluginHost } from "./plugin-host.js";
import { discoverPlugins } from "./plugin-manifest.js";

const roots: string[] = [];
afterEach(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface FixturePlugin {
  id: string;
  kind?: string;
  activation?: string[];
  requires?: string[];
  /** Its own `[<id>]` table's schema. */
  configSchema?: object;
  /** Body of apply(api, config); `MARK` writes a file named after the plugin when the module loads. */
  apply?: string;
  manifest?: Record<string, unknown>;
}

/** Writes plugin folders into a fresh root; each module leaves `<root>/<id>.imported` when imported. */
function fixtureRoot(plugins: FixturePlugin[]): string {
  const root = mkdtempSync(join(tmpdir(), "spar-plugins-"));
  roots.push(root);
  for (const p of plugins) {
    const dir = join(root, p.id);
    mkdirSync(dir);
    writeFileSync(
      join(dir, "plugin.json"),
      JSON.stringify({
        id: p.id,
        version: "1.0.0",
        kernel: "^0.1.0",
        kind: p.kind ?? p.id.split("-")[0],
        description: `fixture ${p.id}`,
        entry: "index.js",
        activation: p.activation ?? ["onStartup"],
        ...(p.requires ? { requires: p.requires } : {}),
        ...(p.configSchema ? { sections: { [p.id]: p.configSchema } } : {}),
        ...p.manifest,
      }),
    );
    writeFileSync(
      join(dir, "index.js"),
      `import { writeFileSync } from "node:fs";\n` +
        `writeFileSync(${JSON.stringify(join(root, `${p.id}.imported`))}, String(Date.now()));\n` +
        `export default { id: ${JSON.stringify(p.id)}, async apply(api, config) { ${p.apply ?? ""} } };\n`,
    );
  }
  return root;
}

function hostFor(root: string, configToml = "", timeoutMs?: number) {
  const home = mkdtempSync(join(tmpdir(), "spar-home-"));
  roots.push(home);
  writeFileSync(join(home, "config.toml"), configToml);
  const config = loadConfig(home, {});
  const hooks = createHooks();
  const plugins = discoverPlugins([{ dir: root, source: "user" }], "0.1.0");
  const host = createPluginHost({
    plugins,
    hooks,
    config: {
      ...config,
      plugins: {
        ...config.plugins,
        store: "store-fake",
        arena: "arena-fake",
        tunnel: "tunnel-fake",
        scheduler: "scheduler-fake",
        bus: "bus-fake",
        troops: "troops-fake",
      },
    },
    home,
    env: {},
    kernelVersion: "0.1.0",
    log: createLogger(() => undefined),
    events: createEventBus({ historySize: 10 }),
    services: () => ({}) as RingServices,
    collections: () => {
      throw new SparError("STORE_FAILED", "these tests open no store");
    },
    activationTimeoutMs: timeoutMs,
  });
  return { host, hooks };
}

// Every single-slot kind needs an installed plugin ([plugins] names one for each); only the store
// and the Arena start with the host here.
const slots: FixturePlugin[] = [
  { id: "store-fake" },
  { id: "arena-fake" },
  ...["tunnel-fake", "scheduler-fake", "bus-fake", "troops-fake"].map((id) => ({
    id,
    activation: ["onProvider:none"],
  })),
];

describe("plugin host", () => {
  it("imports nothing until an activation event names the plugin", async () => {
    const root = fixtureRoot([...slots, { id: "provider-lazy", activation: ["onProvider:lazy"] }]);
    const { host } = hostFor(root);
    await host.activate("onStartup");
    expect(existsSync(join(root, "store-fake.imported"))).toBe(true);
    expect(existsSync(join(root, "provider-lazy.imported"))).toBe(false);
    await host.activate("onProvider:lazy");
    expect(existsSync(join(root, "provider-lazy.imported"))).toBe(true);
    expect(host.isActive("provider-lazy")).toBe(true);
  });

  it("activates declared dependencies first", async () => {
    const root = fixtureRoot([
      ...slots,
      {
        id: "moves-base",
        activation: ["onMove:base"],
        apply: "globalThis.__order = [...(globalThis.__order ?? []), 'base'];",
      },
      {
        id: "moves-top",
        activation: ["onMove:top"],
        requires: ["moves-base"],
        apply: "globalThis.__order = [...(globalThis.__order ?? []), 'top'];",
      },
    ]);
    const { host } = hostFor(root);
    await host.activate("onMove:top");
    expect((globalThis as { __order?: string[] }).__order).toEqual(["base", "top"]);
  });

  it("refuses a missing dependency before importing anything", () => {
    const root = fixtureRoot([...slots, { id: "moves-orphan", requires: ["moves-ghost"] }]);
    expect(() => hostFor(root)).toThrow(/moves-orphan requires moves-ghost, which is not installed/);
  });

  it("names the plugin and the hook when a tap throws", async () => {
    const root = fixtureRoot([
      ...slots,
      {
        id: "provider-broken",
        activation: ["onProvider:broken"],
        apply: "api.hooks.provider.resolve.tap(() => { throw new Error('boom'); });",
      },
    ]);
    const { host, hooks } = hostFor(root);
    await host.activate("onProvider:broken");
    const err = await hooks.provider.resolve
      .promise({ provider: "broken", model: "m" }, {})
      .catch((e: unknown) => e);
    expect(isSparError(err, "PLUGIN_FAILED")).toBe(true);
    expect((err as Error).message).toBe("plugin provider-broken failed in provider.resolve: boom");
  });

  it("names the plugin when apply throws", async () => {
    const root = fixtureRoot([
      ...slots,
      { id: "moves-bad", activation: ["onMove:bad"], apply: "throw new Error('nope');" },
    ]);
    const { host } = hostFor(root);
    await expect(host.activate("onMove:bad")).rejects.toThrow("plugin moves-bad failed in apply: nope");
  });

  it("times out a plugin that never finishes activating", async () => {
    const root = fixtureRoot([
      ...slots,
      { id: "moves-slow", activation: ["onMove:slow"], apply: "await new Promise(() => {});" },
    ]);
    const { host } = hostFor(root, "", 200);
    await expect(host.activate("onMove:slow")).rejects.toThrow(
      "plugin moves-slow did not activate within 200 ms",
    );
  });

  it("activates only the configured plugin of a single-slot kind", async () => {
    const root = fixtureRoot([...slots, { id: "store-other" }]);
    const { host } = hostFor(root);
    await host.activate("onStartup");
    expect(host.isActive("store-fake")).toBe(true);
    expect(existsSync(join(root, "store-other.imported"))).toBe(false);
    expect(host.eligible.map((p) => p.manifest.id)).not.toContain("store-other");
  });

  it("honours [plugins] disable", async () => {
    const root = fixtureRoot([...slots, { id: "moves-off", activation: ["onStartup"] }]);
    const { host } = hostFor(root, '[plugins]\ndisable = ["moves-off"]\n');
    await host.activate("onStartup");
    expect(existsSync(join(root, "moves-off.imported"))).toBe(false);
  });

  it("refuses a [plugins] entry that names no installed plugin, suggesting the closest", () => {
    const root = fixtureRoot([...slots, { id: "moves-off" }]);
    expect(() => hostFor(root, '[plugins]\ndisable = ["moves-of"]\n')).toThrow(
      '[plugins] disable lists "moves-of", which names no installed plugin; did you mean "moves-off"?',
    );
    expect(existsSync(join(root, "moves-off.imported"))).toBe(false);
  });

  it("validates a plugin's config table against its schema before import", () => {
    const schema = {
      type: "object",
      additionalProperties: false,
      properties: { level: { type: "integer" } },
    };
    const root = fixtureRoot([...slots, { id: "moves-conf", configSchema: schema }]);
    expect(() => hostFor(root, '["moves-conf"]\nlevle = 3\n')).toThrow('unknown key "moves-conf.levle"');
    expect(() => hostFor(root, '["moves-nope"]\nlevel = 3\n')).toThrow('unknown key "moves-nope"');
    expect(existsSync(join(root, "moves-conf.imported"))).toBe(false);
  });

  it("passes the validated config tables it owns to apply, by path", async () => {
    const schema = { type: "object", properties: { level: { type: "integer" } } };
    const root = fixtureRoot([
      ...slots,
      { id: "moves-conf", configSchema: schema, apply: 'globalThis.__level = config["moves-conf"].level;' },
    ]);
    const { host } = hostFor(root, '["moves-conf"]\nlevel = 7\n');
    await host.activate("onStartup");
    expect((globalThis as { __level?: number }).__level).toBe(7);
  });
});

describe("plugin discovery", () => {
  it("refuses a manifest with an unknown field, naming the file and key, without importing", () => {
    const root = fixtureRoot([{ id: "moves-odd", manifest: { homepage: "x" } }]);
    expect(() => discoverPlugins([{ dir: root, source: "user" }], "0.1.0")).toThrow(
      /plugin\.json: unknown key "homepage"/,
    );
    expect(existsSync(join(root, "moves-odd.imported"))).toBe(false);
  });

  it("refuses an id that differs from the folder name", () => {
    const root = fixtureRoot([{ id: "moves-one", manifest: { id: "moves-two" } }]);
    expect(() => discoverPlugins([{ dir: root, source: "user" }], "0.1.0")).toThrow(
      /must equal the folder name/,
    );
  });

  it("refuses a plugin built for another kernel", () => {
    const root = fixtureRoot([{ id: "moves-future", manifest: { kernel: "^2.0.0" } }]);
    expect(() => discoverPlugins([{ dir: root, source: "user" }], "0.1.0")).toThrow(
      /supports kernel \^2\.0\.0, this is 0\.1\.0/,
    );
  });

  it("refuses the same id found in two roots", () => {
    const a = fixtureRoot([{ id: "moves-twin" }]);
    const b = fixtureRoot([{ id: "moves-twin" }]);
    expect(() =>
      discoverPlugins(
        [
          { dir: a, source: "bundled" },
          { dir: b, source: "user" },
        ],
        "0.1.0",
      ),
    ).toThrow(/found twice/);
  });
});
