import { execFileSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Capability } from "../../sdk/index.js";
import { type Access, Confinement, procPath } from "./confine.js";
import { commonFolders, expandHome, inside } from "./scopes.js";

/**
 * A data dir with its secrets, a fighter's workspace and another's, a folder outside with a canary,
 * and a spare folder a scope may grant: real files, real symlinks, real FIFOs.
 */
let base: string;
let home: string;
let workspace: string;
let outside: string;
let extra: string;
const CANARY = "canary-7f3a9c";

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "moves-files-"));
  home = join(base, "home");
  workspace = join(home, "workspaces", "alice");
  outside = join(base, "outside");
  extra = join(base, "extra");
  for (const dir of [workspace, join(home, "workspaces", "bob"), outside, extra])
    mkdirSync(dir, { recursive: true });
  writeFileSync(join(home, "master.key"), "MASTER-KEY-SECRET");
  writeFileSync(join(home, "config.toml"), 'api_listen = "127.0.0.1:1"\n');
  writeFileSync(join(home, "workspaces", "bob", "diary.txt"), "bob's");
  writeFileSync(join(outside, "canary.txt"), CANARY);
  writeFileSync(join(extra, "shared.txt"), "shared");
  writeFileSync(join(workspace, "notes.txt"), "hello");
});

afterEach(() => rmSync(base, { recursive: true, force: true }));

/** The operator allows every folder here ([moves.files] allowed_scopes = ["/"]): what is refused whatever it allows. */
const open = (access: Access = "read", grants: Capability[] = [{ type: `file_${access}` }]) =>
  Confinement.open({ workspace, grants, home, access, userHome: join(base, "user"), allowedScopes: ["/"] });

async function withConfinement<T>(
  work: (c: Confinement) => Promise<T>,
  access: Access = "read",
  grants?: Capability[],
): Promise<T> {
  const c = await open(access, grants);
  try {
    return await work(c);
  } finally {
    await c.close();
  }
}

/** Every file below `dir`, recursively, as relative paths. */
const tree = (dir: string) => readdirSync(dir, { recursive: true }).map(String).sort();

describe("placing a path (lexically)", () => {
  it("takes relative paths from the workspace and shows them relative", async () => {
    await withConfinement(async (c) => {
      expect(c.place("notes.txt")).toMatchObject({ parts: ["notes.txt"], display: "notes.txt" });
      expect(c.place("a/./b/../c.txt")).toMatchObject({ parts: ["a", "c.txt"], display: "a/c.txt" });
      expect(c.place(".")).toMatchObject({ parts: [], display: "." });
      expect(c.place(join(workspace, "x", "y"))).toMatchObject({ parts: ["x", "y"], display: "x/y" });
    });
  });

  it("refuses .. escapes, absolute paths elsewhere and the data dir, with FORBIDDEN", async () => {
    await withConfinement(async (c) => {
      for (const path of [
        "..",
        "../bob/diary.txt",
        "a/../../bob",
        "/etc/passwd",
        join(outside, "canary.txt"),
      ]) {
        expect(() => c.place(path), path).toThrow(expect.objectContaining({ code: "FORBIDDEN" }));
      }
      for (const path of ["../../master.key", "../../config.toml", join(home, "master.key"), "../.."]) {
        expect(() => c.place(path), path).toThrow(/inside Spar's data folder/);
      }
      expect(() => c.place("a\0b")).toThrow(expect.objectContaining({ code: "VALIDATION_FAILED" }));
    });
  });

  it("takes look-alike characters literally: U+2024, U+2025 and a fullwidth solidus are names, not .. or /", async () => {
    await withConfinement(async (c) => {
      expect(c.place("\u2024\u2024/\u2024\u2024/master.key").parts).toEqual([
        "\u2024\u2024",
        "\u2024\u2024",
        "master.key",
      ]);
      expect(c.place("\u2025/\u2025/master.key").parts).toEqual(["\u2025", "\u2025", "master.key"]);
      expect(c.place("..\uff0f..\uff0fmaster.key").parts).toEqual(["..\uff0f..\uff0fmaster.key"]);
      expect(c.place("..\u2215..\u2215master.key").parts).toEqual(["..\u2215..\u2215master.key"]);
      await expect(c.locate("\u2025/\u2025/master.key")).rejects.toMatchObject({ code: "NOT_FOUND" });
      await expect(c.locate("..\uff0f..\uff0fmaster.key")).rejects.toMatchObject({ code: "NOT_FOUND" });
    });
  });
});

describe("opening: the real path of the opened fd decides", () => {
  it("follows a symlink that stays inside, and refuses one that leads out, even to a missing name", async () => {
    mkdirSync(join(workspace, "docs"));
    writeFileSync(join(workspace, "docs", "a.txt"), "a");
    symlinkSync("docs", join(workspace, "inner"));
    symlinkSync(outside, join(workspace, "out"));
    symlinkSync(join(home, "master.key"), join(workspace, "key"));
    await withConfinement(async (c) => {
      const found = await c.locate("inner/a.txt");
      expect(found.stats.isFile()).toBe(true);
      await found.handle.close();
      await expect(c.locate("out/canary.txt")).rejects.toMatchObject({ code: "FORBIDDEN" });
      await expect(c.locate("out")).rejects.toMatchObject({ code: "FORBIDDEN" });
      // Whether a name exists outside is not told: missing or not, the answer is FORBIDDEN.
      await expect(c.locate("out/no-such-file")).rejects.toMatchObject({ code: "FORBIDDEN" });
      await expect(c.locate("key")).rejects.toThrow(/inside Spar's data folder/);
    });
  });

  it("creates folders only inside: a symlinked folder that leads out is refused before any mkdir", async () => {
    symlinkSync(outside, join(workspace, "out"));
    symlinkSync(join(outside, "not-yet"), join(workspace, "dangling"));
    await withConfinement(async (c) => {
      await expect(c.slot("out/deep/new.txt", true)).rejects.toMatchObject({ code: "FORBIDDEN" });
      await expect(c.slot("out/new.txt", true)).rejects.toMatchObject({ code: "FORBIDDEN" });
      await expect(c.slot("dangling/new.txt", true)).rejects.toMatchObject({ code: "NOT_FOUND" });
      const slot = await c.slot("made/here/new.txt", true);
      expect(slot).toMatchObject({ name: "new.txt", display: "made/here/new.txt" });
      await slot.dir.close();
    }, "write");
    expect(tree(outside)).toEqual(["canary.txt"]);
    expect(existsSync(join(workspace, "made", "here"))).toBe(true);
  });

  it("writes into the folder it verified even when the path is swapped for a symlink afterwards", async () => {
    mkdirSync(join(workspace, "sub"));
    await withConfinement(async (c) => {
      const slot = await c.slot("sub/x.txt", true);
      // An attacker (a shell move, say) moves the folder away and plants a symlink in its place.
      renameSync(join(workspace, "sub"), join(workspace, "sub-moved"));
      symlinkSync(outside, join(workspace, "sub"));
      writeFileSync(procPath(slot.dir.fd, slot.name), "pinned");
      await slot.dir.close();
    }, "write");
    expect(readFileSync(join(workspace, "sub-moved", "x.txt"), "utf8")).toBe("pinned");
    expect(tree(outside)).toEqual(["canary.txt"]);
  });

  it("opens a FIFO without hanging and refuses it; refuses sockets and devices", async () => {
    execFileSync("mkfifo", [join(workspace, "pipe")]);
    const { createServer } = await import("node:net");
    const server = createServer();
    await new Promise<void>((done) => server.listen(join(workspace, "sock"), done));
    try {
      await withConfinement(
        async (c) => {
          for (const [name, kind] of [
            ["pipe", /named pipe/],
            ["sock", /socket/],
            ["/dev/null", /device/],
          ] as const) {
            const found = await c.locate(name);
            expect(() => c.checkFile(found.stats, found.display)).toThrow(kind);
            await found.handle.close();
          }
        },
        "read",
        [{ type: "file_read", scope: "/dev" }],
      );
    } finally {
      server.close();
    }
  });

  it("refuses the content of a file with more than one hard link, wherever its other name is", async () => {
    mkdirSync(join(home, "keys"));
    writeFileSync(join(home, "keys", "cli.key"), "CLI-PRIVATE-KEY");
    linkSync(join(home, "master.key"), join(workspace, "innocent.txt"));
    // Below the top of the data dir: the attack the old top-level-only check missed.
    linkSync(join(home, "keys", "cli.key"), join(workspace, "deep.txt"));
    // Both names inside the workspace: refused too, since nothing shows where the other name is.
    linkSync(join(workspace, "notes.txt"), join(workspace, "twin.txt"));
    await withConfinement(async (c) => {
      for (const name of ["innocent.txt", "deep.txt", "twin.txt"]) {
        const found = await c.locate(name);
        expect(() => c.checkSingleLink(found.stats, found.display), name).toThrow(/has 2 hard links/);
        await found.handle.close();
      }
      const single = await c.locate("notes.txt");
      rmSync(join(workspace, "twin.txt"));
      expect(() => c.checkSingleLink(single.stats, single.display)).toThrow(/has 2 hard links/);
      const again = await c.locate("notes.txt");
      expect(() => c.checkSingleLink(again.stats, again.display)).not.toThrow();
      await Promise.all([single.handle.close(), again.handle.close()]);
    });
  });
});

describe("what no grant opens", () => {
  it("refuses /proc even under a scope of /, so the daemon's environment stays its own", async () => {
    await withConfinement(
      async (c) => {
        for (const path of ["/proc/self/environ", `/proc/${process.pid}/environ`, "/proc"]) {
          await expect(c.locate(path), path).rejects.toThrow(/under \/proc/);
        }
        // Through a symlink the real path still says /proc.
        symlinkSync("/proc/self/environ", join(outside, "env"));
        await expect(c.locate(join(outside, "env"))).rejects.toThrow(/under \/proc/);
        const found = await c.locate(join(outside, "canary.txt"));
        await found.handle.close();
      },
      "read",
      [{ type: "file_read", scope: "/" }],
    );
  });

  it("refuses to run when the workspace itself was replaced by a symlink", async () => {
    rmSync(workspace, { recursive: true });
    symlinkSync("/", workspace);
    await expect(open()).rejects.toThrow(/workspace is not a plain folder/);
    rmSync(workspace);
    symlinkSync(join(home, "workspaces", "bob"), workspace);
    await expect(open()).rejects.toMatchObject({ code: "FORBIDDEN" });
  });
});

describe("scope", () => {
  it("widens the roots to the scope's folders and only those", async () => {
    const grants = [{ type: "file_read", scope: [extra] }];
    await withConfinement(
      async (c) => {
        const found = await c.locate(join(extra, "shared.txt"));
        expect(found.display).toBe(join(extra, "shared.txt"));
        await found.handle.close();
        await expect(c.locate(join(outside, "canary.txt"))).rejects.toMatchObject({ code: "FORBIDDEN" });
        await expect(c.locate(`${extra}-sibling/x`)).rejects.toMatchObject({ code: "FORBIDDEN" });
        await expect(c.locate(join(extra, "..", "outside", "canary.txt"))).rejects.toMatchObject({
          code: "FORBIDDEN",
        });
        expect(() => c.place("../bob")).toThrow(/outside the folders this fighter may read/);
      },
      "read",
      grants,
    );
  });

  it("expands ~ to the user's home, in a scope and in a path", async () => {
    expect(expandHome("~", "/u")).toBe("/u");
    expect(expandHome("~/p/q", "/u")).toBe("/u/p/q");
    expect(expandHome("~bob/x", "/u")).toBe("~bob/x");
    mkdirSync(join(base, "user", "projects"), { recursive: true });
    writeFileSync(join(base, "user", "projects", "todo.md"), "todo");
    await withConfinement(
      async (c) => {
        const found = await c.locate("~/projects/todo.md");
        expect(found.display).toBe(join(base, "user", "projects", "todo.md"));
        await found.handle.close();
        await expect(c.locate("~/elsewhere")).rejects.toMatchObject({ code: "FORBIDDEN" });
      },
      "read",
      [{ type: "file_read", scope: "~/projects" }],
    );
  });

  it("keeps the data dir off limits even under a scope that covers it: its parent, ~ or /", async () => {
    for (const dir of ["keys", "plugins/moves-x"]) mkdirSync(join(home, dir), { recursive: true });
    const secrets = ["master.key", "config.toml", ".env", "spar.db", "spar.db.salt", "keys/cli.key"];
    for (const name of [...secrets, "plugins/moves-x/index.js"]) writeFileSync(join(home, name), "SECRET");
    symlinkSync(join(home, "keys"), join(outside, "keys-link"));
    const paths = [
      home,
      ...[...secrets, "keys", "plugins", "plugins/moves-x/index.js"].map((name) => join(home, name)),
      join(home, "workspaces", "..", "keys", "cli.key"),
    ];
    for (const scope of [base, "~", "/"]) {
      for (const access of ["read", "write"] as const) {
        const c = await Confinement.open({
          workspace,
          grants: [{ type: `file_${access}`, scope }],
          home,
          access,
          userHome: base,
          allowedScopes: ["/"],
        });
        try {
          for (const path of paths) {
            await expect(c.locate(path), `${scope} ${path}`).rejects.toThrow(/inside Spar's data folder/);
            if (path !== home) {
              await expect(c.slot(path, true), `${scope} ${path}`).rejects.toThrow(
                /inside Spar's data folder/,
              );
            }
          }
          await expect(c.locate(join(outside, "keys-link", "cli.key"))).rejects.toThrow(
            /inside Spar's data folder/,
          );
          const found = await c.locate(join(outside, "canary.txt"));
          await found.handle.close();
        } finally {
          await c.close();
        }
      }
    }
  });

  it("refuses a relative scope or a pattern rather than ignoring it, and says when a scope folder is missing", async () => {
    await expect(open("read", [{ type: "file_read", scope: "projects" }])).rejects.toThrow(
      /not an absolute folder/,
    );
    await expect(open("read", [{ type: "file_read", pattern: "*.md" }])).rejects.toThrow(/pattern/);
    await withConfinement(
      (c) => expect(c.locate(join(base, "nowhere", "x"))).rejects.toMatchObject({ code: "NOT_FOUND" }),
      "read",
      [{ type: "file_read", scope: join(base, "nowhere") }],
    );
  });
});

describe("[moves.files] allowed_scopes: only the operator widens a scope", () => {
  const openWith = (allowedScopes: string[], scope: string | string[], type = "file_read") =>
    Confinement.open({
      workspace,
      grants: [{ type, scope }],
      home,
      access: "read",
      userHome: join(base, "user"),
      allowedScopes,
    });

  it("refuses a scope outside every allowed folder at the call, naming the setting", async () => {
    for (const allowed of [[], [extra], [join(base, "user")]]) {
      for (const scope of ["/", outside, join(extra, "..", "outside"), `${extra}-sibling`]) {
        const refused = openWith(allowed, scope);
        await expect(refused, `${scope} with ${allowed}`).rejects.toMatchObject({
          code: "CAPABILITY_DENIED",
        });
        await expect(refused).rejects.toThrow(/\[moves\.files\] allowed_scopes/);
      }
    }
    // full_access carries a scope like the file grants do: no wider for it.
    await expect(openWith([], outside, "full_access")).rejects.toMatchObject({ code: "CAPABILITY_DENIED" });
    // One folder of a list outside is enough to refuse the grant.
    await expect(openWith([extra], [extra, outside])).rejects.toMatchObject({ code: "CAPABILITY_DENIED" });
  });

  it("honours a scope that is an allowed folder or lies inside one, with ~ expanded on both sides", async () => {
    mkdirSync(join(base, "user", "notes"), { recursive: true });
    writeFileSync(join(base, "user", "notes", "todo.md"), "todo");
    for (const [allowed, scope, path] of [
      [[extra], extra, join(extra, "shared.txt")],
      [[base], extra, join(extra, "shared.txt")],
      [["~"], "~/notes", "~/notes/todo.md"],
      [["~/notes"], join(base, "user", "notes"), join(base, "user", "notes", "todo.md")],
    ] as const) {
      const c = await openWith([...allowed], scope);
      try {
        const found = await c.locate(path);
        await found.handle.close();
      } finally {
        await c.close();
      }
    }
  });
});

describe("allowed: a real path from /proc/self/fd", () => {
  it("refuses pipes, sockets, memfds and deleted files, which are in no folder", async () => {
    await withConfinement(
      async (c) => {
        expect(c.allowed(join(workspace, "notes.txt"))).toBe(true);
        expect(c.allowed("/etc/hostname")).toBe(true);
        for (const real of [
          "pipe:[4026]",
          "socket:[991]",
          "anon_inode:[eventfd]",
          "/memfd:v8 (deleted)",
          join(workspace, "gone.txt (deleted)"),
          "/proc/self/environ",
          join(home, "master.key"),
        ]) {
          expect({ real, allowed: c.allowed(real) }).toEqual({ real, allowed: false });
        }
      },
      "read",
      [{ type: "file_read", scope: "/" }],
    );
  });
});

describe("inside", () => {
  it("compares whole names, not prefixes", () => {
    expect(inside("/a/b", "/a")).toBe(true);
    expect(inside("/a", "/a")).toBe(true);
    expect(inside("/ab", "/a")).toBe(false);
    expect(inside("/x", "/")).toBe(true);
  });
});

describe("a turn another fighter started", () => {
  const confined = (grants: Capability[], callerGrants: Capability[][]) =>
    Confinement.open({
      workspace,
      grants,
      callerGrants,
      home,
      access: "read",
      userHome: join(base, "user"),
      allowedScopes: ["/"],
    });

  it("keeps a scope folder only as far as every caller's grants reach it", async () => {
    const c = await confined(
      [{ type: "file_read", scope: [extra, outside] }],
      [[{ type: "file_read", scope: extra }], [{ type: "full_access", scope: base }]],
    );
    try {
      expect(c.place(join(extra, "shared.txt")).display).toBe(join(extra, "shared.txt"));
      // The callee may read `outside`; the first caller may not, so neither may this turn.
      expect(() => c.place(join(outside, "canary.txt"))).toThrow(
        expect.objectContaining({ code: "FORBIDDEN" }),
      );
      // The workspace is the turn's containment, not a grant: it stays.
      expect(c.place("notes.txt").display).toBe("notes.txt");
    } finally {
      await c.close();
    }
  });

  it("gives no scope folder when a caller's grant has none (its workspace only)", async () => {
    const c = await confined([{ type: "full_access", scope: outside }], [[{ type: "file_read" }]]);
    try {
      expect(() => c.place(join(outside, "canary.txt"))).toThrow(
        expect.objectContaining({ code: "FORBIDDEN" }),
      );
    } finally {
      await c.close();
    }
  });

  it("intersects folders by nesting: the inner one of two that nest, nothing of two that do not", () => {
    expect(
      commonFolders([
        ["/srv", "/home/a"],
        ["/srv/site", "/home"],
      ]),
    ).toEqual(["/srv/site", "/home/a"]);
    expect(commonFolders([["/srv"], ["/srv2"]])).toEqual([]);
    expect(commonFolders([["/srv", "/srv"]])).toEqual(["/srv"]);
    expect(commonFolders([])).toEqual([]);
  });
});
