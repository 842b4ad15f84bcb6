import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { applicationDirs, findDesktopEntry, parseDesktopEntry } from "./desktop-entry.js";

describe("desktop entries", () => {
  const root = mkdtempSync(join(tmpdir(), "spar-entries-"));
  const mine = join(root, "home", "applications");
  const system = join(root, "usr", "applications");
  mkdirSync(mine, { recursive: true });
  mkdirSync(system, { recursive: true });
  const entry = (dir: string, file: string, body: string) =>
    writeFileSync(join(dir, file), `[Desktop Entry]\n${body}\n[Desktop Action new]\nName=Other\n`);
  entry(system, "org.example.Editor.desktop", "Type=Application\nName=Editor\nExec=editor %F");
  entry(system, "calc.desktop", "Type=Application\nName=Calculator\nExec=calc");
  entry(mine, "calc.desktop", "Type=Application\nName=My Calculator\nExec=mycalc");
  entry(system, "ghost.desktop", "Type=Application\nName=Ghost\nHidden=true\nExec=ghost");
  entry(system, "site.desktop", "Type=Link\nName=Site\nURL=https://example.com");
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const dirs = [mine, system];

  it("lists the personal folder first, then the system ones (XDG defaults)", () => {
    expect(applicationDirs({ HOME: "/home/u" })).toEqual([
      "/home/u/.local/share/applications",
      "/usr/local/share/applications",
      "/usr/share/applications",
    ]);
    expect(applicationDirs({ XDG_DATA_HOME: "/d", XDG_DATA_DIRS: "/a:/b" })).toEqual([
      "/d/applications",
      "/a/applications",
      "/b/applications",
    ]);
  });

  it("reads only the [Desktop Entry] group", () => {
    expect(parseDesktopEntry("# c\n[Desktop Entry]\nName = X\nExec=x\n[Other]\nName=Y\n")).toEqual({
      Name: "X",
      Exec: "x",
    });
  });

  it("finds an app by its file id (personal folder first), then by Name, ignoring case", () => {
    expect(findDesktopEntry("calc", dirs)).toEqual({
      file: join(mine, "calc.desktop"),
      id: "calc",
      title: "My Calculator",
    });
    expect(findDesktopEntry("editor", dirs)).toEqual({
      file: join(system, "org.example.Editor.desktop"),
      id: "org.example.Editor",
      title: "Editor",
    });
    expect(findDesktopEntry("CALCULATOR", dirs)?.file).toBe(join(system, "calc.desktop"));
  });

  it("does not launch hidden entries or links, and finds nothing in missing folders", () => {
    expect(findDesktopEntry("ghost", dirs)).toBeUndefined();
    expect(findDesktopEntry("site", dirs)).toBeUndefined();
    expect(findDesktopEntry("calc", [join(root, "nowhere")])).toBeUndefined();
  });
});
