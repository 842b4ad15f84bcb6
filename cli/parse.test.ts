import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { isSparError } from "../sdk/errors.js";
import { GLOBAL_OPTIONS } from "./command-spec.js";
import { parseCommandLine } from "./parse.js";
import { COMMANDS } from "./registry.js";

const ROOT = resolve(import.meta.dirname, "..");

function refusal(argv: string[]): string {
  try {
    parseCommandLine(argv);
  } catch (err) {
    if (isSparError(err, "VALIDATION_FAILED")) return err.message;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(argv)} to be refused`);
}

describe("the command registry", () => {
  it("gives each option one type everywhere, so the words split the same before the command is known", () => {
    const types = new Map<string, boolean>();
    const options = [
      ...GLOBAL_OPTIONS,
      ...COMMANDS.flatMap((c) => [
        ...(c.options ?? []),
        ...(c.actions ?? []).flatMap((a) => a.options ?? []),
      ]),
    ];
    for (const o of options) {
      const takesValue = o.value !== undefined;
      expect(types.get(o.flag) ?? takesValue, o.flag).toBe(takesValue);
      types.set(o.flag, takesValue);
    }
  });

  it("names every command and every noun's actions once", () => {
    const names = COMMANDS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const c of COMMANDS) {
      const actions = (c.actions ?? []).map((a) => a.name);
      expect(new Set(actions).size, c.name).toBe(actions.length);
    }
  });

  it("keeps --help and --version free of command modules: index.ts imports none, not even indirectly", () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(join(ROOT, file.replace(/\.js$/, ".ts")), "utf8");
      // Static imports only: a command's module comes in through import() when it runs.
      for (const m of text.matchAll(/^import\s[^;]*?from\s+"(\.{1,2}\/[^"]+)";/gms)) {
        visit(relative(ROOT, resolve(ROOT, dirname(file), m[1] as string)));
      }
    };
    visit("cli/index.ts");
    const loaded = [...seen].sort();
    expect(loaded.filter((f) => f.startsWith("cli/commands/") || f.startsWith("plugins/"))).toEqual([]);
    expect(loaded).toEqual([
      "cli/command-spec.js",
      "cli/help.js",
      "cli/index.ts",
      "cli/output.js",
      "cli/parse.js",
      "cli/registry.js",
      "cli/specs/access.js",
      "cli/specs/autonomy.js",
      "cli/specs/channels.js",
      "cli/specs/conversations.js",
      "cli/specs/lifecycle.js",
      "cli/specs/moves.js",
      "cli/specs/operations.js",
      "cli/specs/shared.js",
      "sdk/errors.js",
      "sdk/version.js",
    ]);
  });
});

describe("parseCommandLine", () => {
  it("keeps values as written: a lone -, an empty chat text, number-like values", () => {
    const add = parseCommandLine(["key", "add", "laptop", "-"]);
    expect(add).toMatchObject({ kind: "run", action: "add", args: ["laptop", "-"] });
    const spawn = parseCommandLine(["fighter", "spawn", "coder", "--name", "007"]);
    expect(spawn).toMatchObject({ args: ["coder"], options: { name: "007" } });
    const chat = parseCommandLine(["chat", "--", "-5 degrees?"]);
    expect(chat).toMatchObject({ args: ["-5 degrees?"], options: { fighter: "spar" } });
    expect(parseCommandLine(["chat", "hi", "--fighter=-odd"])).toMatchObject({
      options: { fighter: "-odd" },
    });
    expect(parseCommandLine(["sign", "GET", "/x", "--key-id", "cli"])).toMatchObject({
      options: { keyId: "cli" },
    });
  });

  it("answers help and version before judging the rest", () => {
    expect(parseCommandLine([])).toMatchObject({ kind: "help" });
    expect(parseCommandLine(["key", "bogus", "-h"])).toMatchObject({
      kind: "help",
      command: { name: "key" },
    });
    expect(parseCommandLine(["wrestle", "--version"])).toMatchObject({ kind: "version" });
  });

  it("refuses what does not fit, naming the choices", () => {
    expect(refusal(["key"])).toBe("key needs an action; actions: add, list, scope, remove");
    expect(refusal(["key", "add", "laptop", "AAAA", "--force"])).toBe(
      "unknown option --force for key add; options: --scope, --json, --help",
    );
    expect(refusal(["chat", "hi", "--fighter", "--json"])).toMatch(/^--fighter needs a value/);
    expect(refusal(["--frob"])).toBe("unknown option --frob for spar; options: --json, --help");
  });
});

describe("a repeatable option", () => {
  it("reaches the command with every value, in order, joined by commas; a plain one keeps its last", () => {
    const line = parseCommandLine([
      "move",
      "install",
      "github:acme/skills",
      "--skill",
      "a-one",
      "--skill",
      "b-two",
    ]);
    expect(line.kind === "run" && line.options.skill).toBe("a-one,b-two");
    const once = parseCommandLine(["move", "install", "github:acme/skills", "--skill=c-three"]);
    expect(once.kind === "run" && once.options.skill).toBe("c-three");
    const last = parseCommandLine(["move", "search", "web", "--limit", "2", "--limit", "3"]);
    expect(last.kind === "run" && last.options.limit).toBe("3");
  });
});
