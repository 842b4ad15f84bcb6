import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { CommandResult } from "../../lib/sandbox/index.js";
import type { Capability } from "../../sdk/index.js";
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

/** A skill in the Agent Skills layout: SKILL.md, a 29,000-character reference, a script. */
const FIXTURE = resolve(import.meta.dirname, "..", "fixtures", "skills-files", "text-stats");
const REFERENCE = readFileSync(join(FIXTURE, "references", "style-guide.md"), "utf8");

type ErrorBody = { error?: { code: string; message: string } };
interface Page extends ErrorBody {
  text: string;
  offset: number;
  next_offset: number | null;
  total_chars: number;
}

/**
 * Progressive disclosure with files, through the real daemon, real bubblewrap and the fake model:
 * a fighter loads an installed skill (its body and the list of its files), reads its long reference
 * in pages with skill_read until next_offset is null, and runs its script with shell_exec in the
 * sandbox, where the skill's folder is mounted read-only at /skills/<name>. Then an evil model:
 * paths out of the skill, a link planted in it, writes into the mount, the data dir, another
 * fighter's sandbox: all refused or failing.
 */
describe("a skill's references and scripts through the real daemon", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let installed: string;

  const send = (fighter: string, message: string) =>
    daemon.request<{ response: string }>("POST", `/api/v1/fighters/${fighter}/message`, {
      message,
      bout: "new",
    });
  const spawn = async (name: string, capabilities: Capability[], skills: string[]) => {
    const created = await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities, skills },
    });
    expect(created.status).toBe(201);
  };
  /** The model makes these calls in one reply; what each returned, parsed. */
  const calls = async <T = Record<string, unknown>>(
    fighter: string,
    ...made: { name: string; arguments: Record<string, unknown> }[]
  ): Promise<T[]> => {
    fake.enqueue({ tool_calls: made }, { text: "done" });
    const reply = await send(fighter, "go on");
    expect(reply.status).toBe(200);
    return (fake.calls().at(-1)?.tool_results ?? []).slice(-made.length).map((r) => JSON.parse(r) as T);
  };
  const shell = (fighter: string, ...argvs: string[][]) =>
    calls<CommandResult & ErrorBody>(
      fighter,
      ...argvs.map((argv) => ({ name: "shell_exec", arguments: { argv } })),
    );
  const read = (path: string, offset?: number) =>
    calls<Page>("writer", {
      name: "skill_read",
      arguments: { name: "text-stats", path, ...(offset === undefined ? {} : { offset }) },
    }).then(([page]) => page as Page);

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // shell_exec runs unasked but for "asker", whose calls wait for the operator (approvals still apply).
    writeConfig(
      home,
      port,
      fake.url,
      `\n[creed]\nreflect = false\n${["writer", "outsider", "designer"].map((f) => allowUnasked(["shell_exec"], f)).join("")}`,
    );
    daemon = await startDaemon(home, port);
    const install = await daemon.cli(["move", "install", FIXTURE]);
    expect(install.code, install.stderr).toBe(0);
    installed = join(realpathSync(home), "skills", "text-stats");
    const shellGrant: Capability = {
      type: "shell_exec",
      pattern: ["python3 /skills/* *", "cat *", "ls *", "sh -c *", "touch *"],
    };
    await spawn("writer", [shellGrant], ["text-stats"]);
    // Shell too, but not this skill: its sandbox must not hold it.
    await spawn("outsider", [shellGrant], ["write-commit-message"]);
    // The skill, but no shell.
    await spawn("reader", [{ type: "memory" }], ["text-stats"]);
    await spawn("asker", [shellGrant], ["text-stats"]);
    // A bundled skill with a script: accessibility-check's contrast calculator.
    await spawn(
      "designer",
      [shellGrant, { type: "file_read" }, { type: "file_write" }],
      ["accessibility-check"],
    );
    for (const fighter of ["writer", "asker"]) {
      const workspace = join(home, "workspaces", fighter);
      mkdirSync(workspace, { recursive: true });
      writeFileSync(join(workspace, "draft.md"), "# Draft\n\nShort and to the point.\n");
    }
  });

  afterEach(() => fake.reset());

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("skill_load gives the body, the skill's files, how to read them and how to run its script", async () => {
    const [loaded] = await calls("writer", { name: "skill_load", arguments: { name: "text-stats" } });
    expect(loaded).toMatchObject({
      name: "text-stats",
      instructions: expect.stringMatching(/^# Text statistics/),
      files: [
        { path: "references/style-guide.md", size: Buffer.byteLength(REFERENCE), kind: "reference" },
        { path: "scripts/stats.py", kind: "script" },
      ],
      read: expect.stringContaining("skill_read"),
      run: expect.stringContaining('["python3","/skills/text-stats/scripts/stats.py"]'),
    });
    // skill_read is offered from the call after the load on.
    expect(fake.calls()[0]?.tools).not.toContain("skill_read");
    expect(fake.calls()[1]?.tools).toContain("skill_read");
    // A fighter without shell_exec reads none of it: the skill needs that capability.
    const [unarmed] = await calls<ErrorBody>("reader", {
      name: "skill_read",
      arguments: { name: "text-stats", path: "references/style-guide.md" },
    });
    expect(unarmed?.error?.code).toBe("CAPABILITY_DENIED");
  });

  it("reads the 29,000-character reference in pages until next_offset is null, and they make the file", async () => {
    expect(REFERENCE.length).toBeGreaterThanOrEqual(28_000);
    const pages: Page[] = [];
    let offset: number | null = 0;
    while (offset !== null && pages.length < 10) {
      const page = await read("references/style-guide.md", offset === 0 ? undefined : offset);
      expect(page.error).toBeUndefined();
      expect(page.offset).toBe(offset);
      pages.push(page);
      offset = page.next_offset;
    }
    expect(pages).toHaveLength(2);
    expect(pages.map((p) => p.total_chars)).toEqual([REFERENCE.length, REFERENCE.length]);
    expect(pages.map((p) => p.text).join("")).toBe(REFERENCE);
  });

  it("runs the skill's script with shell_exec in the sandbox, on a file of the workspace", async () => {
    const [stats, listed] = await shell(
      "writer",
      ["python3", "/skills/text-stats/scripts/stats.py", "draft.md"],
      ["ls", "/skills"],
    );
    expect(stats).toMatchObject({ exit_code: 0, stdout: "draft.md: 3 lines, 7 words, 33 characters\n" });
    // Only the skills this fighter may use that hold scripts.
    expect(listed).toMatchObject({ exit_code: 0, stdout: "text-stats\n" });
  });

  it("runs a bundled skill's script the same way: accessibility-check's contrast calculator", async () => {
    const [contrast, listed] = await shell(
      "designer",
      ["python3", "/skills/accessibility-check/scripts/contrast.py", "#767676", "#ffffff", "#999", "#fff"],
      ["ls", "/skills"],
    );
    expect(contrast?.exit_code).toBe(0);
    expect(contrast?.stdout.split("\n")).toEqual([
      expect.stringMatching(/^#767676 on #ffffff: 4\.54:1 \| AA normal text pass/),
      expect.stringMatching(/^#999 on #fff: 2\.84:1 \| AA normal text fail/),
      "",
    ]);
    expect(listed).toMatchObject({ exit_code: 0, stdout: "accessibility-check\n" });
  });

  it("asks before running a skill's script where a rule says so, binding the script's bytes: changed, it does not run", async () => {
    const script = join(installed, "scripts", "stats.py");
    const run = { argv: ["python3", "/skills/text-stats/scripts/stats.py", "draft.md"] };
    const asked = async () => {
      for (let i = 0; i < 300; i++) {
        const found = (
          await daemon.request<{ approvals: { id: string; move: string; files: unknown[] }[] }>(
            "GET",
            "/api/v1/approvals?status=pending",
          )
        ).body.approvals.find((r) => r.move === "shell_exec");
        if (found) return found;
        await new Promise((done) => setTimeout(done, 100));
      }
      throw new Error("no pending request for shell_exec");
    };
    const result = () => JSON.parse(fake.calls().at(-1)?.tool_results.at(-1) ?? "null");

    fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: run }] }, { text: "counted" });
    let reply = send("asker", "count my draft");
    let request = await asked();
    // The skill's script, by its path on the host, and the workspace file it is given.
    const sha256 = expect.stringMatching(/^[0-9a-f]{64}$/);
    expect(request.files).toEqual([
      { path: script, sha256 },
      { path: join(realpathSync(home), "workspaces", "asker", "draft.md"), sha256 },
    ]);
    expect((await daemon.cli(["approvals", "approve", request.id])).code).toBe(0);
    expect((await reply).body.response).toBe("counted");
    expect(fake.calls()[1]?.tool_results.at(-1)).toContain("draft.md: 3 lines, 7 words, 33 characters");

    fake.reset();
    fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: run }] }, { text: "stopped" });
    reply = send("asker", "count it again");
    request = await asked();
    // The installed script changed on disk under the request (an update, or a hand).
    const original = readFileSync(script);
    writeFileSync(script, `${original}print("and something else")\n`);
    try {
      expect((await daemon.cli(["approvals", "approve", request.id])).code).toBe(0);
      expect((await reply).body.response).toBe("stopped");
      expect(result().error).toMatchObject({
        code: "APPROVAL_STALE",
        message: expect.stringContaining(`the file ${script} changed since it was approved`),
      });
    } finally {
      writeFileSync(script, original);
    }
  });

  it("an evil model: no path out of the skill, no link, no write into the mount, no data dir, no other fighter's skill", async () => {
    const key = join(realpathSync(home), "master.key");
    expect(existsSync(key)).toBe(true);
    const secret = readFileSync(key, "utf8").trim();
    // A link planted in the installed skill after its install, to the data dir's key.
    symlinkSync(key, join(installed, "references", "key.md"));
    const refusals = await calls<ErrorBody>(
      "writer",
      { name: "skill_read", arguments: { name: "text-stats", path: "../../master.key" } },
      { name: "skill_read", arguments: { name: "text-stats", path: key } },
      { name: "skill_read", arguments: { name: "text-stats", path: "references/key.md" } },
      { name: "skill_read", arguments: { name: "text-stats", path: "references/none.md" } },
      { name: "skill_read", arguments: { name: "write-commit-message", path: "SKILL.md" } },
    );
    expect(refusals.map((r) => r.error?.code)).toEqual([
      "VALIDATION_FAILED",
      "VALIDATION_FAILED",
      "VALIDATION_FAILED",
      "NOT_FOUND",
      "NOT_FOUND",
    ]);

    const before = readdirSync(installed, { recursive: true }).sort();
    const script = readFileSync(join(installed, "scripts", "stats.py"));
    const [write, touch, link, dataDir, listHome] = await shell(
      "writer",
      ["sh", "-c", "echo pwned > /skills/text-stats/scripts/stats.py"],
      ["touch", "/skills/text-stats/new-file"],
      ["cat", "/skills/text-stats/references/key.md"],
      ["cat", key],
      ["ls", join(realpathSync(home), "skills")],
    );
    expect(write?.exit_code).not.toBe(0);
    expect(write?.stderr).toMatch(/Read-only file system/);
    expect(touch?.exit_code).not.toBe(0);
    expect(touch?.stderr).toMatch(/Read-only file system/);
    expect(link?.exit_code).not.toBe(0);
    expect(dataDir?.exit_code).not.toBe(0);
    expect(listHome?.exit_code).not.toBe(0);
    expect(readFileSync(join(installed, "scripts", "stats.py"))).toEqual(script);
    expect(readdirSync(installed, { recursive: true }).sort()).toEqual(before);

    // Another fighter with shell_exec but not this skill: nothing of it in its sandbox.
    const [outsiderList, outsiderRun] = await shell(
      "outsider",
      ["ls", "/skills"],
      ["python3", "/skills/text-stats/scripts/stats.py", "/etc/hostname"],
    );
    expect(outsiderList?.exit_code).not.toBe(0);
    expect(outsiderList?.stderr).toMatch(/No such file or directory/);
    expect(outsiderRun?.exit_code).not.toBe(0);
    expect(outsiderRun?.stderr).toMatch(/No such file or directory/);

    // Nothing of the key reached the model, whatever the calls returned.
    expect(secret.length).toBeGreaterThan(16);
    expect(JSON.stringify(fake.requests.map((r) => r.body))).not.toContain(secret.slice(0, 16));
  });
});
