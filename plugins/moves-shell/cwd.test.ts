import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandFolder } from "./cwd.js";

describe("commandFolder", () => {
  let base: string;
  let workspace: string;

  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "moves-shell-cwd-")));
    workspace = join(base, "workspace");
    mkdirSync(join(workspace, "src", "deep"), { recursive: true });
    mkdirSync(join(workspace, "..hidden"));
    mkdirSync(join(base, "outside"));
    writeFileSync(join(workspace, "file.txt"), "x");
    symlinkSync(join(base, "outside"), join(workspace, "escape"));
    symlinkSync(join(workspace, "src"), join(workspace, "inner-link"));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("is the workspace by default, and a folder inside it when asked", () => {
    expect(commandFolder(workspace)).toBe(workspace);
    expect(commandFolder(workspace, "src/deep")).toBe(join(workspace, "src", "deep"));
    expect(commandFolder(workspace, join(workspace, "src"))).toBe(join(workspace, "src"));
    expect(commandFolder(workspace, "src/../src")).toBe(join(workspace, "src"));
    expect(commandFolder(workspace, "..hidden")).toBe(join(workspace, "..hidden"));
    expect(commandFolder(workspace, "inner-link")).toBe(join(workspace, "src"));
    expect(commandFolder(workspace, ".")).toBe(workspace);
  });

  it("refuses a folder outside the workspace, by .. , by absolute path or through a symlink", () => {
    expect(() => commandFolder(workspace, "..")).toThrow(
      expect.objectContaining({
        code: "FORBIDDEN",
        message: 'cwd ".." is outside your workspace: give a folder inside it',
      }),
    );
    expect(() => commandFolder(workspace, "../outside")).toThrow(
      expect.objectContaining({ code: "FORBIDDEN" }),
    );
    expect(() => commandFolder(workspace, "/etc")).toThrow(expect.objectContaining({ code: "FORBIDDEN" }));
    expect(() => commandFolder(workspace, "escape")).toThrow(
      expect.objectContaining({
        code: "FORBIDDEN",
        message: 'cwd "escape" leads outside your workspace (through a symlink)',
      }),
    );
  });

  it("says NOT_FOUND for a folder that does not exist or is a file", () => {
    expect(() => commandFolder(workspace, "nope")).toThrow(
      expect.objectContaining({ code: "NOT_FOUND", message: 'cwd "nope": no such folder in your workspace' }),
    );
    expect(() => commandFolder(workspace, "file.txt")).toThrow(
      expect.objectContaining({ code: "NOT_FOUND", message: 'cwd "file.txt" is not a folder' }),
    );
  });
});
