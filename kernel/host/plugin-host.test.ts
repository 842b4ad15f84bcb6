import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../lib/logger.js";
import { createEventBus } from "../../plugins/bus-local/events.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import type { RingServices } from "../../sdk/services.js";
import { createHooks } from "../hooks.js";
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

function hostFor(root: string, configToml = "", timeoutMs?: number, services = {} as RingServices) {
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
    services: () => services,
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
        manifest: { contributes: { providers: [{ id: "broken" }] } },
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

  it("hands a nested table config.toml leaves out with its schema's defaults", async () => {
    const root = fixtureRoot([
      ...slots,
      {
        id: "moves-nested",
        manifest: {
          sections: {
            "moves.nested": {
              type: "object",
              properties: { limit: { type: "integer", default: 7 }, names: { type: "array", default: [] } },
            },
          },
        },
        apply: "globalThis.__nested = config['moves.nested'];",
      },
    ]);
    const { host } = hostFor(root);
    await host.activate("onStartup");
    expect((globalThis as { __nested?: unknown }).__nested).toEqual({ limit: 7, names: [] });
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

  it("shows a plugin only its own tables in api.config.sections, the kernel's keys as they are", async () => {
    const schema = { type: "object", properties: { level: { type: "integer" } } };
    const root = fixtureRoot([
      ...slots,
      { id: "moves-mine", configSchema: schema, apply: "globalThis.__seen = api.config;" },
      { id: "moves-theirs", configSchema: schema },
    ]);
    const { host } = hostFor(root, '["moves-mine"]\nlevel = 1\n["moves-theirs"]\nlevel = 2\n');
    await host.activate("onStartup");
    const seen = (globalThis as { __seen?: { sections: object; agent: { max_iterations: number } } }).__seen;
    expect(seen?.sections).toEqual({ "moves-mine": { level: 1 } });
    expect(seen?.agent.max_iterations).toBeGreaterThan(0);
  });
});

describe("tap rules", () => {
  const answering = (id: string, names: Record<string, unknown>, apply: string): FixturePlugin => ({
    id,
    activation: [`onProvider:${id}`],
    manifest: { contributes: names },
    apply,
  });

  it("asks a routing hook's tap only for the names its plugin's manifest contributes", async () => {
    const any = (id: string) => `api.hooks.provider.resolve.tap(() => "${id}");`;
    const root = fixtureRoot([
      ...slots,
      answering("provider-first", { providers: [{ id: "ant" }] }, any("provider-first")),
      answering("provider-second", { providers: [{ id: "bee" }] }, any("provider-second")),
    ]);
    const { host, hooks } = hostFor(root);
    // The first imported answers everything it is asked; it is not asked for "bee".
    await host.activate("onProvider:provider-first");
    await host.activate("onProvider:provider-second");
    expect(await hooks.provider.resolve.promise({ provider: "bee", model: "m" }, {})).toBe("provider-second");
    expect(await hooks.provider.resolve.promise({ provider: "ant", model: "m" }, {})).toBe("provider-first");
    expect(await hooks.provider.resolve.promise({ provider: "wasp", model: "m" }, {})).toBeUndefined();
  });

  it("refuses two plugins contributing one name at start, naming both", () => {
    const root = fixtureRoot([
      ...slots,
      answering("strategy-one", { strategies: ["vote"] }, ""),
      answering("strategy-two", { strategies: ["vote"] }, ""),
    ]);
    expect(() => hostFor(root)).toThrow(
      'plugins strategy-one and strategy-two both contribute the strategy "vote": disable one ([plugins] disable)',
    );
  });

  it("runs taps in declared order (phase, before/after, plugin id), whatever the import order", async () => {
    const add = (id: string, options: string) =>
      `api.hooks.turn.prepare.tap((p) => ({ ...p, system: p.system + " ${id}" }), ${options});`;
    const root = fixtureRoot([
      ...slots,
      answering("moves-a", {}, add("moves-a", "{}")),
      answering("moves-b", {}, add("moves-b", '{ before: "moves-a" }')),
      answering("moves-c", {}, add("moves-c", '{ phase: "early" }')),
      answering("moves-d", {}, add("moves-d", "{}")),
      answering("moves-z", {}, add("moves-z", '{ phase: "last" }')),
    ]);
    const { host, hooks } = hostFor(root);
    for (const id of ["moves-z", "moves-d", "moves-a", "moves-c", "moves-b"]) {
      await host.activate(`onProvider:${id}`);
    }
    const prompt = await hooks.turn.prepare.promise(
      { system: "", messages: [], tools: [] },
      { fighter: {} as never, bout_id: "b" },
    );
    expect(prompt.system).toBe(" moves-c moves-b moves-a moves-d moves-z");
  });

  it("refuses taps that order each other in a cycle", async () => {
    const tap = (other: string) => `api.hooks.turn.end.tap(() => undefined, { after: "${other}" });`;
    const root = fixtureRoot([
      ...slots,
      answering("moves-x", {}, tap("moves-y")),
      answering("moves-y", {}, tap("moves-x")),
    ]);
    const { host } = hostFor(root);
    await host.activate("onProvider:moves-x");
    await expect(host.activate("onProvider:moves-y")).rejects.toThrow(
      "the taps of moves-x, moves-y order each other in a cycle (before/after)",
    );
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
