import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { isSparError } from "../../sdk/errors.js";
import { parseSkill } from "./skill.js";

const good = `---
name: tidy-notes
description: Tidy a folder of notes into one index. Use when notes are scattered.
license: MIT
metadata:
  version: 1.2.0
  category: productivity
  tags: notes, index
  spar.moves: file_read file_list
  spar.capabilities: file_read
---

# Tidy notes
Body.
`;

/** The same skill in Spar's layout before the standard, as users installed it. */
const legacy = `---
name: tidy-notes
description: Tidy a folder of notes into one index. Use when notes are scattered.
version: 1.2.0
category: productivity
tags: [notes, index]
moves: [file_read, file_list]
capabilities: [file_read]
---

# Tidy notes
Body.
`;

const tidy = {
  name: "tidy-notes",
  description: "Tidy a folder of notes into one index. Use when notes are scattered.",
  version: "1.2.0",
  category: "productivity",
  tags: ["notes", "index"],
  moves: ["file_read", "file_list"],
  capabilities: ["file_read"],
};

/** The error a bad SKILL.md gets: its code and message. */
function refusal(text: string, folder?: string) {
  try {
    parseSkill(text, "skills/x/SKILL.md", folder);
  } catch (err) {
    if (isSparError(err)) return { code: err.code, message: err.message, key: err.extra.key };
    throw err;
  }
  throw new Error("parsed");
}

describe("parseSkill", () => {
  it("reads the standard's front matter, Spar's fields from metadata, and the body", () => {
    const skill = parseSkill(good, "SKILL.md", "tidy-notes");
    expect(skill.meta).toEqual(tidy);
    expect(skill.body).toBe("\n# Tidy notes\nBody.\n");
    expect(skill.bodyLine).toBe(12);
    expect(skill.legacy).toBe(false);
    expect(skill.warnings).toEqual([]);
  });

  it("reads a skill with only name and description, with defaults for Spar's fields", () => {
    const text = "---\nname: pdf\ndescription: >-\n  Fill PDF forms\n  and merge PDFs.\n---\nBody\n";
    expect(parseSkill(text, "SKILL.md", "pdf").meta).toEqual({
      name: "pdf",
      description: "Fill PDF forms and merge PDFs.",
      version: "0.0.0",
      category: "general",
      tags: [],
      moves: [],
      capabilities: [],
    });
  });

  it("maps allowed-tools to Spar's moves where names correspond, and warns about the rest", () => {
    const text = good.replace("license: MIT", "allowed-tools: Bash(git:*) Read WebFetch memory_recall Task");
    const skill = parseSkill(text, "SKILL.md");
    expect(skill.meta.moves).toEqual(["file_read", "file_list", "shell_exec", "web_fetch", "memory_recall"]);
    expect(skill.warnings).toEqual([
      { key: "allowed-tools", message: expect.stringMatching(/^Task: no Spar move/) },
    ]);
    const listed = good.replace("license: MIT", "allowed-tools:\n  - Grep\n  - Edit");
    expect(parseSkill(listed, "SKILL.md").meta.moves).toEqual(["file_read", "file_list", "file_edit"]);
  });

  it("warns about keys other agents add instead of refusing them", () => {
    const text = good.replace("license: MIT", "license: MIT\nmodel: some-model\nuser-invocable: true");
    const skill = parseSkill(text, "SKILL.md");
    expect(skill.meta.name).toBe("tidy-notes");
    expect(skill.warnings.map((w) => w.key)).toEqual(["model", "user-invocable"]);
  });

  it("still reads Spar's old layout, marked legacy with a hint", () => {
    const skill = parseSkill(legacy, "SKILL.md", "tidy-notes");
    expect(skill.meta).toEqual(tidy);
    expect(skill.legacy).toBe(true);
    expect(skill.warnings).toEqual([{ key: "version", message: expect.stringMatching(/spar move doctor/) }]);
    expect(refusal(legacy.replace("tags: [notes, index]", "tags: notes"))).toMatchObject({ key: "tags" });
  });

  it("refuses what is not a skill, naming the file and the key", () => {
    expect(refusal("# no front matter")).toMatchObject({
      code: "VALIDATION_FAILED",
      message: /skills\/x\/SKILL.md: must start with YAML front matter/,
    });
    expect(refusal("---\nname: [unclosed\n---\n")).toMatchObject({
      message: /front matter is not valid YAML/,
    });
    expect(refusal(good.replace(/^description: .*\n/m, ""))).toMatchObject({
      key: "description",
      message: /"description" is missing/,
    });
    expect(refusal(good.replace("spar.moves: file_read file_list", "spar.moves: File-Read"))).toMatchObject({
      key: "metadata.spar.moves",
    });
    expect(refusal(good.replace("version: 1.2.0", "version: 1.2 beta"))).toMatchObject({
      key: "metadata.version",
    });
    expect(refusal(good.replace("  category: productivity\n", "  category: [a]\n"))).toMatchObject({
      key: "metadata.category",
      message: /must be a string/,
    });
    expect(
      refusal(
        good.replace("license: MIT", "metadata2: x\nmetadata: 3\n").replace(/^metadata:\n( {2}.*\n)+/m, ""),
      ),
    ).toMatchObject({
      key: "metadata",
    });
    for (const bad of ["Tidy_Notes", "-tidy", "tidy-", "tidy--notes", "x".repeat(65)]) {
      expect(refusal(good.replace("name: tidy-notes", `name: ${bad}`))).toMatchObject({ key: "name" });
    }
    expect(refusal(good, "other-folder")).toMatchObject({ key: "name", message: /folder is "other-folder"/ });
    expect(refusal(good.replace(/^description: .*$/m, `description: ${"d".repeat(1025)}`))).toMatchObject({
      key: "description",
      message: /at most 1024 characters/,
    });
    expect(refusal(good.replace("license: MIT", `compatibility: ${"c".repeat(501)}`))).toMatchObject({
      key: "compatibility",
    });
    expect(refusal(good.replace("license: MIT", "allowed-tools: {a: 1}"))).toMatchObject({
      key: "allowed-tools",
    });
    expect(refusal(`${good}${"x".repeat(70_000)}`)).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
  });

  it("accepts a 1,024-character description, a 64-character name and Windows line ends", () => {
    const long = good
      .replace(/^description: .*$/m, `description: ${"d".repeat(1024)}`)
      .replace("name: tidy-notes", `name: ${"n".repeat(64)}`)
      .replace(/\n/g, "\r\n");
    expect(parseSkill(long, "SKILL.md").meta.description).toHaveLength(1024);
  });
});

/**
 * The Agent Skills specification's rules (agentskills.io/specification), applied to every bundled
 * skill directly from its YAML, not through parseSkill: so the bundled set is valid for any agent
 * that follows the standard, whatever Spar's own reader accepts.
 */
describe("the bundled skills follow the Agent Skills specification", () => {
  const root = join(import.meta.dirname, "..", "..", "skills");
  const names = readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);

  it("has the 103 bundled skills", () => {
    expect(names).toHaveLength(103);
  });

  it.each(names)("%s", (folder) => {
    const text = readFileSync(join(root, folder, "SKILL.md"), "utf8");
    const match = /^---\n([\s\S]*?)\n---\n/.exec(text);
    expect(match, "front matter between --- lines").not.toBeNull();
    const fm = parse(match?.[1] as string) as Record<string, unknown>;
    const standard = ["name", "description", "license", "compatibility", "metadata", "allowed-tools"];
    expect(Object.keys(fm).filter((k) => !standard.includes(k))).toEqual([]);
    const name = fm.name as string;
    expect(typeof name).toBe("string");
    expect(name.length).toBeGreaterThanOrEqual(1);
    expect(name.length).toBeLessThanOrEqual(64);
    expect(name).toMatch(/^[a-z0-9-]+$/);
    expect(name.startsWith("-") || name.endsWith("-") || name.includes("--")).toBe(false);
    expect(name).toBe(folder);
    const description = fm.description as string;
    expect(typeof description).toBe("string");
    expect(description.trim().length).toBeGreaterThanOrEqual(1);
    expect(description.length).toBeLessThanOrEqual(1024);
    if ("compatibility" in fm) expect((fm.compatibility as string).length).toBeLessThanOrEqual(500);
    const metadata = fm.metadata as Record<string, unknown>;
    expect(typeof metadata === "object" && metadata !== null && !Array.isArray(metadata)).toBe(true);
    for (const value of Object.values(metadata)) expect(typeof value).toBe("string");
    // And Spar reads it as written: its fields from metadata, nothing to warn about.
    const parsed = parseSkill(text, `skills/${folder}/SKILL.md`, folder);
    expect(parsed.legacy).toBe(false);
    expect(parsed.warnings).toEqual([]);
    expect(parsed.meta.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(parsed.meta.tags.length).toBeGreaterThan(0);
  });
});
