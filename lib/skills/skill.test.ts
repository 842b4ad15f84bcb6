import { describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/errors.js";
import { parseSkill } from "./skill.js";

const good = `---
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
  it("reads the front matter and the body, with the line the body starts on", () => {
    const skill = parseSkill(good, "SKILL.md", "tidy-notes");
    expect(skill.meta).toEqual({
      name: "tidy-notes",
      description: "Tidy a folder of notes into one index. Use when notes are scattered.",
      version: "1.2.0",
      category: "productivity",
      tags: ["notes", "index"],
      moves: ["file_read", "file_list"],
      capabilities: ["file_read"],
    });
    expect(skill.body).toBe("\n# Tidy notes\nBody.\n");
    expect(skill.bodyLine).toBe(10);
  });

  it("refuses what is not a skill, naming the file and the key", () => {
    expect(refusal("# no front matter")).toMatchObject({
      code: "VALIDATION_FAILED",
      message: /skills\/x\/SKILL.md: must start with YAML front matter/,
    });
    expect(refusal("---\nname: [unclosed\n---\n")).toMatchObject({
      message: /front matter is not valid YAML/,
    });
    expect(refusal(good.replace("version: 1.2.0\n", ""))).toMatchObject({
      key: "version",
      message: /"version" is missing/,
    });
    expect(refusal(good.replace("tags: [notes, index]", "tags: notes"))).toMatchObject({ key: "tags" });
    expect(refusal(good.replace("moves: [file_read, file_list]", "moves: [File Read]"))).toMatchObject({
      key: "moves",
    });
    expect(refusal(good.replace("version: 1.2.0", "version: one"))).toMatchObject({ key: "version" });
    expect(refusal(good.replace("name: tidy-notes", "name: Tidy_Notes"))).toMatchObject({ key: "name" });
    expect(refusal(good.replace("category: productivity", "category: productivity\nrun: rm"))).toMatchObject({
      key: "run",
      message: /is not a skill key/,
    });
    expect(refusal(good, "other-folder")).toMatchObject({ key: "name", message: /folder is "other-folder"/ });
    expect(refusal(`${good}${"x".repeat(70_000)}`)).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
  });

  it("accepts Agent Skills' optional keys and Windows line ends", () => {
    const text = good.replace("version: 1.2.0", "version: 1.2.0\nlicense: MIT").replace(/\n/g, "\r\n");
    expect(parseSkill(text, "SKILL.md").meta.name).toBe("tidy-notes");
  });
});
