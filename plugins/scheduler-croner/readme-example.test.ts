/** The GORILLA.toml example in README.md loads as written, against the moves the bundled plugins declare. */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseGorilla } from "../../sdk/kits/gorillas.js";

const ROOT = resolve(import.meta.dirname, "..", "..");

const MOVES = new Map<string, string>(
  readdirSync(join(ROOT, "plugins")).flatMap((id) => {
    let text: string;
    try {
      text = readFileSync(join(ROOT, "plugins", id, "plugin.json"), "utf8");
    } catch {
      return [];
    }
    const manifest = JSON.parse(text) as { contributes?: { moves?: { name: string; capability: string }[] } };
    return (manifest.contributes?.moves ?? []).map((m) => [m.name, m.capability] as [string, string]);
  }),
);

describe("README.md's GORILLA.toml example", () => {
  it("loads, with the settings it says are the defaults", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const example = /```toml\n# ~\/\.spar\/gorillas\/digest\/GORILLA\.toml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const gorilla = parseGorilla(example as string, "README.md", {
      moves: MOVES,
      timezone: "UTC",
      folder: "digest",
    });
    expect(gorilla).toMatchObject({
      name: "digest",
      schedule: { text: "0 7 * * 1-5" },
      capabilities: ["memory", "network"],
      settings: { max_iterations: 15, timeout_s: 600, max_tokens: 200000, overlap: "skip", catch_up: "skip" },
      model: { provider: "openai", model: "gpt-4o-mini" },
    });
    // The defaults it names are the loader's: the same file without [settings] reads the same.
    const bare = (example as string).replace(/\[settings\][\s\S]*?\n\n/, "");
    expect(parseGorilla(bare, "README.md", { moves: MOVES, timezone: "UTC" }).settings).toEqual(
      gorilla.settings,
    );
  });
});
