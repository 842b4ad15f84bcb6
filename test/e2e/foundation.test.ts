import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FighterMessageResult } from "../../sdk/services.js";
import type { FighterRecord, StoredMessage } from "../../sdk/types.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/**
 * The foundation, end to end: the real built daemon as a child process, the real CLI binary, the
 * real encrypted SQLite file, and a fake LLM that speaks OpenAI's wire protocol to the real SDK.
 */
describe("spar daemon end to end", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  const secretPhrase = "the-launch-code-is-PLAINTEXT-CANARY-7731";

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url);
    // A user plugin whose code must never run unless its move is called: importing it leaves a mark.
    const tripwire = join(home, "plugins", "moves-tripwire");
    mkdirSync(tripwire, { recursive: true });
    writeFileSync(
      join(tripwire, "plugin.json"),
      JSON.stringify({
        id: "moves-tripwire",
        version: "1.0.0",
        kernel: "^0.1.0",
        kind: "moves",
        description: "Test plugin that records when its code is imported.",
        entry: "index.js",
        activation: ["onMove:tripwire"],
        contributes: {
          moves: [
            {
              name: "tripwire",
              description: "Trips.",
              capability: "memory",
              input_schema: { type: "object" },
            },
          ],
        },
      }),
    );
    writeFileSync(
      join(tripwire, "index.js"),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(join(home, "tripwire-imported"))}, "yes");\n` +
        `export default { id: "moves-tripwire", apply(api) { api.hooks.move.resolve.tap((n) => n === "tripwire" ? { name: n, run: async () => "tripped" } : undefined); } };\n`,
    );
    // The README's example third-party plugin, installed the way a user would.
    cpSync(
      join(import.meta.dirname, "..", "..", "examples", "plugins", "moves-dice"),
      join(home, "plugins", "moves-dice"),
      {
        recursive: true,
      },
    );
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("prints its version", async () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "package.json"), "utf8")) as {
      version: string;
    };
    const result = await runCli(home, ["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(pkg.version);
  });

  it("answers health with status and version only", async () => {
    const { status, body } = await daemon.request("GET", "/api/v1/health");
    expect(status).toBe(200);
    expect(Object.keys(body as object).sort()).toEqual(["status", "version"]);
  });

  it("spawned the default fighter with full access at start", async () => {
    const { status, body } = await daemon.request<{ fighters: FighterRecord[] }>("GET", "/api/v1/fighters");
    expect(status).toBe(200);
    const spar = body.fighters.find((f) => f.name === "spar");
    expect(spar?.capabilities).toEqual([{ type: "full_access" }]);
    expect(spar?.status).toBe("idle");
    expect(spar?.model).toMatchObject({ provider: "openai", model: "fake-model" });
  });

  it("lists plugins from manifests without importing any plugin code", async () => {
    const result = await daemon.cli(["plugin", "list", "--json"]);
    expect(result.code).toBe(0);
    const { plugins } = JSON.parse(result.stdout) as { plugins: { id: string; source: string }[] };
    expect(plugins.map((p) => p.id)).toEqual(
      expect.arrayContaining([
        "arena-http",
        "moves-memory",
        "provider-openai",
        "store-sqlite",
        "moves-tripwire",
      ]),
    );
    expect(plugins.find((p) => p.id === "moves-tripwire")?.source).toBe("user");
    const moves = await daemon.cli(["move", "list", "--json"]);
    expect(JSON.parse(moves.stdout).moves.map((m: { name: string }) => m.name)).toContain("tripwire");
    // Neither the CLI's listing nor the running daemon imported the tripwire plugin.
    expect(existsSync(join(home, "tripwire-imported"))).toBe(false);
  });

  it("spawns from a manifest and from a template, and refuses bad manifests", async () => {
    const created = await daemon.request<FighterRecord>("POST", "/api/v1/fighters", {
      manifest: { name: "historian", description: "Knows dates", system_prompt: "You are a historian." },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "historian",
      description: "Knows dates",
      status: "idle",
      weight_class: "middleweight",
      capabilities: [{ type: "memory" }],
      skills: [],
    });
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/);

    const unknownField = await daemon.request<{ error: { code: string; message: string } }>(
      "POST",
      "/api/v1/fighters",
      {
        manifest: { name: "x", description: "d", system_prompt: "p", favourite_colour: "red" },
      },
    );
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error.code).toBe("VALIDATION_FAILED");
    expect(unknownField.body.error.message).toContain("favourite_colour");

    const missing = await daemon.request<{ error: { code: string } }>("POST", "/api/fighters", {
      manifest: { name: "x" },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe("VALIDATION_FAILED");

    const duplicate = await daemon.request<{ error: { code: string } }>("POST", "/api/v1/fighters", {
      manifest: { name: "historian", description: "again", system_prompt: "p" },
    });
    expect(duplicate.status).toBe(409);

    const cli = await daemon.cli(["fighter", "spawn", "oracle"]);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/Spawned oracle/);
    const list = await daemon.cli(["fighter", "list", "--json"]);
    const names = (JSON.parse(list.stdout) as { fighters: FighterRecord[] }).fighters.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(["spar", "historian", "oracle"]));

    const badKind = await daemon.cli(["fighter", "spawn", "wizard"]);
    expect(badKind.code).not.toBe(0);
    expect(badKind.stderr).toMatch(/^spar: unknown fighter kind "wizard".*\(VALIDATION_FAILED\)\n$/);
  });

  it("answers a message through the model and stores every message of the turn", async () => {
    fake.reset();
    const { status, body } = await daemon.request<FighterMessageResult>(
      "POST",
      "/api/v1/fighters/spar/message",
      {
        message: `Remember: ${secretPhrase}`,
      },
    );
    expect(status).toBe(200);
    expect(body.response).toBe(`echo: Remember: ${secretPhrase}`);
    expect(body.usage.input_tokens).toBeGreaterThan(0);
    expect(body.usage.output_tokens).toBeGreaterThan(0);
    expect(body).toMatchObject({ iterations: 1, tool_calls: [], model: "fake-model", stop_reason: "end" });
    const sent = fake.requests[0]?.body;
    expect(sent?.messages[0]).toMatchObject({ role: "system" });
    expect(fake.requests[0]?.headers.authorization).toBe("Bearer sk-test-secret-0000");

    const messages = await daemon.request<{ messages: StoredMessage[] }>(
      "GET",
      `/api/v1/bouts/${body.bout_id}/messages`,
    );
    expect(messages.body.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("chats with the default fighter through the CLI", async () => {
    const result = await daemon.cli(["chat", "hello there"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("echo: hello there\n");
    const viaName = await daemon.cli(["chat", "hi historian", "--fighter", "historian"]);
    expect(viaName.stdout).toBe("echo: hi historian\n");
  });

  it("runs a tool call round trip through a move", async () => {
    fake.reset();
    fake.enqueue({
      tool_calls: [{ name: "memory_store", arguments: { key: "favourite tea", value: "smoky lapsang" } }],
    });
    const stored = await daemon.request<FighterMessageResult>("POST", "/api/v1/fighters/historian/message", {
      message: "Remember my favourite tea is smoky lapsang",
    });
    expect(stored.status, JSON.stringify(stored.body)).toBe(200);
    expect(stored.body.tool_calls).toEqual([{ name: "memory_store", ok: true }]);
    expect(stored.body.iterations).toBe(2);
    expect(stored.body.response).toBe('done: {"stored":"favourite tea"}');
    // The model was offered the moves of the `memory` capability (not the example's `dice`) and the
    // skill moves every fighter has, and got the tool result back with its call id.
    const firstRequest = fake.requests[0]?.body;
    expect(firstRequest?.tools?.map((t) => t.function.name).sort()).toEqual([
      "conversation_search",
      "memory_recall",
      "memory_store",
      "skill_load",
      "skill_search",
      "tripwire",
    ]);
    const second = fake.requests[1]?.body?.messages ?? [];
    expect(second.at(-1)).toMatchObject({ role: "tool", content: '{"stored":"favourite tea"}' });

    fake.enqueue({ tool_calls: [{ name: "memory_recall", arguments: { query: "tea" } }] });
    const recalled = await daemon.request<FighterMessageResult>("POST", "/api/v1/fighters/historian/chat", {
      message: "What tea do I like?",
    });
    expect(recalled.body.tool_calls).toEqual([{ name: "memory_recall", ok: true }]);
    expect(recalled.body.response).toContain("smoky lapsang");
  });

  it("runs a move from a user-installed plugin (the README's example)", async () => {
    fake.reset();
    fake.enqueue({ tool_calls: [{ name: "dice_roll", arguments: { n: 3, sides: 6 } }] });
    const { body } = await daemon.request<FighterMessageResult>("POST", "/api/v1/fighters/spar/message", {
      message: "roll three dice",
    });
    expect(body.tool_calls).toEqual([{ name: "dice_roll", ok: true }]);
    const result = JSON.parse(body.response.replace(/^done: /, "")) as { rolls: number[]; total: number };
    expect(result.rolls).toHaveLength(3);
    for (const r of result.rolls) expect(r).toBeGreaterThanOrEqual(1);
    for (const r of result.rolls) expect(r).toBeLessThanOrEqual(6);
    expect(result.total).toBe(result.rolls.reduce((a, b) => a + b, 0));
    const plugins = await daemon.request<{ plugins: { id: string; active: boolean }[] }>(
      "GET",
      "/api/v1/plugins",
    );
    expect(plugins.body.plugins.find((p) => p.id === "moves-dice")?.active).toBe(true);
    expect(plugins.body.plugins.find((p) => p.id === "moves-tripwire")?.active).toBe(false);
  });

  it("shows a fighter as fighting while its turn runs, then idle", async () => {
    fake.reset();
    fake.enqueue({ text: "slow answer", delay_ms: 1500 });
    const pending = daemon.request<FighterMessageResult>("POST", "/api/v1/fighters/historian/message", {
      message: "take your time",
    });
    let seen = "";
    for (let i = 0; i < 100 && seen !== "fighting"; i++) {
      seen = (await daemon.request<FighterRecord>("GET", "/api/v1/fighters/historian")).body.status;
      if (seen !== "fighting") await new Promise((r) => setTimeout(r, 10));
    }
    expect(seen).toBe("fighting");
    expect((await pending).body.response).toBe("slow answer");
    expect((await daemon.request<FighterRecord>("GET", "/api/v1/fighters/historian")).body.status).toBe(
      "idle",
    );
  });

  it("refuses a move without the capability grant and tells the model CAPABILITY_DENIED", async () => {
    await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name: "mute", description: "no grants", system_prompt: "p", capabilities: [] },
    });
    fake.reset();
    fake.enqueue({ tool_calls: [{ name: "memory_store", arguments: { key: "k", value: "v" } }] });
    const { body } = await daemon.request<FighterMessageResult>("POST", "/api/v1/fighters/mute/message", {
      message: "store something",
    });
    expect(body.tool_calls).toEqual([{ name: "memory_store", ok: false }]);
    // Only the skill moves, which need no grant.
    expect(fake.requests[0]?.body?.tools?.map((t) => t.function.name).sort()).toEqual([
      "skill_load",
      "skill_search",
    ]);
    const toolMessage = fake.requests[1]?.body?.messages.at(-1);
    expect(toolMessage?.role).toBe("tool");
    expect(JSON.parse(String(toolMessage?.content)).error.code).toBe("CAPABILITY_DENIED");
  });

  it("stops a turn that repeats the same tool call", async () => {
    fake.reset();
    const call = { name: "memory_recall", arguments: { query: "same" } };
    fake.enqueue(
      { tool_calls: [call] },
      { tool_calls: [call] },
      { tool_calls: [call] },
      { tool_calls: [call] },
    );
    const { body } = await daemon.request<FighterMessageResult>("POST", "/api/v1/fighters/spar/message", {
      message: "loop please",
    });
    expect(body.stop_reason).toBe("loop_guard");
    expect(body.response).toMatch(/memory_recall with the same arguments 4 times/);
    expect(fake.requests).toHaveLength(4);
  });

  it("delivers fighter-to-fighter messages marked with the sender", async () => {
    fake.reset();
    const { status, body } = await daemon.request<FighterMessageResult>(
      "POST",
      "/api/fighters/historian/message-to/oracle",
      { content: "What year is it?" },
    );
    expect(status).toBe(200);
    expect(body.response).toContain('[message from fighter "historian"');
    expect(body.response).toContain("What year is it?");
  });

  it("answers 404 for unknown fighters and bouts, on both route families", async () => {
    for (const path of ["/api/v1/fighters/nobody/message", "/api/fighters/nobody/message"]) {
      const r = await daemon.request<{ error: { code: string } }>("POST", path, { message: "hi" });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("FIGHTER_NOT_FOUND");
    }
    const get = await daemon.request<{ error: { code: string } }>(
      "GET",
      "/api/v1/fighters/00000000-0000-4000-8000-000000000000",
    );
    expect(get.body.error.code).toBe("FIGHTER_NOT_FOUND");
    const bout = await daemon.request<{ error: { code: string } }>("GET", "/api/v1/bouts/nope/messages");
    expect(bout.status).toBe(404);
    const route = await daemon.request<{ error: { code: string } }>("GET", "/api/v1/nothing-here");
    expect(route.body.error.code).toBe("NOT_FOUND");
    const cli = await daemon.cli(["chat", "hi", "--fighter", "nobody"]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/FIGHTER_NOT_FOUND/);
  });

  it("answers 400 for bad bodies and 413 for oversized ones", async () => {
    const cases: [unknown, string][] = [
      [{}, "message"],
      [{ message: 42 }, "message"],
      [{ message: "hi", extra: true }, "extra"],
      ["{not json", ""],
    ];
    for (const [body, mentions] of cases) {
      const r = await daemon.request<{ error: { code: string; message: string } }>(
        "POST",
        "/api/v1/fighters/spar/message",
        body,
      );
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("VALIDATION_FAILED");
      expect(r.body.error.message).toContain(mentions);
    }
    const big = await daemon.request<{ error: { code: string } }>("POST", "/api/v1/fighters/spar/message", {
      message: "x".repeat(1_100_000),
    });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe("PAYLOAD_TOO_LARGE");
  });

  it("kills fighters over HTTP and the CLI", async () => {
    const { body } = await daemon.request<FighterRecord>("POST", "/api/v1/fighters", {
      manifest: { name: "doomed", description: "d", system_prompt: "p" },
    });
    const killed = await daemon.request("DELETE", `/api/v1/fighters/${body.id}`);
    expect(killed.status).toBe(204);
    expect((await daemon.request("GET", `/api/v1/fighters/${body.id}`)).status).toBe(404);
    expect((await daemon.request("DELETE", `/api/v1/fighters/${body.id}`)).status).toBe(404);
    const cli = await daemon.cli(["fighter", "kill", "mute"]);
    expect(cli.code).toBe(0);
    expect((await daemon.request("GET", "/api/v1/fighters/mute")).status).toBe(404);
  });

  it("shows status through the CLI", async () => {
    const result = await daemon.cli(["status"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Spar \d+\.\d+\.\d+ is running/);
    expect(result.stdout).toMatch(/historian\s+idle/);
  });

  it("refuses a second daemon on a port in use, naming the port and the process", async () => {
    const other = tempHome();
    writeConfig(other, port, fake.url);
    const result = await runCli(other, ["start"]);
    removeHome(other);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`port ${port}`);
    expect(result.stderr).toContain(`pid ${daemon.process.pid}`);
    expect(result.stderr).toMatch(/Fix: stop that process/);
  });

  it("keeps fighters and messages across a restart, encrypted on disk", async () => {
    const before = await daemon.request<{ bouts: { id: string }[] }>(
      "GET",
      "/api/v1/fighters/historian/bouts",
    );
    expect(before.body.bouts.length).toBeGreaterThan(0);
    expect(await daemon.stop()).toBe(0);
    expect(existsSync(join(home, "spar.pid"))).toBe(false);

    for (const file of readdirSync(home).filter((f) => f.startsWith("spar.db"))) {
      expect(readFileSync(join(home, file)).includes(Buffer.from("PLAINTEXT-CANARY"))).toBe(false);
      expect(readFileSync(join(home, file)).includes(Buffer.from("smoky lapsang"))).toBe(false);
    }
    for (const file of ["master.key", "spar.db", "spar.db.salt", join("keys", "cli.key")]) {
      expect(statSync(join(home, file)).mode & 0o777).toBe(0o600);
    }

    // A wrong master key refuses to start and leaves the database exactly as it was.
    const dbHash = createHash("sha256")
      .update(readFileSync(join(home, "spar.db")))
      .digest("hex");
    const wrong = await runCli(home, ["start"], { SPAR_MASTER_KEY: "not-the-key" });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/STORE_KEY_INVALID/);
    expect(
      createHash("sha256")
        .update(readFileSync(join(home, "spar.db")))
        .digest("hex"),
    ).toBe(dbHash);

    daemon = await startDaemon(home, port);
    const fighters = await daemon.request<{ fighters: FighterRecord[] }>("GET", "/api/v1/fighters");
    const names = fighters.body.fighters.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(["spar", "historian", "oracle"]));
    expect(names).not.toContain("doomed");
    expect(names.filter((n) => n === "spar")).toHaveLength(1);
    const after = await daemon.request<{ bouts: { id: string }[] }>(
      "GET",
      "/api/v1/fighters/historian/bouts",
    );
    expect(after.body.bouts.map((b) => b.id)).toEqual(before.body.bouts.map((b) => b.id));
    const spar = await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/spar/bouts");
    const boutId = spar.body.bouts[0]?.id ?? "";
    const messages = await daemon.request<{ messages: StoredMessage[] }>(
      "GET",
      `/api/v1/bouts/${boutId}/messages`,
    );
    expect(messages.body.messages.some((m) => m.content.includes(secretPhrase))).toBe(true);
    expect(existsSync(join(home, "tripwire-imported"))).toBe(false);
  });
});
