import { execFileSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  allowUnasked,
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/**
 * The file moves through the real daemon, driven by an evil scripted model. The fake OpenAI server
 * asks for tool calls; the daemon runs them under the fighter's grants and sends the results back to
 * the fake, which records them. Every escape must fail, and no byte from outside the allowed folders
 * may reach the model, nor any byte be written outside.
 */

type Call = { name: string; arguments: Record<string, unknown> };
type ToolError = { error: { code: string; message: string } };

const CANARY = `canary-${process.pid}-e2e-outside`;
const BOB_SECRET = `bob-diary-${process.pid}`;
const OUTSIDE_REPORT = `outside-report-${process.pid}`;
const DOTENV_SECRET = `dotenv-secret-${process.pid}`;

/**
 * The config: `allowed` is `[moves.files] allowed_scopes` (TOML). One long bout with many big
 * results: a window large enough that compaction (a summary call to the scripted model, racing the
 * next turn) never starts; these tests are about the file moves.
 */
const filesConfig = (allowed: string) =>
  "context_window = 1000000\n\n[creed]\nreflect = false\n\n" +
  `[moves.files]\nmax_read_bytes = 4096\nallowed_scopes = [${allowed}]\n` +
  // This suite tests the file moves, not approvals: a change to an existing file outside the
  // workspace (and a spawn) runs unasked, as a rule in config.toml lets it.
  allowUnasked(["file_write", "file_edit", "fighter_spawn"]);

/** Every entry below `dir` with its content (symlinks with their target, other kinds by type). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }).map(String).sort()) {
    const path = join(dir, name);
    const stats = lstatSync(path, { throwIfNoEntry: false });
    out[name] = !stats
      ? "gone"
      : stats.isFile()
        ? readFileSync(path, "latin1")
        : stats.isDirectory()
          ? "dir"
          : stats.isSymbolicLink()
            ? "symlink"
            : "other";
  }
  return out;
}

describe("moves-files: an evil model against the real daemon", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let scratch: string;
  let outside: string;
  let shared: string;
  let workspace: string;
  let masterKey: string;
  let config: string;
  let cliKey: string;
  let port: number;
  /** A device node planted in filer's workspace, when this system lets the test make one (root). */
  let plantedDevice = false;

  /**
   * Everything a file move must never change: the sibling folders outside (the canary's, the scope's
   * and the target a later symlink points to), another fighter's workspace, the data dir's top level.
   */
  const outsideState = () => ({
    scratch: snapshot(scratch),
    bob: snapshot(join(home, "workspaces", "bob")),
    home: topLevel(home),
  });
  /** Every tool result the scripted model ever received, as one text. */
  const seenByModel = () =>
    fake
      .calls()
      .flatMap((c) => c.tool_results)
      .join("\n");

  /** Sends one message whose scripted answer makes these calls; returns their results as the fake got them. */
  async function moves(fighter: string, calls: Call[]): Promise<string[]> {
    fake.enqueue({ tool_calls: calls });
    const reply = await daemon.request("POST", `/api/v1/fighters/${fighter}/message`, { message: "go" });
    expect(reply.status).toBe(200);
    const results = fake.calls().at(-1)?.tool_results ?? [];
    expect(results.length).toBeGreaterThanOrEqual(calls.length);
    return results.slice(-calls.length);
  }
  /** The error code of a tool result, or what the result was when it was no error. */
  const codeOf = (result: string): string => {
    try {
      return (JSON.parse(result) as ToolError).error?.code ?? `no error: ${result.slice(0, 200)}`;
    } catch {
      return `no error: ${result.slice(0, 200)}`;
    }
  };
  const spawn = async (name: string, capabilities: Record<string, unknown>[]) => {
    const res = await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities },
    });
    expect(res.status).toBe(201);
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    scratch = mkdtempSync(join(tmpdir(), "spar-files-e2e-"));
    outside = join(scratch, "outside");
    shared = join(scratch, "shared");
    mkdirSync(outside);
    mkdirSync(shared);
    writeFileSync(join(outside, "canary.txt"), CANARY);
    mkdirSync(join(outside, "target"));
    writeFileSync(join(outside, "target", "report.txt"), OUTSIDE_REPORT);
    writeFileSync(join(shared, "brief.md"), "shared brief\n");
    port = await freePort();
    // The operator allows every folder as a scope (the last test narrows it): what is refused here
    // is refused whatever the config allows.
    writeConfig(home, port, fake.url, filesConfig('"/"'));
    writeFileSync(join(home, ".env"), `E2E_DOTENV_SECRET=${DOTENV_SECRET}\n`, { mode: 0o600 });
    daemon = await startDaemon(home, port);
    cliKey = readFileSync(join(home, "keys", "cli.key"), "utf8");
    masterKey = readFileSync(join(home, "master.key"), "utf8").trim();
    config = readFileSync(join(home, "config.toml"), "utf8");
    expect(masterKey.length).toBeGreaterThan(16);

    await spawn("filer", [{ type: "file_read" }, { type: "file_write" }]);
    await spawn("reader", [{ type: "file_read" }]);
    await spawn("bare", [{ type: "memory" }]);
    await spawn("scoped", [
      { type: "file_read", scope: [shared] },
      { type: "file_write", scope: shared },
    ]);
    // What earlier shell calls could have planted in filer's workspace, and another fighter's secret.
    workspace = join(home, "workspaces", "filer");
    mkdirSync(workspace, { recursive: true, mode: 0o700 });
    symlinkSync(outside, join(workspace, "link"));
    symlinkSync(join(home, "master.key"), join(workspace, "keylink"));
    symlinkSync(join(outside, "planted.txt"), join(workspace, "dangling"));
    linkSync(join(home, "master.key"), join(workspace, "hardkey"));
    // Deeper in the data dir: the link the old top-level-only check let file_read through.
    linkSync(join(home, "keys", "cli.key"), join(workspace, "hardcli"));
    execFileSync("mkfifo", [join(workspace, "fifo")]);
    symlinkSync("/dev/zero", join(workspace, "zerolink"));
    try {
      // /dev/zero's own numbers (char 1,5): only root may make one, so elsewhere this part is left out.
      execFileSync("mknod", [join(workspace, "zero"), "c", "1", "5"], { stdio: "ignore" });
      plantedDevice = true;
    } catch {
      plantedDevice = false;
    }
    mkdirSync(join(home, "workspaces", "bob"), { recursive: true });
    writeFileSync(join(home, "workspaces", "bob", "diary.txt"), BOB_SECRET);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("does the real work in the workspace: create, edit, append, read, list, all on disk", async () => {
    const [created, edited, appended, read, listed] = await moves("filer", [
      { name: "file_write", arguments: { path: "notes/plan.md", content: "step one\n" } },
      { name: "file_edit", arguments: { path: "notes/plan.md", old: "one", new: "two" } },
      { name: "file_write", arguments: { path: "notes/plan.md", content: "step three\n", mode: "append" } },
      { name: "file_read", arguments: { path: "notes/plan.md" } },
      { name: "file_list", arguments: { path: "notes", recursive: true } },
    ]);
    expect(JSON.parse(created as string)).toEqual({
      path: "notes/plan.md",
      mode: "create",
      bytes: 9,
      created: true,
    });
    expect(JSON.parse(edited as string)).toEqual({ path: "notes/plan.md", replaced: 1, bytes: 9 });
    expect(JSON.parse(appended as string)).toMatchObject({ mode: "append", bytes: 11 });
    expect(read).toBe("[20 bytes, the whole file]\nstep two\nstep three\n");
    expect(JSON.parse(listed as string)).toEqual({
      path: "notes",
      entries: [{ path: "plan.md", type: "file", size: 20 }],
    });
    expect(readFileSync(join(workspace, "notes", "plan.md"), "utf8")).toBe("step two\nstep three\n");

    const [clash, overwritten] = await moves("filer", [
      { name: "file_write", arguments: { path: "notes/plan.md", content: "x" } },
      { name: "file_write", arguments: { path: "notes/plan.md", content: "fresh\n", mode: "overwrite" } },
    ]);
    expect(codeOf(clash as string)).toBe("CONFLICT");
    expect(JSON.parse(overwritten as string)).toMatchObject({ mode: "overwrite", created: false });
    expect(readFileSync(join(workspace, "notes", "plan.md"), "utf8")).toBe("fresh\n");
  });

  it("pages a big file by [moves.files] max_read_bytes", async () => {
    writeFileSync(join(workspace, "big.txt"), "z".repeat(10_000));
    const [first, last] = await moves("filer", [
      { name: "file_read", arguments: { path: "big.txt" } },
      { name: "file_read", arguments: { path: "big.txt", offset: 8192 } },
    ]);
    const [header, text] = (first as string).split("\n");
    expect(header).toBe("[bytes 0 to 4096 of 10000; to read on, offset 4096]");
    expect(text).toBe("z".repeat(4096));
    expect(last?.split("\n")[0]).toBe("[bytes 8192 to 10000 of 10000: the end of the file]");
  });

  it("refuses every escape, and nothing from outside reaches the model or changes on disk", async () => {
    const before = outsideState();
    const attempts: [Call, string][] = [
      // .. and absolute paths
      [{ name: "file_read", arguments: { path: "../../master.key" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "../../config.toml" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "notes/../../../master.key" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: join(home, "master.key") } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "/etc/passwd" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "~/.bashrc" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "../bob/diary.txt" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: join(outside, "canary.txt") } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: `${workspace}/../bob/diary.txt` } }, "FORBIDDEN"],
      // symlinks and hard links planted before the first call
      [{ name: "file_read", arguments: { path: "link/canary.txt" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "link/no-such-file" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "keylink" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "hardkey" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "hardcli" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "hardcli", offset: 1 } }, "FORBIDDEN"],
      // a FIFO (opened for nothing: the daemon must not hang on it) and a device behind a symlink
      [{ name: "file_read", arguments: { path: "fifo" } }, "FORBIDDEN"],
      [{ name: "file_read", arguments: { path: "zerolink" } }, "FORBIDDEN"],
      // look-alikes of "." and "/" are names inside the workspace, which do not exist
      [{ name: "file_read", arguments: { path: "\u2025/\u2025/master.key" } }, "NOT_FOUND"],
      [{ name: "file_read", arguments: { path: "\u2024\u2024/\u2024\u2024/master.key" } }, "NOT_FOUND"],
      [{ name: "file_read", arguments: { path: "\uff0e\uff0e/\uff0e\uff0e/master.key" } }, "NOT_FOUND"],
      [
        { name: "file_read", arguments: { path: "\uff0e\uff0e\uff0f\uff0e\uff0e\uff0fmaster.key" } },
        "NOT_FOUND",
      ],
      [{ name: "file_read", arguments: { path: "..\uff0f..\uff0fmaster.key" } }, "NOT_FOUND"],
      [{ name: "file_read", arguments: { path: "..\u2215..\u2215master.key" } }, "NOT_FOUND"],
      [{ name: "file_read", arguments: { path: "%2e%2e/%2e%2e/master.key" } }, "NOT_FOUND"],
      [{ name: "file_read", arguments: { path: "..\\..\\master.key" } }, "NOT_FOUND"],
      [{ name: "file_list", arguments: { path: "\uff0e\uff0e" } }, "NOT_FOUND"],
      [{ name: "file_read", arguments: { path: `${shared}/brief.md` } }, "FORBIDDEN"],
      [{ name: "file_list", arguments: { path: "../.." } }, "FORBIDDEN"],
      [{ name: "file_list", arguments: { path: "link" } }, "FORBIDDEN"],
      [{ name: "file_list", arguments: { path: "/" } }, "FORBIDDEN"],
      [
        { name: "file_write", arguments: { path: "../../config.toml", content: "x", mode: "overwrite" } },
        "FORBIDDEN",
      ],
      [
        { name: "file_write", arguments: { path: "../../plugins/moves-evil/index.js", content: "x" } },
        "FORBIDDEN",
      ],
      [
        { name: "file_write", arguments: { path: "../bob/diary.txt", content: "x", mode: "append" } },
        "FORBIDDEN",
      ],
      [{ name: "file_write", arguments: { path: "../sibling/new.txt", content: "x" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: join(outside, "pwned.txt"), content: "x" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "/tmp/pwned.txt", content: "x" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "link/pwned.txt", content: "x" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "link/deep/pwned.txt", content: "x" } }, "FORBIDDEN"],
      [
        { name: "file_write", arguments: { path: "link/canary.txt", content: "x", mode: "overwrite" } },
        "FORBIDDEN",
      ],
      [{ name: "file_write", arguments: { path: "dangling", content: "x" } }, "CONFLICT"],
      [{ name: "file_write", arguments: { path: "dangling", content: "x", mode: "append" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "keylink", content: "x", mode: "overwrite" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "hardkey", content: "x", mode: "append" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "fifo", content: "x", mode: "append" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "fifo", content: "x", mode: "overwrite" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "zerolink", content: "x", mode: "append" } }, "FORBIDDEN"],
      [{ name: "file_edit", arguments: { path: "../../config.toml", old: "api", new: "x" } }, "FORBIDDEN"],
      [{ name: "file_edit", arguments: { path: "link/canary.txt", old: "canary", new: "x" } }, "FORBIDDEN"],
      [{ name: "file_edit", arguments: { path: "hardkey", old: "a", new: "b" } }, "FORBIDDEN"],
      [{ name: "file_edit", arguments: { path: "hardcli", old: "PRIVATE", new: "b" } }, "FORBIDDEN"],
      [{ name: "file_write", arguments: { path: "hardcli", content: "x", mode: "append" } }, "FORBIDDEN"],
      [{ name: "file_edit", arguments: { path: "fifo", old: "a", new: "b" } }, "FORBIDDEN"],
    ];
    if (plantedDevice) {
      attempts.push(
        [{ name: "file_read", arguments: { path: "zero" } }, "FORBIDDEN"],
        [{ name: "file_write", arguments: { path: "zero", content: "x", mode: "append" } }, "FORBIDDEN"],
        [{ name: "file_write", arguments: { path: "zero", content: "x", mode: "overwrite" } }, "FORBIDDEN"],
        [{ name: "file_edit", arguments: { path: "zero", old: "a", new: "b" } }, "FORBIDDEN"],
      );
    }
    const results = await moves(
      "filer",
      attempts.map(([call]) => call),
    );
    for (const [index, [call, code]] of attempts.entries()) {
      expect({ call, code: codeOf(results[index] as string) }).toEqual({ call, code });
    }
    // The refusals say why, in words the model can act on.
    const message = (path: string) =>
      (JSON.parse(results[attempts.findIndex(([c]) => c.arguments.path === path)] as string) as ToolError)
        .error.message;
    expect(message("fifo")).toMatch(/named pipe \(FIFO\), not a regular file/);
    expect(message("hardcli")).toMatch(/has 2 hard links/);
    expect(message("link/canary.txt")).toMatch(/leads outside the folders this fighter may read/);
    expect(message("/etc/passwd")).toMatch(/outside the folders this fighter may read \(its workspace\)/);
    if (plantedDevice) expect(message("zero")).toMatch(/is a device, not a regular file/);

    // Look-alikes are just names: a write with them lands inside the workspace, under that name.
    const lookalikes = [
      "\u2025/\u2025/pwned.txt",
      "\u2024\u2024/\u2024\u2024/pwned.txt",
      "\uff0e\uff0e/\uff0e\uff0e/pwned.txt",
      "\uff0e\uff0e\uff0f\uff0e\uff0e\uff0fpwned.txt",
      "..\u2215pwned.txt",
      "%2e%2e/pwned.txt",
      "..\\pwned.txt",
    ];
    const written = await moves(
      "filer",
      lookalikes.map((path) => ({ name: "file_write", arguments: { path, content: `inside ${path}` } })),
    );
    for (const [index, path] of lookalikes.entries()) {
      expect(JSON.parse(written[index] as string)).toEqual({
        path,
        mode: "create",
        bytes: Buffer.byteLength(`inside ${path}`),
        created: true,
      });
      expect(readFileSync(join(workspace, path), "utf8")).toBe(`inside ${path}`);
    }

    // Nothing outside was read: no tool result the model ever got holds a byte of it.
    const seen = seenByModel();
    for (const secret of [
      CANARY,
      BOB_SECRET,
      OUTSIDE_REPORT,
      masterKey,
      cliKey,
      "PRIVATE KEY",
      "api_listen",
      "root:x:0:0",
      "shared brief",
    ]) {
      expect(seen).not.toContain(secret);
    }
    // Nothing outside was written, created or changed: not a byte, not a name.
    expect(outsideState()).toEqual(before);
    expect(readFileSync(join(home, "master.key"), "utf8").trim()).toBe(masterKey);
    expect(readFileSync(join(home, "config.toml"), "utf8")).toBe(config);
    expect(existsSync(join(home, "workspaces", "sibling"))).toBe(false);
    expect(existsSync("/tmp/pwned.txt")).toBe(false);
  });

  it("refuses a symlink planted between two calls, at the moment it is used", async () => {
    // First call: real work that leaves a folder and a file behind.
    const [made, file] = await moves("filer", [
      { name: "file_write", arguments: { path: "drop/report.txt", content: "v1\n" } },
      { name: "file_write", arguments: { path: "exit.txt", content: "mine\n" } },
    ]);
    expect(JSON.parse(made as string)).toMatchObject({ path: "drop/report.txt", created: true });
    expect(JSON.parse(file as string)).toMatchObject({ path: "exit.txt", created: true });

    // Between the calls, what a shell move (or any process) could do: the folder is moved away and
    // replaced by a symlink to a folder outside, the file by a symlink to a file outside.
    const before = outsideState();
    renameSync(join(workspace, "drop"), join(workspace, "drop-moved"));
    symlinkSync(join(outside, "target"), join(workspace, "drop"));
    unlinkSync(join(workspace, "exit.txt"));
    symlinkSync(join(outside, "target", "report.txt"), join(workspace, "exit.txt"));

    const attempts: Call[] = [
      { name: "file_read", arguments: { path: "drop/report.txt" } },
      { name: "file_write", arguments: { path: "drop/report.txt", content: "v2\n", mode: "overwrite" } },
      { name: "file_write", arguments: { path: "drop/report.txt", content: "v2\n", mode: "append" } },
      { name: "file_write", arguments: { path: "drop/fresh.txt", content: "new\n" } },
      { name: "file_write", arguments: { path: "drop/sub/deep.txt", content: "new\n" } },
      { name: "file_edit", arguments: { path: "drop/report.txt", old: "outside", new: "pwned" } },
      { name: "file_list", arguments: { path: "drop" } },
      { name: "file_read", arguments: { path: "exit.txt" } },
      { name: "file_write", arguments: { path: "exit.txt", content: "v2\n", mode: "overwrite" } },
      { name: "file_write", arguments: { path: "exit.txt", content: "v2\n", mode: "append" } },
      { name: "file_edit", arguments: { path: "exit.txt", old: "outside", new: "pwned" } },
      { name: "file_list", arguments: { path: ".", recursive: true } },
    ];
    const results = await moves("filer", attempts);
    expect(results.slice(0, -1).map((r) => codeOf(r))).toEqual(Array(attempts.length - 1).fill("FORBIDDEN"));
    // A listing shows the planted links as links and does not walk through them.
    const listing = JSON.parse(results.at(-1) as string) as { entries: { path: string; type: string }[] };
    expect(listing.entries).toContainEqual({ path: "drop", type: "symlink" });
    expect(listing.entries).toContainEqual({ path: "exit.txt", type: "symlink" });
    expect(listing.entries.filter((e) => e.path.startsWith("drop/"))).toEqual([]);
    expect(listing.entries).toContainEqual({ path: "drop-moved/report.txt", type: "file", size: 3 });

    expect(outsideState()).toEqual(before);
    expect(readFileSync(join(outside, "target", "report.txt"), "utf8")).toBe(OUTSIDE_REPORT);
    expect(readdirSync(join(outside, "target"))).toEqual(["report.txt"]);
    expect(seenByModel()).not.toContain(OUTSIDE_REPORT);
  });

  it("refuses devices even inside a granted scope, and never hangs on them", async () => {
    await spawn("devices", [
      { type: "file_read", scope: "/dev" },
      { type: "file_write", scope: "/dev" },
    ]);
    const attempts: Call[] = [
      { name: "file_read", arguments: { path: "/dev/zero" } },
      { name: "file_read", arguments: { path: "/dev/urandom" } },
      { name: "file_read", arguments: { path: "/dev/null" } },
      { name: "file_read", arguments: { path: "/dev/full" } },
      { name: "file_write", arguments: { path: "/dev/null", content: "x", mode: "overwrite" } },
      { name: "file_write", arguments: { path: "/dev/zero", content: "x", mode: "append" } },
      { name: "file_write", arguments: { path: "/dev/full", content: "x", mode: "append" } },
      { name: "file_edit", arguments: { path: "/dev/zero", old: "a", new: "b" } },
    ];
    const results = await moves("devices", attempts);
    for (const [index, call] of attempts.entries()) {
      const error = (JSON.parse(results[index] as string) as ToolError).error;
      expect({ call, code: error?.code, message: error?.message }).toEqual({
        call,
        code: "FORBIDDEN",
        message: expect.stringMatching(/is a device, not a regular file/),
      });
    }
    // /dev/stdin and /dev/fd/N are the daemon's own open files (a device, its output pipes): the
    // real path of what they lead to decides, and none of it is a file in an allowed folder.
    const ownFiles = await moves("devices", [
      { name: "file_read", arguments: { path: "/dev/stdin" } },
      { name: "file_read", arguments: { path: "/dev/fd/0" } },
      { name: "file_read", arguments: { path: "/dev/fd/1" } },
      { name: "file_read", arguments: { path: "/dev/fd/2" } },
      { name: "file_write", arguments: { path: "/dev/fd/1", content: "x", mode: "append" } },
    ]);
    expect(ownFiles.map((r) => codeOf(r))).toEqual(Array(5).fill("FORBIDDEN"));
  });

  it("refuses each move to a fighter without the grant with CAPABILITY_DENIED, and does not offer it", async () => {
    mkdirSync(join(home, "workspaces", "bare"), { recursive: true, mode: 0o700 });
    writeFileSync(join(home, "workspaces", "bare", "x.txt"), "bare");
    const calls: Call[] = [
      { name: "file_read", arguments: { path: "x.txt" } },
      { name: "file_write", arguments: { path: "y.txt", content: "y" } },
      { name: "file_edit", arguments: { path: "x.txt", old: "bare", new: "edited" } },
      { name: "file_list", arguments: {} },
    ];
    const results = await moves("bare", calls);
    expect(results.map((r) => codeOf(r))).toEqual(Array(4).fill("CAPABILITY_DENIED"));
    expect(
      fake
        .calls()
        .at(-1)
        ?.tools.filter((t) => t.startsWith("file_")),
    ).toEqual([]);
    expect(readdirSync(join(home, "workspaces", "bare"))).toEqual(["x.txt"]);
    expect(readFileSync(join(home, "workspaces", "bare", "x.txt"), "utf8")).toBe("bare");

    // file_read alone allows reading and listing, not writing or editing.
    const readerResults = await moves("reader", [
      { name: "file_write", arguments: { path: "y.txt", content: "y" } },
      { name: "file_edit", arguments: { path: "y.txt", old: "a", new: "b" } },
      { name: "file_list", arguments: {} },
    ]);
    expect(readerResults.slice(0, 2).map((r) => codeOf(r))).toEqual([
      "CAPABILITY_DENIED",
      "CAPABILITY_DENIED",
    ]);
    expect(JSON.parse(readerResults[2] as string)).toEqual({ path: ".", entries: [] });
  });

  it("widens the allowed folders by a grant's scope, and only by it", async () => {
    const before = snapshot(outside);
    const results = await moves("scoped", [
      { name: "file_read", arguments: { path: join(shared, "brief.md") } },
      { name: "file_write", arguments: { path: join(shared, "out", "report.md"), content: "report\n" } },
      { name: "file_edit", arguments: { path: join(shared, "brief.md"), old: "brief", new: "memo" } },
      { name: "file_list", arguments: { path: shared, recursive: true } },
      { name: "file_write", arguments: { path: "own.txt", content: "mine" } },
      { name: "file_read", arguments: { path: join(outside, "canary.txt") } },
      { name: "file_read", arguments: { path: join(shared, "..", "outside", "canary.txt") } },
      { name: "file_write", arguments: { path: `${shared}-sibling/x.txt`, content: "x" } },
      { name: "file_write", arguments: { path: join(outside, "x.txt"), content: "x" } },
      { name: "file_read", arguments: { path: "../filer/notes/plan.md" } },
    ]);
    expect(results[0]).toBe("[13 bytes, the whole file]\nshared brief\n");
    expect(JSON.parse(results[1] as string)).toMatchObject({
      path: join(shared, "out", "report.md"),
      created: true,
    });
    expect(JSON.parse(results[2] as string)).toMatchObject({ replaced: 1 });
    expect(JSON.parse(results[3] as string).entries.map((e: { path: string }) => e.path)).toEqual([
      "brief.md",
      "out",
      "out/report.md",
    ]);
    expect(JSON.parse(results[4] as string)).toMatchObject({ path: "own.txt", created: true });
    expect(results.slice(5).map((r) => codeOf(r))).toEqual(Array(5).fill("FORBIDDEN"));
    expect(readFileSync(join(shared, "out", "report.md"), "utf8")).toBe("report\n");
    expect(readFileSync(join(shared, "brief.md"), "utf8")).toBe("shared memo\n");
    expect(readFileSync(join(home, "workspaces", "scoped", "own.txt"), "utf8")).toBe("mine");
    expect(snapshot(outside)).toEqual(before);
    expect(readdirSync(scratch).sort()).toEqual(["outside", "shared"]);
    expect(
      fake
        .calls()
        .flatMap((c) => c.tool_results)
        .join("\n"),
    ).not.toContain(CANARY);
  });

  it("keeps the data dir and the daemon's own environment closed even to a scope of /", async () => {
    await spawn("rooted", [{ type: "file_read", scope: "/" }, { type: "agent_spawn" }]);
    const pid = daemon.process.pid as number;
    const results = await moves("rooted", [
      { name: "file_read", arguments: { path: "/proc/self/environ" } },
      { name: "file_read", arguments: { path: `/proc/${pid}/environ` } },
      { name: "file_read", arguments: { path: "/dev/stdin" } },
      { name: "file_read", arguments: { path: "/dev/zero" } },
      { name: "file_read", arguments: { path: join(home, "master.key") } },
      { name: "file_read", arguments: { path: join(home, "config.toml") } },
      { name: "file_list", arguments: { path: home } },
      { name: "file_read", arguments: { path: join(workspace, "hardkey") } },
      { name: "file_read", arguments: { path: join(outside, "canary.txt") } },
    ]);
    expect(results.slice(0, 8).map((r) => codeOf(r))).toEqual(Array(8).fill("FORBIDDEN"));
    expect(results[8]).toBe(`[${CANARY.length} bytes, the whole file]\n${CANARY}`);
    // Every secret of the data dir, by its path, through its parent and through a symlink.
    symlinkSync(home, join(scratch, "home-link"));
    const data = [".env", "keys/cli.key", "keys", "spar.db", "spar.db.salt", "plugins", "config.toml"];
    const secrets = await moves("rooted", [
      ...data.map((name) => ({ name: "file_read", arguments: { path: join(home, name) } })),
      { name: "file_list", arguments: { path: join(home, "keys") } },
      { name: "file_read", arguments: { path: join(home, "..", basename(home), "keys", "cli.key") } },
      { name: "file_read", arguments: { path: join(scratch, "home-link", ".env") } },
      { name: "file_list", arguments: { path: join(scratch, "home-link") } },
      { name: "file_list", arguments: { path: dirname(home) } },
    ]);
    expect(secrets.slice(0, -1).map((r) => codeOf(r))).toEqual(Array(data.length + 4).fill("FORBIDDEN"));
    // The parent lists the data dir by name, and no further.
    const parent = JSON.parse(secrets.at(-1) as string) as { entries: { path: string }[] };
    expect(parent.entries.map((e) => e.path)).toContain(basename(home));
    expect(parent.entries.some((e) => e.path.startsWith(`${basename(home)}/`))).toBe(false);
    rmSync(join(scratch, "home-link"));
    const seen = fake
      .calls()
      .flatMap((c) => c.tool_results)
      .join("\n");
    for (const secret of [
      "sk-test-secret-0000",
      "OPENAI_API_KEY",
      "SPAR_HOME",
      masterKey,
      cliKey,
      DOTENV_SECRET,
      "api_listen",
    ]) {
      expect(seen).not.toContain(secret);
    }
  });

  it("honours a scope only inside [moves.files] allowed_scopes: at spawn, and at each call after the config changed", async () => {
    // The operator narrows the allowed folders to the shared one and restarts.
    await daemon.stop();
    writeConfig(home, port, fake.url, filesConfig(JSON.stringify(shared)));
    daemon = await startDaemon(home, port);
    type Refused = { error: { code: string; message: string; path?: string } };
    const spawnWith = (name: string, capabilities: Record<string, unknown>[]) =>
      daemon.request<Refused>("POST", "/api/v1/fighters", {
        manifest: { name, description: name, system_prompt: "p", capabilities },
      });
    for (const grant of [
      { type: "file_read", scope: "/" },
      { type: "file_write", scope: [shared, outside] },
      { type: "file_read", scope: join(shared, "..") },
      { type: "full_access", scope: "/" },
    ]) {
      const refused = await spawnWith("widened", [{ type: "memory" }, grant]);
      expect({ grant, status: refused.status, code: refused.body.error?.code }).toEqual({
        grant,
        status: 403,
        code: "CAPABILITY_DENIED",
      });
      expect(refused.body.error.message).toContain(`[moves.files] allowed_scopes = ["${shared}"]`);
      expect(refused.body.error.path).toBe("/manifest/capabilities/1/scope");
    }
    expect((await spawnWith("inside", [{ type: "file_read", scope: join(shared, "out") }])).status).toBe(201);
    expect((await daemon.request("GET", "/api/v1/fighters/widened")).status).toBe(404);

    // A fighter spawned while "/" was allowed: its grant no longer works, and it cannot pass it on.
    const [read, spawned] = await moves("rooted", [
      { name: "file_read", arguments: { path: join(outside, "canary.txt") } },
      { name: "fighter_spawn", arguments: { name: "heir", system_prompt: "p", capabilities: ["file_read"] } },
    ]);
    expect(codeOf(read as string)).toBe("CAPABILITY_DENIED");
    expect(read).toContain("allowed_scopes");
    expect(codeOf(spawned as string)).toBe("CAPABILITY_DENIED");
    expect((await daemon.request("GET", "/api/v1/fighters/heir")).status).toBe(404);
    // The shared folder is still allowed.
    const [brief] = await moves("scoped", [
      { name: "file_read", arguments: { path: join(shared, "brief.md") } },
    ]);
    expect(brief).toContain("shared memo");
    expect(read).not.toContain(CANARY);
  });
});

/** The data dir's top-level files with their contents, and its folders by name. */
function topLevel(home: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(home).sort()) {
    const stats = statSync(join(home, name));
    // The database and its journal change as the daemon works; their names must not.
    out[name] =
      stats.isFile() && !name.startsWith("spar.db") ? readFileSync(join(home, name), "latin1") : "present";
  }
  return out;
}
