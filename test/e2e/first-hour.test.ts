import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { FighterMessageResult, StoredMessage } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { raw } from "../helpers/http.js";

type ErrorBody = { error: { code: string; message: string; [k: string]: unknown } };

/** What a new user tripped on, through the real daemon and CLI. */
describe("a new user's first hour", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // A small context window, so oversized messages and compaction show at test sizes.
    writeConfig(
      home,
      port,
      fake.url,
      'context_window = 2000\n\n[memory.compaction]\nstrategy = "truncate"\nkeep_recent = 6\n\n[creed]\nreflect = false\n',
    );
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("keeps the default fighter: it cannot be killed, and spar chat never dead-ends", async () => {
    const kill = await daemon.cli(["fighter", "kill", "spar"]);
    expect(kill.code).not.toBe(0);
    expect(kill.stderr).toMatch(/the default fighter "spar" cannot be killed.*\(CONFLICT\)/);
    const http = await daemon.request<ErrorBody>("DELETE", "/api/v1/fighters/spar");
    expect(http.status).toBe(409);
    const chat = await daemon.cli(["chat", "still there?"]);
    expect(chat.stdout).toBe("echo: still there?\n");
  });

  it("refuses one oversized message with the limit, instead of poisoning the fighter", async () => {
    const huge = "word ".repeat(200_000);
    const answer = await daemon.request<ErrorBody>("POST", "/api/v1/fighters/spar/message", {
      message: huge,
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(answer.body.error.message).toMatch(
      /one message may take at most half of the context window .*\(2000 tokens\), so 1000 tokens/,
    );
    expect(answer.body.error.limit_tokens).toBe(1000);
    // Nothing of it was stored, and the next message is answered as usual.
    const next = await daemon.request<FighterMessageResult>("POST", "/api/v1/fighters/spar/message", {
      message: "ok?",
    });
    expect(next.status).toBe(200);
  });

  it("compacts a context that keep_recent alone cannot bring under the threshold", async () => {
    await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name: "verbose", description: "d", system_prompt: "You talk a lot." },
    });
    // Each exchange is ~420 tokens: six kept messages (~1,260) alone pass 80% of 2,000.
    fake.setDefault(() => ({ text: `${"answer".repeat(6)} `.repeat(48) }));
    try {
      for (let i = 0; i < 5; i++) {
        const reply = await daemon.request("POST", "/api/v1/fighters/verbose/message", {
          message: `question ${i} ${"detail ".repeat(80)}`,
        });
        expect(reply.status).toBe(200);
      }
      await daemon.request("POST", "/api/v1/fighters/verbose/message", { message: "last" });
      const prompt = fake.requests.at(-1)?.body?.messages ?? [];
      const promptChars = prompt.reduce((n, m) => n + String(m.content).length, 0);
      // Under 80% of the window (2,000 tokens ≈ 8,000 characters), though keep_recent is 6.
      expect(promptChars).toBeLessThan(6_400);
      const bout = (
        await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/verbose/bouts")
      ).body.bouts[0]?.id;
      const stored = (
        await daemon.request<{ messages: StoredMessage[] }>("GET", `/api/v1/bouts/${bout}/messages`)
      ).body.messages;
      expect(stored.filter((m) => !m.compacted).length).toBeLessThan(6);
    } finally {
      fake.reset();
    }
  });

  it("answers every route in the one error shape: 415, 426, bad URLs, long ids", async () => {
    const text = await raw(daemon.port, "POST", "/api/v1/fighters", { "content-type": "text/plain" }, "hi");
    expect(text.status).toBe(415);
    expect(text.json().error).toMatchObject({
      code: "UNSUPPORTED_MEDIA_TYPE",
      message: expect.stringContaining("application/json"),
    });
    for (const path of ["/api/v1/ws", "/api/ws"]) {
      const plain = await raw(daemon.port, "GET", path);
      expect(plain.status).toBe(426);
      expect(plain.json().error.code).toBe("UPGRADE_REQUIRED");
    }
    const badUrl = await raw(daemon.port, "GET", "/api/v1/fighters/%ZZ");
    expect(badUrl.status).toBe(400);
    expect(badUrl.json().error.code).toBe("VALIDATION_FAILED");
    const long = await raw(daemon.port, "GET", `/api/v1/fighters/${"x".repeat(300)}`);
    expect(long.status).toBe(400);
    expect(long.json().error.message).toMatch(/"params.id" must NOT have more than 200 characters/);
  });

  it("serves the WebSocket under /api/ws too, and echoes a refused chat frame's id", async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${daemon.port}/api/ws`);
    const frame = new Promise<{ type: string; id?: string; error: { code: string } }>((done) =>
      ws.once("message", (d) => done(JSON.parse(String(d)))),
    );
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ type: "chat", id: "c-7", fighter_id: "spar" }));
    expect(await frame).toMatchObject({ type: "error", id: "c-7", error: { code: "VALIDATION_FAILED" } });
    ws.close();
  });

  it("says what is allowed in validation errors, in sentences", async () => {
    const weight = await daemon.request<ErrorBody>("POST", "/api/v1/fighters", {
      manifest: { name: "w", description: "d", system_prompt: "p", weight_class: "giant" },
    });
    expect(weight.body.error.message).toBe(
      '"manifest.weight_class" must be one of: flyweight, lightweight, middleweight, heavyweight',
    );
    const url = await daemon.request<ErrorBody>("POST", "/api/v1/fighters", {
      manifest: {
        name: "u",
        description: "d",
        system_prompt: "p",
        model: { provider: "ollama", model: "m", base_url: "ftp://x" },
      },
    });
    expect(url.body.error.message).toBe('"manifest.model.base_url" must be an http:// or https:// URL');
  });

  it("takes any printable name, refuses invisible ones, and makes a safe folder of it", async () => {
    const named = await daemon.request<{ name: string }>("POST", "/api/v1/fighters", {
      manifest: {
        name: "Zoë the 🐉 of Ål",
        description: "d",
        system_prompt: "p",
        capabilities: [{ type: "memory" }],
      },
    });
    expect(named.status).toBe(201);
    expect(
      (await daemon.request("GET", `/api/v1/fighters/${encodeURIComponent("Zoë the 🐉 of Ål")}`)).status,
    ).toBe(200);
    for (const bad of ["zero\u200bwidth", "bidi\u202eevil", "tab\tinside", "a/b", "  "]) {
      const refused = await daemon.request<ErrorBody>("POST", "/api/v1/fighters", {
        manifest: { name: bad, description: "d", system_prompt: "p" },
      });
      expect(refused.status, JSON.stringify(bad)).toBe(400);
    }
    // Its workspace folder is a slug of the name, inside workspaces/.
    fake.enqueue({ tool_calls: [{ name: "memory_store", arguments: { key: "k", value: "v" } }] });
    await daemon.request("POST", `/api/v1/fighters/${encodeURIComponent("Zoë the 🐉 of Ål")}/message`, {
      message: "hi",
    });
    const spaces = existsSync(join(home, "workspaces")) ? readdirSync(join(home, "workspaces")) : [];
    for (const dir of spaces) expect(dir).toMatch(/^[\p{L}\p{N}._-]+$/u);
  });

  it("promises only what exists: every capability a template grants is backed by a move", async () => {
    const moves = (
      await daemon.request<{ moves: { name: string; capability: string }[] }>("GET", "/api/v1/moves")
    ).body.moves;
    const wanted: Record<string, string[]> = {
      coder: ["file_read", "file_write", "file_edit", "file_list", "shell_exec", "memory_store"],
      scout: ["web_fetch", "web_search", "memory_store"],
      scribe: ["file_read", "file_edit", "memory_store"],
      oracle: ["memory_store", "memory_recall"],
    };
    for (const [kind, names] of Object.entries(wanted)) {
      const spawned = await daemon.request<{
        id: string;
        description: string;
        capabilities: { type: string }[];
      }>("POST", "/api/v1/fighters", { template: kind, name: `${kind}-honest` });
      expect(spawned.status).toBe(201);
      expect(spawned.body.description).not.toMatch(/tool packs|today it has/);
      for (const grant of spawned.body.capabilities) {
        expect(
          moves.some((m) => m.capability === grant.type),
          `${kind}: ${grant.type}`,
        ).toBe(true);
      }
      const types = new Set(spawned.body.capabilities.map((g) => g.type));
      for (const name of names) {
        const move = moves.find((m) => m.name === name);
        expect(move && types.has(move.capability), `${kind} may use ${name}`).toBe(true);
      }
      if (kind === "oracle") expect([...types]).toEqual(["memory"]);
    }
  });
});
