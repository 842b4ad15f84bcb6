import { describe, expect, it } from "vitest";
import type { SparConfig } from "../sdk/config.js";
import { checkPluginChoices, closestName, pluginChoiceProblems } from "./plugin-choices.js";

const installed = [
  { id: "store-sqlite", kind: "store" },
  { id: "store-postgres", kind: "store" },
  { id: "arena-http", kind: "arena" },
  { id: "tunnel-cloudflared", kind: "tunnel" },
  { id: "scheduler-croner", kind: "scheduler" },
  { id: "scheduler-bullmq", kind: "scheduler" },
  { id: "bus-local", kind: "bus" },
  { id: "troops-local", kind: "troops" },
  { id: "moves-shell", kind: "moves" },
];
const good: SparConfig["plugins"] = {
  enable: [],
  disable: [],
  dirs: [],
  store: "store-sqlite",
  arena: "arena-http",
  tunnel: "tunnel-cloudflared",
  scheduler: "scheduler-croner",
  bus: "bus-local",
  troops: "troops-local",
};

describe("[plugins] choices", () => {
  it("takes entries that name installed plugins of the right kind", () => {
    expect(
      pluginChoiceProblems({ ...good, disable: ["moves-shell"], enable: ["scheduler-bullmq"] }, installed),
    ).toEqual([]);
    expect(() => checkPluginChoices(good, installed)).not.toThrow();
  });

  it("names a mistyped slot, the closest name and the installed ones of its kind", () => {
    expect(pluginChoiceProblems({ ...good, scheduler: "scheduler-cronr" }, installed)).toEqual([
      {
        path: "plugins.scheduler",
        message:
          '[plugins] scheduler = "scheduler-cronr" names no installed scheduler plugin; did you mean "scheduler-croner"? (installed: scheduler-croner, scheduler-bullmq)',
      },
    ]);
  });

  it("refuses a slot naming a plugin of another kind", () => {
    expect(pluginChoiceProblems({ ...good, bus: "moves-shell" }, installed)[0]?.message).toBe(
      '[plugins] bus = "moves-shell" is a moves plugin, not a bus plugin (installed: bus-local)',
    );
  });

  it("names every wrong enable/disable entry, and throws CONFIG_INVALID with the first's path", () => {
    const plugins = { ...good, disable: ["moves-shel"], enable: ["nothing-like-it"] };
    expect(pluginChoiceProblems(plugins, installed).map((p) => p.path)).toEqual([
      "plugins.enable.0",
      "plugins.disable.0",
    ]);
    expect(() => checkPluginChoices(plugins, installed)).toThrow(
      '[plugins] enable lists "nothing-like-it", which names no installed plugin; [plugins] disable lists "moves-shel", which names no installed plugin; did you mean "moves-shell"?',
    );
    try {
      checkPluginChoices(plugins, installed);
    } catch (err) {
      expect(err).toMatchObject({ code: "CONFIG_INVALID", extra: { path: "plugins.enable.0" } });
    }
  });

  it("suggests only a name a typo away", () => {
    expect(closestName("moves-shel", ["moves-shell", "moves-web"])).toBe("moves-shell");
    expect(closestName("MOVES-SHELL", ["moves-shell"])).toBe("moves-shell");
    expect(closestName("provider-x", ["moves-shell", "moves-web"])).toBeUndefined();
  });
});
