import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
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

interface Listed {
  moves: { name: string; capability: string }[];
  skills: { name: string; category: string; source: string; capabilities: string[] }[];
}

/**
 * Skills on demand and a small prompt, through the real daemon with every bundled tool pack and
 * skill: what the model is shown for a plain message, for one that matches a skill, and how it
 * reaches a skill's instructions and a deferred tool.
 */
describe("skills and deferred moves through the real daemon", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  const send = (fighter: string, message: string) =>
    daemon.request<{ response: string }>("POST", `/api/v1/fighters/${fighter}/message`, {
      message,
      bout: "new",
    });
  const spawn = async (name: string, capabilities: Capability[], skills?: string[]) => {
    const created = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name,
        description: name,
        system_prompt: `You are ${name}.`,
        capabilities,
        ...(skills ? { skills } : {}),
      },
    });
    expect(created.status).toBe(201);
  };
  const lastUser = (i: number) => {
    const body = fake.requests[i]?.body;
    const user = body?.messages.findLast((m) => m.role === "user");
    return typeof user?.content === "string" ? user.content : "";
  };
  const toolsOf = (i: number) => (fake.requests[i]?.body?.tools ?? []).map((t) => t.function.name);
  const result = (i: number) => JSON.parse(fake.calls()[i]?.tool_results.at(-1) ?? "null");

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // This suite tests its moves, not approvals: shell_exec run unasked, as a rule in config.toml lets them.
    writeConfig(home, port, fake.url, `\n[creed]\nreflect = false\n${allowUnasked(["shell_exec"])}`);
    daemon = await startDaemon(home, port);
    await spawn("narrow", [{ type: "memory" }], ["write-commit-message", "summarize-nda"]);
    await spawn("reader", [{ type: "memory" }]);
  });

  afterEach(() => fake.reset());

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("lists all 103 bundled skills beside the tools, each with its category and capabilities", async () => {
    const listed = JSON.parse((await daemon.cli(["move", "list", "--json"])).stdout) as Listed;
    expect(listed.skills).toHaveLength(103);
    expect(new Set(listed.skills.map((s) => s.category)).size).toBeGreaterThanOrEqual(15);
    expect(listed.skills.every((s) => s.source === "bundled")).toBe(true);
    expect(listed.moves.map((m) => m.name)).toEqual(
      expect.arrayContaining(["skill_search", "skill_load", "move_search"]),
    );
  });

  it("ranks the obvious skill first for a search, from the CLI and the API", async () => {
    const cli = await daemon.cli(["move", "search", "review a pull request", "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    const results = (JSON.parse(cli.stdout) as { results: { name: string; kind: string }[] }).results;
    expect(results[0]).toMatchObject({ name: "review-pull-request", kind: "skill" });
    const api = await daemon.request<{ results: { name: string }[] }>(
      "GET",
      "/api/v1/moves/search?q=fetch%20a%20web%20page",
    );
    expect(api.body.results.map((r) => r.name)).toContain("web_fetch");
    const empty = await daemon.request<{ error: { code: string } }>("GET", "/api/v1/moves/search?q=");
    expect(empty.status).toBe(400);
  });

  it('keeps "hello" small: no skill bodies, no skill list, only the core tools', async () => {
    await send("spar", "hello");
    expect(lastUser(0)).toBe("hello");
    expect(fake.calls()[0]?.context).not.toMatch(/Skills for this message/);
    expect(fake.calls()[0]?.system).not.toMatch(/Skills for this message/);
    expect(toolsOf(0).sort()).toEqual([
      "memory_recall",
      "memory_store",
      "move_search",
      "skill_load",
      "skill_search",
    ]);
    const system = fake.calls()[0]?.system ?? "";
    expect(system).toMatch(/More tools are available than are listed/);
    expect(system).not.toMatch(/review-pull-request/);
  });

  it("names the matching skill beside a message, loads it, and then offers the moves it needs", async () => {
    fake.enqueue(
      { tool_calls: [{ name: "skill_load", arguments: { name: "review-pull-request" } }] },
      { tool_calls: [{ name: "shell_exec", arguments: { argv: ["echo", "diff"] } }] },
      { text: "reviewed" },
    );
    const reply = await send("spar", "Please review the pull request on my branch");
    expect(reply.body.response).toBe("reviewed");
    expect(lastUser(0)).toBe("Please review the pull request on my branch");
    expect(fake.calls()[0]?.context).toMatch(/## Skills for this message\n.*\n- review-pull-request: /);
    expect(toolsOf(0)).not.toContain("shell_exec");
    const loaded = result(1);
    expect(loaded.name).toBe("review-pull-request");
    expect(loaded.instructions).toMatch(/^# /);
    expect(loaded.moves).toContain("shell_exec");
    // The skill's moves are offered from the next call on, and stay offered in the bout.
    expect(toolsOf(1)).toEqual(expect.arrayContaining(["shell_exec", "file_read"]));
    expect(toolsOf(2)).toContain("shell_exec");
    expect(result(2)).toMatchObject({ exit_code: 0, stdout: "diff\n" });
  });

  it("finds a deferred tool with move_search and offers it from then on", async () => {
    fake.enqueue(
      { tool_calls: [{ name: "move_search", arguments: { query: "write a file" } }] },
      { tool_calls: [{ name: "file_write", arguments: { path: "note.txt", content: "hi\n" } }] },
      { text: "saved" },
    );
    expect((await send("spar", "save hi to note.txt")).body.response).toBe("saved");
    expect(toolsOf(0)).not.toContain("file_write");
    expect(result(1).moves.map((m: { name: string }) => m.name)).toContain("file_write");
    expect(toolsOf(1)).toContain("file_write");
    expect(result(2)).toMatchObject({ path: "note.txt" });
  });

  it("restricts a fighter to its manifest's skills, and says when a skill needs what it lacks", async () => {
    fake.enqueue(
      { tool_calls: [{ name: "skill_search", arguments: { query: "review a pull request" } }] },
      { tool_calls: [{ name: "skill_load", arguments: { name: "review-pull-request" } }] },
      { text: "ok" },
    );
    await send("narrow", "what can you do");
    // A fighter with few moves sees them all, and no move_search.
    expect(toolsOf(0).sort()).toEqual([
      "conversation_search",
      "memory_recall",
      "memory_store",
      "skill_load",
      "skill_search",
    ]);
    const found = result(1).results.map((r: { name: string }) => r.name);
    expect(found.every((n: string) => ["write-commit-message", "summarize-nda"].includes(n))).toBe(true);
    expect(result(2).error).toMatchObject({ code: "NOT_FOUND" });

    fake.reset();
    fake.enqueue(
      { tool_calls: [{ name: "skill_load", arguments: { name: "review-pull-request" } }] },
      { text: "ok" },
    );
    await send("reader", "review my pull request");
    const refused = result(1).error;
    expect(refused.code).toBe("CAPABILITY_DENIED");
    expect(refused.message).toMatch(/needs the file_read, shell_exec capabilities|needs the .*shell_exec/);
  });

  it("reads a skill's resource file only when asked, and no path outside it", async () => {
    fake.enqueue(
      {
        tool_calls: [
          { name: "skill_load", arguments: { name: "make-a-budget", file: "assets/budget-template.md" } },
        ],
      },
      {
        tool_calls: [
          {
            name: "skill_load",
            arguments: { name: "make-a-budget", file: "../review-pull-request/SKILL.md" },
          },
        ],
      },
      { text: "ok" },
    );
    await send("spar", "help me budget");
    expect(result(1).content.length).toBeGreaterThan(100);
    expect(result(2).error.code).toBe("NOT_FOUND");
  });
});
