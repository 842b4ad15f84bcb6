/**
 * Key scopes (issue 28 item 33) on a daemon that takes signed requests only: keys added with the
 * real CLI's `--scope`, then requests signed with each: `read` may GET and nothing else, `operator`
 * everything but backups, `chat:scribe` may message scribe and read its bouts and nothing else, over
 * HTTP, the WebSocket (frames and events) and the OpenAI-compatible endpoint. Every refusal is 403
 * `FORBIDDEN` naming the scope it needed.
 */
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { loadCliKey } from "../../lib/keys.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { type RawResponse, raw, signed } from "../helpers/http.js";

interface Key {
  id: string;
  privateKey: KeyObject;
}

describe("key scopes", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let admin: Key;
  const keys: Record<string, Key> = {};

  /** A request signed with `key`; a body is sent as JSON. */
  function call(key: Key, method: string, path: string, body?: unknown): Promise<RawResponse> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    return raw(daemon.port, method, path, signed(daemon.port, method, path, key, text), text);
  }

  function expectForbidden(response: RawResponse, scope: string): void {
    expect(response.status, response.body.toString()).toBe(403);
    const { error } = response.json<{ error: { code: string; message: string; required_scope: string } }>();
    expect(error.code).toBe("FORBIDDEN");
    expect(error.required_scope).toBe(scope);
    expect(error.message).toContain(`needs scope ${scope}`);
  }

  /** OpenAI's error shape on `/v1`: the scope is in the message. */
  function expectOpenAiForbidden(response: RawResponse, scope: string): void {
    expect(response.status, response.body.toString()).toBe(403);
    expect(response.json().error.message).toContain(`needs scope ${scope}`);
  }

  /** Adds a key with the real CLI: `spar key add <name> <file> --scope <scope>`. */
  async function addKey(name: string, scope: string): Promise<Key> {
    const pair = generateKeyPairSync("ed25519");
    const file = join(home, `${name}.pub`);
    writeFileSync(file, pair.publicKey.export({ type: "spki", format: "pem" }));
    const added = await daemon.cli(["key", "add", name, file, "--scope", scope]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain(`with scope ${scope}`);
    return { id: name, privateKey: pair.privateKey };
  }

  /** A WebSocket opened with a ticket the key asked for; frames are collected as they come. */
  async function socket(key: Key): Promise<{ ws: WebSocket; frames: Record<string, unknown>[] }> {
    const issued = await call(key, "POST", "/api/v1/ws/ticket");
    expect(issued.status).toBe(200);
    const { ticket } = issued.json<{ ticket: string }>();
    const ws = new WebSocket(`ws://127.0.0.1:${daemon.port}/api/v1/ws?ticket=${ticket}`);
    const frames: Record<string, unknown>[] = [];
    ws.on("message", (data) => frames.push(JSON.parse(String(data)) as Record<string, unknown>));
    await new Promise((done, fail) => {
      ws.once("open", done);
      ws.once("error", fail);
    });
    return { ws, frames };
  }

  async function until<T>(find: () => T | undefined): Promise<T> {
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      await new Promise((done) => setImmediate(done));
    }
  }

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
    const cliKey = loadCliKey(home);
    if (!cliKey) throw new Error("no CLI key");
    admin = { id: "cli", privateKey: cliKey };
    keys.read = await addKey("reader", "read");
    keys.operator = await addKey("ops", "operator");
    keys.chat = await addKey("scribe-only", "chat:scribe");
    const spawned = await call(admin, "POST", "/api/v1/fighters", { template: "oracle", name: "scribe" });
    expect(spawned.status, spawned.body.toString()).toBe(201);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("lists each key's scope, keeps the CLI's key admin, and refuses a scope it does not know", async () => {
    const listed = await daemon.cli(["key", "list", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    const { keys: all } = JSON.parse(listed.stdout) as { keys: { name: string; scope: string }[] };
    expect(all.map((k) => [k.name, k.scope])).toEqual([
      ["cli", "admin"],
      ["ops", "operator"],
      ["reader", "read"],
      ["scribe-only", "chat:scribe"],
    ]);
    const bad = await daemon.cli(["key", "add", "typo", join(home, "reader.pub"), "--scope", "reed"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('unknown scope "reed"');
    const who = await call(keys.chat as Key, "GET", "/api/v1/key");
    expect(who.json()).toEqual({
      key: "scribe-only",
      scope: "chat:scribe",
      fighters: ["scribe"],
      may: { read: false, operate: false, admin: false },
    });
  });

  it("lets a read key GET and nothing else", async () => {
    const read = keys.read as Key;
    expect((await call(read, "GET", "/api/v1/fighters")).status).toBe(200);
    expect((await call(read, "GET", "/api/v1/gorillas")).status).toBe(200);
    expectForbidden(await call(read, "POST", "/api/v1/fighters/spar/message", { message: "hi" }), "operator");
    expectForbidden(await call(read, "POST", "/api/v1/fighters", { template: "oracle" }), "operator");
    expectForbidden(await call(read, "POST", "/api/v1/gorillas/alpha/unleash"), "operator");
    expectOpenAiForbidden(
      await call(read, "POST", "/v1/chat/completions", {
        model: "spar",
        messages: [{ role: "user", content: "x" }],
      }),
      "operator",
    );
  });

  it("lets an operator do all but an admin's work, and a route the table does not name is an admin's", async () => {
    const ops = keys.operator as Key;
    const spawned = await call(ops, "POST", "/api/v1/fighters", { template: "oracle", name: "clerk" });
    expect(spawned.status, spawned.body.toString()).toBe(201);
    expect((await call(ops, "POST", "/api/v1/fighters/clerk/message", { message: "hello" })).status).toBe(
      200,
    );
    expect((await call(ops, "DELETE", "/api/v1/fighters/clerk")).status).toBe(204);
    expectForbidden(await call(ops, "POST", "/api/v1/store/backup", { path: join(home, "b.db") }), "admin");
    expectForbidden(await call(ops, "POST", "/api/v1/keys", { name: "x" }), "admin");
  });

  it("lets a chat key message its fighter and read its bouts, and refuses it everything else", async () => {
    const chat = keys.chat as Key;
    const reply = await call(chat, "POST", "/api/v1/fighters/scribe/message", { message: "note this" });
    expect(reply.status, reply.body.toString()).toBe(200);
    const { bout_id } = reply.json<{ bout_id: string }>();
    expect((await call(chat, "GET", "/api/v1/fighters/scribe/bouts")).status).toBe(200);
    expect((await call(chat, "GET", `/api/v1/bouts/${bout_id}/messages`)).status).toBe(200);

    // Another fighter, its bouts, the lists and key management are not this key's.
    const other = await call(admin, "POST", "/api/v1/fighters/spar/message", { message: "secret plan" });
    const otherBout = other.json<{ bout_id: string }>().bout_id;
    expectForbidden(
      await call(chat, "POST", "/api/v1/fighters/spar/message", { message: "hi" }),
      "operator or chat:spar",
    );
    expectForbidden(await call(chat, "GET", `/api/v1/bouts/${otherBout}/messages`), "read");
    expectForbidden(await call(chat, "GET", "/api/v1/fighters/spar/bouts"), "read or chat:spar");
    const list = await call(chat, "GET", "/api/v1/fighters");
    expect(list.status).toBe(403);
    expect(list.json().error.message).toContain("needs scope read");
    expectForbidden(await call(chat, "POST", "/api/v1/keys", { name: "mine", key: "x" }), "admin");
    expectForbidden(await call(chat, "POST", "/api/v1/store/backup", { path: join(home, "c.db") }), "admin");

    // The OpenAI-compatible endpoint: `model` is the fighter.
    const messages = [{ role: "user", content: "hi" }];
    expect((await call(chat, "POST", "/v1/chat/completions", { model: "scribe", messages })).status).toBe(
      200,
    );
    expectOpenAiForbidden(
      await call(chat, "POST", "/v1/chat/completions", { model: "spar", messages }),
      "operator or chat:spar",
    );
  });

  it("checks WebSocket chats and events against the key's scope", async () => {
    const { ws, frames } = await socket(keys.chat as Key);
    ws.send(JSON.stringify({ type: "subscribe", kinds: ["*"] }));
    await until(() => frames.find((f) => f.type === "subscribed"));
    ws.send(JSON.stringify({ type: "chat", id: "a", fighter_id: "spar", message: "hi" }));
    const refused = await until(() => frames.find((f) => f.type === "error" && f.id === "a"));
    expect(refused).toMatchObject({ error: { code: "FORBIDDEN", required_scope: "chat:spar" } });

    // Another key's turn with spar is not this key's to see; its own turn with scribe is.
    expect((await call(admin, "POST", "/api/v1/fighters/spar/message", { message: "private" })).status).toBe(
      200,
    );
    ws.send(JSON.stringify({ type: "chat", id: "b", fighter_id: "scribe", message: "hello" }));
    await until(() => frames.find((f) => f.type === "reply" && f.id === "b"));
    const scribe = (await call(admin, "GET", "/api/v1/fighters/scribe")).json<{ id: string }>().id;
    const events = frames.filter((f) => f.type === "event");
    expect(events.length).toBeGreaterThan(0);
    expect(events.filter((e) => e.fighter_id !== scribe)).toEqual([]);
    ws.close();

    const reader = await socket(keys.read as Key);
    reader.ws.send(JSON.stringify({ type: "chat", id: "c", fighter_id: "spar", message: "hi" }));
    const readRefused = await until(() => reader.frames.find((f) => f.type === "error" && f.id === "c"));
    expect(readRefused).toMatchObject({ error: { code: "FORBIDDEN" } });
    reader.ws.close();
  });

  it("signs with a scoped key through the real CLI's spar sign", async () => {
    const file = join(home, "reader.key");
    writeFileSync(file, (keys.read as Key).privateKey.export({ type: "pkcs8", format: "pem" }));
    for (const [method, status] of [
      ["GET", 200],
      ["DELETE", 403],
    ] as const) {
      const path = method === "GET" ? "/api/v1/fighters/spar" : "/api/v1/fighters/scribe";
      const out = await daemon.cli(["sign", method, path, "--key", file, "--key-id", "reader", "--json"]);
      expect(out.code, out.stderr).toBe(0);
      const { url, headers } = JSON.parse(out.stdout) as { url: string; headers: Record<string, string> };
      expect((await fetch(url, { method, headers })).status).toBe(status);
    }
  });
});
