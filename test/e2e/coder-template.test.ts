import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
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

interface Message {
  role: string;
  content: string;
  tool_calls?: { name: string }[];
}

/**
 * The "done when", as a new user runs it: `spar fighter spawn coder`, then `spar chat
 * --fighter coder` against a model that writes a script, edits it and runs it, in the coder's own
 * workspace, with the real CLI, the real daemon and the real tool packs.
 */
describe("the coder template does real work from the CLI", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // This suite tests its moves, not approvals: shell_exec, fighter_spawn, schedule_add run unasked, as a rule in config.toml lets them.
    writeConfig(
      home,
      port,
      fake.url,
      `\n[creed]\nreflect = false\n${allowUnasked(["shell_exec", "fighter_spawn", "schedule_add"])}`,
    );
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("creates, edits and runs a file in its workspace, and the bout records every step", async () => {
    const spawned = await daemon.cli(["fighter", "spawn", "coder"]);
    expect(spawned.code, spawned.stderr).toBe(0);

    fake.enqueue(
      {
        tool_calls: [
          { name: "file_write", arguments: { path: "greet.sh", content: 'echo "hello from coder"\n' } },
        ],
      },
      {
        tool_calls: [
          { name: "file_edit", arguments: { path: "greet.sh", old: "from coder", new: "from the coder" } },
        ],
      },
      { tool_calls: [{ name: "shell_exec", arguments: { argv: ["sh", "greet.sh"] } }] },
      { text: "greet.sh prints: hello from the coder" },
    );
    const chat = await daemon.cli([
      "chat",
      "--fighter",
      "coder",
      "write greet.sh, fix its wording and run it",
    ]);
    expect(chat.stderr).toBe("");
    expect(chat.stdout).toBe("greet.sh prints: hello from the coder\n");

    // The file is on disk, in the coder's workspace, as edited.
    const workspace = join(realpathSync(home), "workspaces", "coder");
    expect(readFileSync(join(workspace, "greet.sh"), "utf8")).toBe('echo "hello from the coder"\n');
    expect(existsSync(join(home, "greet.sh"))).toBe(false);

    // The model was offered the coder's moves and no others, and got each result back.
    const calls = fake.calls();
    expect(calls).toHaveLength(4);
    const tools = calls[0]?.tools ?? [];
    for (const name of ["file_read", "file_write", "file_edit", "file_list", "shell_exec", "memory_store"]) {
      expect(tools).toContain(name);
    }
    expect(tools.filter((t) => /^(web|desktop|mcp|fighter|schedule)_/.test(t))).toEqual([]);
    const results = calls[3]?.tool_results ?? [];
    expect(results).toHaveLength(3);
    expect(JSON.parse(results[2] ?? "{}")).toMatchObject({ exit_code: 0, stdout: "hello from the coder\n" });

    // The bout holds every call and result (durable steps), readable from the CLI's fighter.
    const bouts = JSON.parse((await daemon.cli(["bout", "list", "--fighter", "coder", "--json"])).stdout) as {
      bouts: { id: string }[];
    };
    const bout = bouts.bouts[0]?.id ?? "";
    const messages = (await daemon.request<{ messages: Message[] }>("GET", `/api/v1/bouts/${bout}/messages`))
      .body.messages;
    const called = messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.name));
    expect(called).toEqual(["file_write", "file_edit", "shell_exec"]);
    expect(messages.filter((m) => m.role === "tool")).toHaveLength(3);
    expect(messages.at(-1)).toMatchObject({
      role: "assistant",
      content: "greet.sh prints: hello from the coder",
    });
  });

  it("spar move list shows every tool with its capability", async () => {
    const listed = await daemon.cli(["move", "list"]);
    expect(listed.code).toBe(0);
    const expected: Record<string, string> = {
      file_read: "file_read",
      file_list: "file_read",
      file_write: "file_write",
      file_edit: "file_write",
      shell_exec: "shell_exec",
      web_fetch: "network",
      web_search: "network",
      fighter_message: "agent_message",
      fighter_spawn: "agent_spawn",
      schedule_add: "schedule",
      desktop_screenshot: "desktop",
      memory_store: "memory",
    };
    for (const [move, capability] of Object.entries(expected)) {
      const line = listed.stdout.split("\n").find((l) => l.trim().split(/\s+/)[0] === move);
      expect(line, `${move} in spar move list`).toBeDefined();
      expect(line).toContain(capability);
    }
  });
});
