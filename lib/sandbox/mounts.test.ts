/**
 * Folders lent to a sandboxed process at a path of their own (`mounts`: a skill's folder at
 * `/skills/<name>`), with the real bubblewrap: read-only, a program found by its path there, never
 * a folder holding the data dir; and not there at all without bubblewrap (`mode = "off"`).
 */
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../kernel/host/config.js";
import { SparError } from "../../sdk/errors.js";
import { createSandbox, type SandboxedCommand } from "./index.js";

describe("sandbox mounts", () => {
  let root: string;
  let home: string;
  let workspace: string;
  let skill: string;

  beforeAll(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "spar-mounts-")));
    home = join(root, "home");
    workspace = join(home, "workspaces", "scout");
    skill = join(home, "skills", "demo");
    mkdirSync(workspace, { recursive: true });
    mkdirSync(join(skill, "scripts"), { recursive: true });
    writeFileSync(join(skill, "scripts", "hi.sh"), "#!/bin/sh\necho hi from $0\n");
    chmodSync(join(skill, "scripts", "hi.sh"), 0o755);
    writeFileSync(join(home, "master.key"), "key\n");
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const command = (argv: string[], mounts: SandboxedCommand["mounts"]): SandboxedCommand => ({
    argv,
    workspace,
    cwd: workspace,
    path: "/usr/bin:/bin",
    timeoutMs: 20_000,
    maxOutputBytes: 65_536,
    signal: new AbortController().signal,
    mounts,
  });
  const sandbox = (mode: "required" | "off") =>
    createSandbox({ ...loadConfig(home, {}).sandbox, mode }, home, { PATH: process.env.PATH });
  const lent = () => [{ source: skill, target: "/skills/demo" }];

  it("lends the folder read-only at its path, and finds a program there by that path", async () => {
    const box = sandbox("required");
    expect(await box.run(command(["/skills/demo/scripts/hi.sh"], lent()))).toMatchObject({
      exit_code: 0,
      stdout: "hi from /skills/demo/scripts/hi.sh\n",
    });
    const write = await box.run(command(["/bin/sh", "-c", "echo x > /skills/demo/scripts/hi.sh"], lent()));
    expect(write.exit_code).not.toBe(0);
    expect(write.stderr).toMatch(/Read-only file system/);
    expect(readFileSync(join(skill, "scripts", "hi.sh"), "utf8")).toMatch(/^#!\/bin\/sh/);
    // The skill's folder only: nothing above it of the data dir.
    const above = await box.run(command(["/bin/ls", "/skills/demo/..", join(home, "skills")], lent()));
    expect(above.stdout).toBe("/skills/demo/..:\ndemo\n");
    expect(above.exit_code).not.toBe(0);
  });

  it("never mounts a folder that holds the data dir", async () => {
    const listed = await sandbox("required").run(
      command(["/bin/sh", "-c", "ls /skills/all/home; echo ran"], [{ source: root, target: "/skills/all" }]),
    );
    expect(listed).toMatchObject({ exit_code: 0, stdout: "ran\n" });
    expect(listed.stderr).toMatch(/No such file or directory/);
  });

  it("lends nothing without bubblewrap: a program there is NOT_FOUND", async () => {
    const refused = await sandbox("off")
      .run(command(["/skills/demo/scripts/hi.sh"], lent()))
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(SparError);
    expect((refused as SparError).code).toBe("NOT_FOUND");
  });
});
