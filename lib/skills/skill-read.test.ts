import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SparError } from "../../sdk/errors.js";
import { DEFAULT_LIMITS } from "./files.js";
import { hasScripts, READ_DEFAULT_CHARS, readSkillPage, skillFileList } from "./skill-read.js";

/** A 28,000-character reference: numbered lines, so a page boundary shows. */
const REFERENCE = Array.from({ length: 700 }, (_, i) => `line ${String(i).padStart(4, "0")} of the guide ...`)
  .join("\n")
  .padEnd(28_000, ".");
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48]);

describe("a skill's files", () => {
  let root: string;
  let dir: string;
  const put = (path: string, content: string | Buffer) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  };
  const refusal = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      if (err instanceof SparError)
        return { code: err.code, reason: err.extra?.reason, message: err.message };
      throw err;
    }
    throw new Error("not refused");
  };

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "spar-skill-read-"));
    dir = join(root, "skills", "format-report");
    put("SKILL.md", "---\nname: format-report\n---\n# Format\n");
    put("references/guide.md", REFERENCE);
    put("references/deep/more.md", "more\n");
    put("scripts/count.py", "print(1)\n");
    put("assets/logo.png", PNG);
    put("notes.txt", "");
    put(".hidden", "secret");
    writeFileSync(join(root, "outside.md"), "outside the skill\n");
    symlinkSync(join(root, "outside.md"), join(dir, "references", "link.md"));
    symlinkSync(join(root), join(dir, "linked-folder"));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("lists every regular file but SKILL.md, with its size and kind by top folder; no dot file, no link", () => {
    expect(skillFileList(dir)).toEqual([
      { path: "assets/logo.png", size: PNG.length, kind: "asset" },
      { path: "notes.txt", size: 0, kind: "other" },
      { path: "references/deep/more.md", size: 5, kind: "reference" },
      { path: "references/guide.md", size: 28_000, kind: "reference" },
      { path: "scripts/count.py", size: 9, kind: "script" },
    ]);
    expect(skillFileList(dir, 2)).toHaveLength(2);
    expect(hasScripts(dir)).toBe(true);
    expect(hasScripts(join(dir, "references"))).toBe(false);
  });

  it("reads a 28,000-character reference whole in two pages of the default size", () => {
    const first = readSkillPage(dir, "references/guide.md", 0, READ_DEFAULT_CHARS);
    expect(first).toMatchObject({
      path: "references/guide.md",
      media_type: "text/markdown",
      offset: 0,
      next_offset: 16_000,
      total_chars: 28_000,
    });
    if (!("text" in first)) throw new Error("a text file read as binary");
    const second = readSkillPage(dir, "./references/guide.md", first.next_offset ?? -1, READ_DEFAULT_CHARS);
    expect(second).toMatchObject({ offset: 16_000, next_offset: null, total_chars: 28_000 });
    expect("text" in first && "text" in second && first.text + second.text).toBe(REFERENCE);
  });

  it("reads SKILL.md itself, an empty file, and the end of a file as an empty last page", () => {
    expect(readSkillPage(dir, "SKILL.md", 0, 100)).toMatchObject({ text: expect.stringMatching(/^---\n/) });
    expect(readSkillPage(dir, "notes.txt", 0, 10)).toMatchObject({
      text: "",
      next_offset: null,
      total_chars: 0,
    });
    expect(readSkillPage(dir, "references/guide.md", 28_000, 10)).toMatchObject({
      text: "",
      next_offset: null,
    });
  });

  it("never splits a surrogate pair across pages", () => {
    put("references/emoji.md", "ab😀cd");
    const first = readSkillPage(dir, "references/emoji.md", 0, 3);
    expect(first).toMatchObject({ text: "ab", next_offset: 2 });
    expect(readSkillPage(dir, "references/emoji.md", 2, 3)).toMatchObject({ text: "😀c", next_offset: 5 });
  });

  it("gives a binary file's size and media type, not its bytes", () => {
    const page = readSkillPage(dir, "assets/logo.png", 0, 100);
    expect(page).toEqual({
      path: "assets/logo.png",
      media_type: "image/png",
      binary: true,
      size: PNG.length,
      note: expect.stringContaining("not shown"),
    });
    put("assets/latin1.txt", Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    expect(readSkillPage(dir, "assets/latin1.txt", 0, 100)).toMatchObject({
      binary: true,
      media_type: "application/octet-stream",
    });
  });

  it("refuses a path out of the folder, a link, a folder, a bad offset: VALIDATION_FAILED with the reason", () => {
    const cases: [string, string][] = [
      ["../../master.key", "path_traversal"],
      ["references/../../outside.md", "path_traversal"],
      ["/etc/passwd", "absolute_path"],
      ["references\\guide.md", "backslash"],
      ["C:guide.md", "drive_letter"],
      ["references/link.md", "symlink"],
      ["linked-folder/outside.md", "symlink"],
      ["references", "folder"],
      [".", "bad_name"],
      ["a\nb", "bad_name"],
    ];
    for (const [path, reason] of cases) {
      expect(
        refusal(() => readSkillPage(dir, path, 0, 100)),
        path,
      ).toMatchObject({
        code: "VALIDATION_FAILED",
        reason,
      });
    }
    expect(refusal(() => readSkillPage(dir, "references/guide.md", 28_001, 100))).toMatchObject({
      code: "VALIDATION_FAILED",
      reason: "bad_offset",
    });
    expect(refusal(() => readSkillPage(dir, "references/guide.md", -1, 100))).toMatchObject({
      reason: "bad_offset",
    });
    expect(refusal(() => readSkillPage(dir, "references/guide.md", 0, 32_001))).toMatchObject({
      reason: "bad_limit",
    });
  });

  it("says NOT_FOUND for a file that is not there, and PAYLOAD_TOO_LARGE past the install limit", () => {
    expect(refusal(() => readSkillPage(dir, "references/nope.md", 0, 100))).toMatchObject({
      code: "NOT_FOUND",
    });
    expect(refusal(() => readSkillPage(dir, "notes.txt/inside", 0, 100))).toMatchObject({
      code: "NOT_FOUND",
    });
    put("assets/huge.txt", Buffer.alloc(DEFAULT_LIMITS.maxFileBytes + 1, 0x61));
    expect(refusal(() => readSkillPage(dir, "assets/huge.txt", 0, 100))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
    });
  });
});
