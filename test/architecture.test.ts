/**
 * The boundaries DESIGN §2 draws, checked on the source: the kernel never imports a plugin (or the
 * CLI); a plugin imports only the SDK's published entries (sdk/index.ts and sdk/kits/, that is
 * `spar/sdk` and `spar/sdk/<kit>`) and its own files, never lib/, the kernel nor another plugin's;
 * the SDK imports nothing of the kernel, the plugins or the CLI; lib/ imports no plugin and no CLI
 * code. The kernel stays within its size budget, and the plugin manifest schema's kinds and ring
 * groups are the TypeScript ones.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import { PLUGIN_KINDS } from "../sdk/plugin-manifest.js";
import { RING_GROUPS, type RingGroup } from "../sdk/plugin-scope.js";
import type { RingServices } from "../sdk/services.js";

const ROOT = resolve(import.meta.dirname, "..");

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|js)$/.test(e.name) && !/\.test\.ts$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** Every relative import of a file, resolved to a path from the repository root. */
function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map(
    (m) => m[1] as string,
  );
  return specifiers.map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)));
}

describe("import boundaries", () => {
  it("keeps the kernel free of plugins and of the CLI", () => {
    const offending = sources("kernel").flatMap((file) =>
      imports(file)
        .filter((target) => target.startsWith("plugins/") || target.startsWith("cli/"))
        .map((target) => `${file} imports ${target}`),
    );
    expect(offending).toEqual([]);
  });

  it("lets a plugin import the SDK's published entries and its own files only", () => {
    // What a third party's plugin can import (spar/sdk, spar/sdk/<kit>), a bundled one imports: no
    // lib/ file, no kernel file, no other plugin's.
    const offending = sources("plugins").flatMap((file) => {
      const own = file.split("/").slice(0, 2).join("/");
      return imports(file)
        .filter(
          (target) =>
            !(
              target === "sdk/index.js" ||
              /^sdk\/kits\/[a-z-]+\.js$/.test(target) ||
              target.startsWith(`${own}/`)
            ),
        )
        .map((target) => `${file} imports ${target}`);
    });
    expect(offending).toEqual([]);
  });

  it("lets an example (third-party) plugin run on Node's modules and its own files, typed by spar/sdk", () => {
    // Installed in <data dir>/plugins/, it cannot resolve the daemon's files: `spar/sdk` is for its
    // types (JSDoc, .d.ts), and everything it does at run time goes through the `api` it is handed.
    const offending = sources("examples/plugins").flatMap((file) => {
      const own = file.split("/").slice(0, 3).join("/");
      const text = readFileSync(join(ROOT, file), "utf8");
      const specifiers = [
        ...text.matchAll(/^\s*(?:import|export)\s(?:[^;"']*?\sfrom\s*)?["']([^"']+)["']/gm),
      ].map((m) => m[1] as string);
      return specifiers
        .filter(
          (s) =>
            !(
              s.startsWith("node:") ||
              (s === "spar/sdk" && file.endsWith(".d.ts")) ||
              (s.startsWith(".") && relative(ROOT, resolve(ROOT, dirname(file), s)).startsWith(`${own}/`))
            ),
        )
        .map((s) => `${file} imports ${s}`);
    });
    expect(sources("examples/plugins")).toContain("examples/plugins/moves-notes/index.js");
    expect(offending).toEqual([]);
  });

  it("keeps the SDK free of the kernel, the plugins and the CLI", () => {
    const offending = sources("sdk").flatMap((file) =>
      imports(file)
        .filter((target) => /^(kernel|plugins|cli)\//.test(target))
        .map((target) => `${file} imports ${target}`),
    );
    expect(offending).toEqual([]);
  });

  it("keeps lib/ free of plugins and of the CLI", () => {
    const offending = sources("lib").flatMap((file) =>
      imports(file)
        .filter((target) => target.startsWith("plugins/") || target.startsWith("cli/"))
        .map((target) => `${file} imports ${target}`),
    );
    expect(offending).toEqual([]);
  });
});

describe("the kernel's size budget", () => {
  const files = sources("kernel").filter((f) => f.endsWith(".ts"));
  const lines = (file: string) => readFileSync(join(ROOT, file), "utf8").split("\n").length - 1;

  it("is at most 3,000 lines, tests excluded", () => {
    expect(files.reduce((sum, f) => sum + lines(f), 0)).toBeLessThanOrEqual(3000);
  });

  it("has no file over 300 lines", () => {
    expect(files.filter((f) => lines(f) > 300)).toEqual([]);
  });
});

describe("plugin.schema.json", () => {
  const schema = JSON.parse(readFileSync(join(ROOT, "plugin.schema.json"), "utf8")) as {
    properties: { kind: { enum: string[] }; id: { pattern: string }; uses: { items: { enum: string[] } } };
  };

  it("lists exactly the plugin kinds of the TypeScript types", () => {
    expect([...schema.properties.kind.enum].sort()).toEqual([...PLUGIN_KINDS].sort());
  });

  it("lets `uses` name exactly the groups of RingServices (its scalars need no declaration)", () => {
    expectTypeOf<RingGroup>().toEqualTypeOf<
      Exclude<keyof RingServices, "version" | "startedAt" | "clustered">
    >();
    expect(schema.properties.uses.items.enum).toEqual([...RING_GROUPS]);
  });

  it("is declared with the ring groups it uses by every bundled plugin and example", () => {
    // A manifest without `uses` gets no group; a bundled one says so, [] included, so that what each
    // reaches is read from its plugin.json. The plugins whose data is moving declare it once landed.
    const moving = /^(moves-schedule|channel-[a-z]+|moves-channels)$/;
    const manifests = [
      ...readdirSync(join(ROOT, "plugins")).map((id) => `plugins/${id}/plugin.json`),
      ...readdirSync(join(ROOT, "examples", "plugins")).map((id) => `examples/plugins/${id}/plugin.json`),
    ].filter((file) => existsSync(join(ROOT, file)) && !moving.test(file.split("/").at(-2) as string));
    const undeclared = manifests.filter(
      (file) =>
        !Array.isArray((JSON.parse(readFileSync(join(ROOT, file), "utf8")) as { uses?: unknown }).uses),
    );
    expect(undeclared).toEqual([]);
  });

  it("allows exactly those kinds as an id's prefix", () => {
    const prefixes = /^\^\(([^)]*)\)/.exec(schema.properties.id.pattern)?.[1]?.split("|") ?? [];
    expect(prefixes.sort()).toEqual([...PLUGIN_KINDS].sort());
  });
});
