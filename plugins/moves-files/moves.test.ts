import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Capability } from "../../sdk/index.js";
import { type Access, Confinement } from "./confine.js";
import { scopeRefusal } from "./index.js";
import { listFolder } from "./list.js";
import { page, readText, wholeCharacters } from "./read.js";
import { editFile, occurrences, readAtMost, writeFile } from "./write.js";

let base: string;
let home: string;
let workspace: string;
let outside: string;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "moves-files-"));
  home = join(base, "home");
  workspace = join(home, "workspaces", "alice");
  outside = join(base, "outside");
  mkdirSync(workspace, { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(home, "master.key"), "MASTER-KEY-SECRET");
  writeFileSync(join(outside, "canary.txt"), "canary");
});

afterEach(() => rmSync(base, { recursive: true, force: true }));

async function confined<T>(access: Access, work: (c: Confinement) => Promise<T>, grants?: Capability[]) {
  const c = await Confinement.open({
    workspace,
    grants: grants ?? [{ type: `file_${access}` }],
    home,
    access,
    // The operator's [moves.files] allowed_scopes: the scratch folder's root, which holds them all.
    allowedScopes: [base],
  });
  try {
    return await work(c);
  } finally {
    await c.close();
  }
}

const limits = { maxBytes: 262_144, resultChars: 20_000 };
const read = (path: string, extra: { offset?: number; length?: number } = {}, l = limits) =>
  confined("read", (c) => readText(c, { path, ...extra }, l));
const write = (path: string, content: string, mode?: "create" | "overwrite" | "append", max = 1_048_576) =>
  confined("write", (c) => writeFile(c, { path, content, ...(mode ? { mode } : {}) }, max));
const edit = (path: string, old: string, replacement: string, count?: number, max = 1_048_576) =>
  confined("write", (c) => editFile(c, { path, old, new: replacement, ...(count ? { count } : {}) }, max));
const list = (
  path?: string,
  recursive = false,
  limit?: number,
  l = { maxEntries: 500, resultChars: 20_000 },
) =>
  confined("read", (c) =>
    listFolder(
      c,
      { ...(path ? { path } : {}), recursive, ...(limit ? { limit } : {}) },
      l,
      new AbortController().signal,
    ),
  );
const onDisk = (path: string) => readFileSync(join(workspace, path), "utf8");
const leftovers = () =>
  readdirSync(workspace, { recursive: true })
    .map(String)
    .filter((n) => n.includes(".spar-"));

describe("file_read", () => {
  it("reads a whole small file with a header line", async () => {
    writeFileSync(join(workspace, "a.txt"), "héllo\nworld\n");
    expect(await read("a.txt")).toBe("[13 bytes, the whole file]\nhéllo\nworld\n");
    writeFileSync(join(workspace, "empty"), "");
    expect(await read("empty")).toBe("[0 bytes: the file is empty]");
  });

  it("pages through a big file by bytes, never splitting a character", async () => {
    const text = "aé€😀".repeat(3000); // 1 + 2 + 3 + 4 bytes per group
    writeFileSync(join(workspace, "big.txt"), text);
    const size = Buffer.byteLength(text);
    let offset = 0;
    let joined = "";
    for (let pages = 0; offset < size; pages++) {
      expect(pages).toBeLessThan(100);
      const result = await read("big.txt", { offset, length: 1001 });
      const [header, ...rest] = result.split("\n");
      joined += rest.join("\n");
      const next = /offset (\d+)\]$/.exec(header ?? "");
      if (!next) {
        expect(header).toMatch(/the end of the file/);
        break;
      }
      expect(Number(next[1]) - offset).toBeLessThanOrEqual(1001);
      offset = Number(next[1]);
    }
    expect(joined).toBe(text);
  });

  it("keeps a page within one tool result and within max_read_bytes", async () => {
    writeFileSync(join(workspace, "big.txt"), "x".repeat(50_000));
    const small = await read("big.txt", {}, { maxBytes: 262_144, resultChars: 5_000 });
    expect(small.length).toBeLessThanOrEqual(5_000);
    expect(small).toMatch(/^\[bytes 0 to 4880 of 50000; to read on, offset 4880\]/);
    const capped = await read("big.txt", { length: 100_000 }, { maxBytes: 2_000, resultChars: 20_000 });
    expect(capped.split("\n")[0]).toBe("[bytes 0 to 2000 of 50000; to read on, offset 2000]");
  });

  it("starts past a cut character and says where it really started", () => {
    const bytes = Buffer.from("€uro", "utf8"); // € is e2 82 ac
    expect(page(bytes.subarray(1), 1, bytes.length)).toBe("[bytes 3 to 6 of 6: the end of the file]\nuro");
    expect(wholeCharacters(Buffer.from("ab€", "utf8").subarray(0, 4))).toBe(2);
  });

  it("answers a binary file with a short notice, and an offset past the end with an error", async () => {
    writeFileSync(join(workspace, "img.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 0xff]));
    expect(await read("img.png")).toBe(
      "[binary: 8 bytes that are not UTF-8 text; file_read shows text files only]",
    );
    writeFileSync(join(workspace, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x21]));
    expect(await read("latin1.txt")).toMatch(/^\[binary/);
    writeFileSync(join(workspace, "a.txt"), "abc");
    await expect(read("a.txt", { offset: 3 })).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
  });

  it("refuses folders, FIFOs (without hanging), missing files and escapes with their codes", async () => {
    mkdirSync(join(workspace, "dir"));
    execFileSync("mkfifo", [join(workspace, "pipe")]);
    symlinkSync(join(outside, "canary.txt"), join(workspace, "link.txt"));
    await expect(read("dir")).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    await expect(read("pipe")).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(read("missing.txt")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(read("link.txt")).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(read("../../master.key")).rejects.toMatchObject({ code: "FORBIDDEN" });
  });
});

describe("file_write", () => {
  it("creates a file and its folders, and refuses to replace it in create mode", async () => {
    expect(await write("a/b/c.txt", "one")).toEqual({
      path: "a/b/c.txt",
      mode: "create",
      bytes: 3,
      created: true,
    });
    expect(onDisk("a/b/c.txt")).toBe("one");
    await expect(write("a/b/c.txt", "two")).rejects.toThrow(/already exists; pass mode "overwrite"/);
    expect(onDisk("a/b/c.txt")).toBe("one");
  });

  it("overwrites atomically (temp file + rename), keeping the permission bits and leaving no temp file", async () => {
    writeFileSync(join(workspace, "run.sh"), "echo old\n");
    chmodSync(join(workspace, "run.sh"), 0o750);
    const before = statSync(join(workspace, "run.sh")).ino;
    expect(await write("run.sh", "echo new\n", "overwrite")).toMatchObject({ created: false, bytes: 9 });
    expect(onDisk("run.sh")).toBe("echo new\n");
    expect(statSync(join(workspace, "run.sh")).mode & 0o777).toBe(0o750);
    expect(statSync(join(workspace, "run.sh")).ino).not.toBe(before);
    expect(await write("fresh.txt", "new", "overwrite")).toMatchObject({ created: true });
    expect(leftovers()).toEqual([]);
  });

  it("appends, creating the file when it is missing", async () => {
    await write("log.txt", "one\n", "append");
    await write("log.txt", "two\n", "append");
    expect(onDisk("log.txt")).toBe("one\ntwo\n");
  });

  it("never writes through a hard link or a symlink to a file outside", async () => {
    linkSync(join(outside, "canary.txt"), join(workspace, "hard.txt"));
    symlinkSync(join(outside, "canary.txt"), join(workspace, "soft.txt"));
    symlinkSync(join(outside, "planted.txt"), join(workspace, "dangling.txt"));
    await expect(write("hard.txt", "evil", "append")).rejects.toThrow(/2 hard links/);
    for (const mode of ["create", "overwrite", "append"] as const) {
      const code = mode === "create" ? "CONFLICT" : "FORBIDDEN";
      await expect(write("soft.txt", "evil", mode)).rejects.toMatchObject({ code });
      await expect(write("dangling.txt", "evil", mode)).rejects.toMatchObject({ code });
    }
    // overwrite replaces the name, so the other link keeps its content.
    await write("hard.txt", "mine", "overwrite");
    expect(onDisk("hard.txt")).toBe("mine");
    expect(readFileSync(join(outside, "canary.txt"), "utf8")).toBe("canary");
    expect(readdirSync(outside)).toEqual(["canary.txt"]);
  });

  it("reads nothing through a hard link, however deep in the data dir its other name is", async () => {
    mkdirSync(join(home, "keys"));
    writeFileSync(join(home, "keys", "cli.key"), "CLI-PRIVATE-KEY", { mode: 0o600 });
    linkSync(join(home, "keys", "cli.key"), join(workspace, "notes.txt"));
    await expect(read("notes.txt")).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(read("notes.txt")).rejects.toThrow(/has 2 hard links/);
    await expect(edit("notes.txt", "CLI", "X")).rejects.toThrow(/has 2 hard links/);
    await expect(write("notes.txt", "more", "append")).rejects.toThrow(/has 2 hard links/);
    // The way out for a file of its own: overwrite replaces the name, and the key is untouched.
    await write("notes.txt", "mine", "overwrite");
    expect(await read("notes.txt")).toContain("mine");
    expect(readFileSync(join(home, "keys", "cli.key"), "utf8")).toBe("CLI-PRIVATE-KEY");
  });

  it("lists the data dir's parent without entering the data dir", async () => {
    mkdirSync(join(home, "keys"));
    writeFileSync(join(home, "keys", "cli.key"), "k");
    writeFileSync(join(home, ".env"), "K=v");
    const listed = await confined(
      "read",
      (c) =>
        listFolder(
          c,
          { path: base, recursive: true },
          { maxEntries: 500, resultChars: 20_000 },
          new AbortController().signal,
        ),
      [{ type: "file_read", scope: base }],
    );
    const paths = listed.entries.map((e) => e.path);
    expect(paths).toContain("home");
    expect(paths).toContain("outside/canary.txt");
    expect(paths.filter((p) => p.startsWith("home/"))).toEqual([]);
  });

  it("refuses content past max_write_bytes, counted in UTF-8 bytes", async () => {
    await expect(write("big.txt", "€".repeat(400), "create", 1024)).rejects.toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
    });
    expect(existsSync(join(workspace, "big.txt"))).toBe(false);
  });

  it("refuses to write onto a folder or into the data dir", async () => {
    mkdirSync(join(workspace, "dir"));
    await expect(write("dir", "x", "overwrite")).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    await expect(write("../../config.toml", "x", "overwrite")).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(write("../bob/x.txt", "x")).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(existsSync(join(home, "config.toml"))).toBe(false);
    expect(readFileSync(join(home, "master.key"), "utf8")).toBe("MASTER-KEY-SECRET");
    expect(existsSync(join(home, "workspaces", "bob"))).toBe(false);
  });
});

describe("file_edit", () => {
  beforeEach(() => writeFileSync(join(workspace, "code.ts"), "let a = 1;\nlet b = 1;\nlet c = 2;\n"));

  it("replaces text that occurs exactly once", async () => {
    expect(await edit("code.ts", "let c = 2;", "let c = 3;")).toEqual({
      path: "code.ts",
      replaced: 1,
      bytes: 33,
    });
    expect(onDisk("code.ts")).toBe("let a = 1;\nlet b = 1;\nlet c = 3;\n");
    expect(leftovers()).toEqual([]);
  });

  it("says how many it found when that is not the count, and changes nothing", async () => {
    await expect(edit("code.ts", "= 1;", "= 9;")).rejects.toThrow(
      /occurs 2 times .* not 1; nothing was changed/,
    );
    await expect(edit("code.ts", "= 1;", "= 9;", 3)).rejects.toThrow(/occurs 2 times .* not 3/);
    await expect(edit("code.ts", "let z", "x")).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(onDisk("code.ts")).toBe("let a = 1;\nlet b = 1;\nlet c = 2;\n");
    await edit("code.ts", "= 1;", "= 9;", 2);
    expect(onDisk("code.ts")).toBe("let a = 9;\nlet b = 9;\nlet c = 2;\n");
  });

  it("counts without overlaps, exactly as it replaces", () => {
    expect(occurrences("aaaa", "aa")).toBe(2);
    expect(occurrences("abcabc", "abc")).toBe(2);
    expect(occurrences("abc", "d")).toBe(0);
  });

  it("refuses missing and binary files, files past the limit, and symlinks", async () => {
    writeFileSync(join(workspace, "bin"), Buffer.from([1, 0, 2]));
    writeFileSync(join(workspace, "large.txt"), "x".repeat(2000));
    symlinkSync("code.ts", join(workspace, "alias.ts"));
    await expect(edit("nope.ts", "a", "b")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(edit("bin", "a", "b")).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    await expect(edit("large.txt", "x", "y", undefined, 1024)).rejects.toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
    });
    await expect(edit("alias.ts", "a", "b")).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(edit("missing-dir/x.ts", "a", "b")).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(existsSync(join(workspace, "missing-dir"))).toBe(false);
  });

  it("reads at most one byte past the limit, whatever size the file had when it was checked", async () => {
    writeFileSync(join(workspace, "grown.txt"), "g".repeat(70_000));
    const { open } = await import("node:fs/promises");
    const file = await open(join(workspace, "grown.txt"), "r");
    try {
      expect(await readAtMost(file, 65_536)).toBeUndefined();
      expect(await readAtMost(file, 69_999)).toBeUndefined();
      expect((await readAtMost(file, 70_000))?.toString()).toBe("g".repeat(70_000));
      expect((await readAtMost(file, 1_000_000))?.length).toBe(70_000);
    } finally {
      await file.close();
    }
  });
});

describe("file_list", () => {
  beforeEach(() => {
    mkdirSync(join(workspace, "src", "lib"), { recursive: true });
    writeFileSync(join(workspace, "README.md"), "# hi\n");
    writeFileSync(join(workspace, "src", "main.ts"), "main();\n");
    writeFileSync(join(workspace, "src", "lib", "util.ts"), "export {};\n");
    symlinkSync(outside, join(workspace, "out"));
  });

  it("lists a folder's entries with type and size; symlinks are shown, never followed", async () => {
    expect(await list()).toEqual({
      path: ".",
      entries: [
        { path: "README.md", type: "file", size: 5 },
        { path: "out", type: "symlink" },
        { path: "src", type: "folder" },
      ],
    });
    const all = await list(".", true);
    expect(all.entries.map((e) => e.path)).toEqual([
      "README.md",
      "out",
      "src",
      "src/lib",
      "src/lib/util.ts",
      "src/main.ts",
    ]);
    expect((await list("src")).entries.map((e) => e.path)).toEqual(["lib", "main.ts"]);
  });

  it("stops at the limit and says so", async () => {
    const limited = await list(".", true, 2);
    expect(limited.entries).toHaveLength(2);
    expect(limited.truncated).toMatch(/stopped after 2 entries/);
    const capped = await list(".", true, undefined, { maxEntries: 3, resultChars: 20_000 });
    expect(capped.entries).toHaveLength(3);
    const tight = await list(".", true, undefined, { maxEntries: 500, resultChars: 460 });
    expect(tight.truncated).toBeDefined();
    expect(JSON.stringify(tight).length).toBeLessThan(460);
  });

  it("refuses a file, a symlink that leads out, and the data dir", async () => {
    await expect(list("README.md")).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    await expect(list("out")).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(list("../..")).rejects.toMatchObject({ code: "FORBIDDEN" });
  });

  it("does not descend into the data dir under a scope that covers it", async () => {
    const result = await confined(
      "read",
      (c) =>
        listFolder(
          c,
          { path: base, recursive: true },
          { maxEntries: 500, resultChars: 20_000 },
          new AbortController().signal,
        ),
      [{ type: "file_read", scope: base }],
    );
    const paths = result.entries.map((e) => e.path);
    expect(paths).toContain("home");
    expect(paths).toContain("outside/canary.txt");
    expect(paths.some((p) => p.startsWith("home/"))).toBe(false);
  });
});

describe("settings", () => {
  it("refuses a spawn whose file grant names a scope the operator does not allow, pointing at it", () => {
    const grants: Capability[] = [
      { type: "memory" },
      { type: "channel_notify", scope: "telegram" },
      { type: "file_read", scope: ["/srv/notes"] },
      { type: "file_write", scope: "/" },
    ];
    expect(scopeRefusal(grants, [])).toMatchObject({
      code: "CAPABILITY_DENIED",
      path: "/capabilities/2/scope",
      message: expect.stringContaining("[moves.files] allowed_scopes = []"),
    });
    expect(scopeRefusal(grants, ["/srv"])).toMatchObject({
      code: "CAPABILITY_DENIED",
      path: "/capabilities/3/scope",
    });
    expect(scopeRefusal(grants, ["/"])).toBeUndefined();
    expect(scopeRefusal([{ type: "full_access", scope: "~" }], ["/home"], "/home/me")).toBeUndefined();
    expect(scopeRefusal([{ type: "full_access", scope: "~" }], [], "/home/me")?.code).toBe(
      "CAPABILITY_DENIED",
    );
    expect(scopeRefusal([{ type: "file_read", scope: "notes" }], ["/"])?.code).toBe("VALIDATION_FAILED");
    expect(scopeRefusal([{ type: "file_read" }, { type: "full_access" }], [])).toBeUndefined();
  });
});
