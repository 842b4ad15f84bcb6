import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { boundFiles, changedSince, fileTarget, notifyTarget, subjectOf } from "./facts.js";

const root = mkdtempSync(join(tmpdir(), "spar-approvals-facts-"));
const workspace = join(root, "workspaces", "coder");
mkdirSync(join(workspace, "sub"), { recursive: true });
writeFileSync(join(workspace, "run.sh"), "echo hi\n");
writeFileSync(join(workspace, "sub", "tool.py"), "print(1)\n");
writeFileSync(join(root, "outside.txt"), "x");
symlinkSync(join(root, "outside.txt"), join(workspace, "link.txt"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** sha256 of run.sh's "echo hi\n". */
const RUN_SH = "ab08508fdf5ca4da5c4995987bc41c56c048aaa5eeb046417ae4049b7d40286e";

describe("a call's main argument", () => {
  it("is the command line, the path, the chat, the fighter, the URL; the canonical arguments otherwise", () => {
    expect(subjectOf("shell_exec", { argv: ["git", "status"] })).toBe("git status");
    expect(subjectOf("shell_exec", { command: "ls | wc -l" })).toBe("/bin/sh -c ls | wc -l");
    expect(subjectOf("file_write", { path: "notes.txt", content: "x" })).toBe("notes.txt");
    expect(subjectOf("channel_notify", { text: "hi", platform: "telegram", chat: "42" })).toBe("telegram:42");
    expect(subjectOf("channel_notify", { text: "hi" })).toBe("*:notify_chat");
    expect(subjectOf("fighter_spawn", { name: "helper", system_prompt: "x" })).toBe("helper");
    expect(subjectOf("fighter_message", { to: "scout", content: "x" })).toBe("scout");
    expect(subjectOf("web_fetch", { url: "https://a.example/?q=1" })).toBe("https://a.example/?q=1");
    expect(subjectOf("mcp_mail_send", { to: "a@b.c", body: "x" })).toBe('{"body":"x","to":"a@b.c"}');
    expect(notifyTarget({ chat: "C1" })).toBe("*:C1");
  });
});

describe("a file move's target", () => {
  it("is inside the workspace when relative, outside when absolute elsewhere or through a symlink", () => {
    expect(fileTarget(workspace, "run.sh")).toMatchObject({ outside: false, exists: true });
    expect(fileTarget(workspace, "new.txt")).toMatchObject({ outside: false, exists: false });
    expect(fileTarget(workspace, join(root, "outside.txt"))).toMatchObject({ outside: true, exists: true });
    expect(fileTarget(workspace, "../../outside.txt")).toMatchObject({ outside: true, exists: true });
    expect(fileTarget(workspace, "link.txt")).toMatchObject({ outside: true, exists: true });
  });
});

describe("the files a call binds", () => {
  it("are a command's program and the files it names under its folder, with their sha256", async () => {
    const files = await boundFiles("shell_exec", { argv: ["sh", "run.sh", "-x", "missing.sh"] }, workspace);
    expect(files).toEqual([{ path: join(workspace, "run.sh"), sha256: RUN_SH }]);
    const line = await boundFiles(
      "shell_exec",
      { command: "python3 tool.py && ./../run.sh", cwd: "sub" },
      workspace,
    );
    // The folder it runs in is sub/: run.sh is outside it.
    expect(line.map((f) => f.path)).toEqual([join(workspace, "sub", "tool.py")]);
    const sh = await boundFiles("shell_exec", { argv: ["/bin/sh", "-c", "sh run.sh"] }, workspace);
    expect(sh.map((f) => f.path)).toEqual([join(workspace, "run.sh")]);
  });

  it("are a skill's script a command names under a folder lent to its sandbox, never outside it", async () => {
    const skill = join(root, "skills", "text-stats");
    mkdirSync(join(skill, "scripts"), { recursive: true });
    writeFileSync(join(skill, "scripts", "run.sh"), "echo hi\n");
    const mounts = [{ source: skill, target: "/skills/text-stats" }];
    const files = await boundFiles(
      "shell_exec",
      { argv: ["bash", "/skills/text-stats/scripts/run.sh", "/skills/text-stats/../../outside.txt"] },
      workspace,
      mounts,
    );
    expect(files).toEqual([{ path: join(skill, "scripts", "run.sh"), sha256: RUN_SH }]);
    // Without the mounts (another move, or a fighter lent nothing): nothing outside the folder.
    expect(
      await boundFiles("shell_exec", { argv: ["bash", "/skills/text-stats/scripts/run.sh"] }, workspace),
    ).toEqual([]);
  });

  it("are a write's target when it exists, and nothing for a read", async () => {
    expect(
      (await boundFiles("file_write", { path: "run.sh", content: "" }, workspace)).map((f) => f.path),
    ).toEqual([join(workspace, "run.sh")]);
    expect(await boundFiles("file_write", { path: "new.txt", content: "" }, workspace)).toEqual([]);
    expect(await boundFiles("file_read", { path: "run.sh" }, workspace)).toEqual([]);
  });

  it("say what changed since the approval: a file changed, gone or new", () => {
    const a = { path: "/w/a", sha256: "1" };
    expect(changedSince([a], [a])).toBeUndefined();
    expect(changedSince([a], [{ ...a, sha256: "2" }])).toBe("the file /w/a changed since it was approved");
    expect(changedSince([a], [])).toBe("the file /w/a is gone since it was approved");
    expect(changedSince([], [a])).toBe("the file /w/a appeared since it was approved");
  });
});
