import { statSync } from "node:fs";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { loadCliKey } from "../../lib/keys.js";
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
import { queryValue } from "../helpers/db.js";
import { raw, signed } from "../helpers/http.js";

/** Bytes of the database and its WAL together. */
function dbBytes(home: string): number {
  const size = (f: string) => {
    try {
      return statSync(join(home, f)).size;
    } catch {
      return 0;
    }
  };
  return size("spar.db") + size("spar.db-wal");
}

/** Sends `text` as-is over TCP and returns the status line's code. */
function rawHttp(port: number, text: string): Promise<number> {
  return new Promise((done, fail) => {
    const socket = connect(port, "127.0.0.1", () => socket.end(text));
    let data = "";
    socket.on("data", (d: Buffer) => {
      data += d.toString();
    });
    socket.on("close", () => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0)));
    socket.on("error", fail);
  });
}

/** Opens a WebSocket; a refused upgrade resolves with its HTTP status and error code instead. */
function openSocket(
  url: string,
  localAddress?: string,
): Promise<{ ws: WebSocket; status?: number; code?: string }> {
  return new Promise((done) => {
    const ws = new WebSocket(url, localAddress ? { localAddress } : {});
    ws.once("open", () => done({ ws }));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString();
      });
      res.on("end", () => {
        const code = (JSON.parse(body) as { error: { code: string } }).error.code;
        done({ ws, status: res.statusCode, code });
      });
    });
  });
}

describe("API hardening: nonces, rate limits and connection caps", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  const cli = () => {
    const privateKey = loadCliKey(home);
    if (!privateKey) throw new Error("no CLI key");
    return { id: "cli", privateKey };
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      "\n[api]\nrate_limit_per_minute = 40\nwebsocket_max_per_peer = 3\nwebsocket_max_total = 4\nmax_connections = 24\n",
    );
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("refuses an overlong nonce before storing anything, so signed clients cannot fill the disk", async () => {
    const before = dbBytes(home);
    for (let i = 0; i < 30; i++) {
      const headers = signed(port, "GET", "/api/v1/health", cli(), undefined, {
        nonce: `${i}-${"n".repeat(15_000)}`,
      });
      const answer = await raw(port, "GET", "/api/v1/health", headers);
      expect(answer.status).toBe(401);
      expect(answer.json().error.message).toMatch(/nonce is longer than 128 characters/);
    }
    expect(dbBytes(home) - before).toBeLessThan(64 * 1024);
  });

  it("does not let a tampered copy burn the genuine request's nonce", async () => {
    const body = JSON.stringify({ manifest: { name: "genuine", description: "d", system_prompt: "p" } });
    const headers = signed(port, "POST", "/api/v1/fighters", cli(), body);
    const evil = JSON.stringify({ manifest: { name: "forged", description: "d", system_prompt: "p" } });
    const copy = await raw(port, "POST", "/api/v1/fighters", headers, evil);
    expect(copy.status).toBe(401);
    expect(copy.json().error.message).toMatch(/does not match its Content-Digest/);
    const genuine = await raw(port, "POST", "/api/v1/fighters", headers, body);
    expect(genuine.status).toBe(201);
    expect((await raw(port, "POST", "/api/v1/fighters", headers, body)).status).toBe(401);
  });

  it("rate-limits before a nonce is stored, and counts WebSocket chats against the same limit", async () => {
    const stored = async () => Number(await queryValue(home, "SELECT count(*) FROM nonces"));
    const before = await stored();
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      const headers = signed(port, "GET", "/api/v1/fighters", cli(), undefined, { nonce: `burst-${i}` });
      statuses.push((await raw(port, "GET", "/api/v1/fighters", headers)).status);
    }
    const limited = statuses.filter((s) => s === 429).length;
    expect(limited).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    // Only the admitted requests left a nonce behind.
    expect((await stored()) - before).toBe(60 - limited);

    // The unsigned peer has its own window: a WebSocket's chat frames spend it like HTTP messages.
    const { ws } = await openSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
    const answers: { type: string; id?: string; error?: { code: string; retry_after_s?: number } }[] = [];
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as (typeof answers)[number];
      if (frame.type === "reply" || frame.type === "error") answers.push(frame);
    });
    for (let i = 0; i < 45; i++) {
      ws.send(JSON.stringify({ type: "chat", id: `c${i}`, fighter_id: "spar", message: `hi ${i}` }));
    }
    await expect.poll(() => answers.length, { timeout: 20_000 }).toBe(45);
    const refused = answers.filter((a) => a.type === "error");
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.error?.code).toBe("RATE_LIMITED");
      expect(r.error?.retry_after_s).toBeGreaterThan(0);
      expect(r.id).toMatch(/^c\d+$/);
    }
    ws.close();
  });

  it("caps open WebSockets per peer and in total, refusing before the upgrade", async () => {
    // Peers of their own (127.0.0.0/8 is all loopback), so earlier tests' rate windows do not count.
    const url = `ws://127.0.0.1:${port}/api/v1/ws`;
    const from = (peer: string) => openSocket(url, peer);
    const opened = await Promise.all([from("127.0.0.5"), from("127.0.0.5"), from("127.0.0.5")]);
    expect(opened.map((o) => o.status)).toEqual([undefined, undefined, undefined]);
    expect(await from("127.0.0.5")).toMatchObject({ status: 429, code: "TOO_MANY_CONNECTIONS" });
    // Another peer may open one more, until the total cap (4) is reached.
    const other = await from("127.0.0.6");
    expect(other.status).toBeUndefined();
    expect(await from("127.0.0.7")).toMatchObject({
      status: 429,
      code: "TOO_MANY_CONNECTIONS",
    });
    for (const { ws } of [...opened, other]) ws.close();
    await expect.poll(async () => (await from("127.0.0.5")).status, { timeout: 5_000 }).toBeUndefined();
  });

  it("caps open TCP connections", async () => {
    const sockets: Socket[] = [];
    const closedEarly: boolean[] = [];
    for (let i = 0; i < 40; i++) {
      const socket = connect(port, "127.0.0.1");
      sockets.push(socket);
      closedEarly.push(false);
      socket.on("close", () => {
        closedEarly[i] = true;
      });
      socket.on("error", () => undefined);
    }
    await expect
      .poll(() => closedEarly.filter(Boolean).length, { timeout: 5_000 })
      .toBeGreaterThanOrEqual(16);
    for (const s of sockets) s.destroy();
    await expect.poll(async () => (await daemon.request("GET", "/api/v1/health")).status).toBe(200);
  });
});

describe("API hardening: Host, forwarding headers and prototype keys", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url);
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it.each([
    "[::1].attacker.example",
    "[::1]attacker",
    "127.0.0.1:evil",
    "localhost:foo@evil.example",
    "127.999.0.1",
    "localhost.attacker.example",
  ])("refuses an unsigned request with Host %s", async (host) => {
    const answer = await raw(port, "GET", "/api/v1/fighters", { host });
    expect(answer.status).toBe(401);
    expect(answer.json().error.message).toMatch(/is not a loopback name/);
  });

  it("accepts loopback Hosts with and without a port", async () => {
    for (const host of ["localhost", `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      expect((await raw(port, "GET", "/api/v1/fighters", { host })).status, host).toBe(200);
    }
  });

  it("refuses two Host headers", async () => {
    const status = await rawHttp(
      port,
      `GET /api/v1/fighters HTTP/1.1\r\nHost: localhost:${port}\r\nHost: evil.example\r\nConnection: close\r\n\r\n`,
    );
    expect(status).toBe(400);
  });

  it.each([
    "via",
    "true-client-ip",
    "x-client-ip",
    "client-ip",
    "x-cluster-client-ip",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-forwarded-port",
    "forwarded",
    "x-real-ip",
    "cf-connecting-ip",
  ])("treats %s as proxied and refuses it unsigned", async (header) => {
    const answer = await raw(port, "GET", "/api/v1/fighters", { [header]: "203.0.113.7" });
    expect(answer.status).toBe(401);
    expect(answer.json().error.message).toContain(`forwarding header (${header})`);
  });

  it("refuses prototype keys in bodies with a message that says why", async () => {
    const body = '{"manifest":{"name":"p","description":"d","system_prompt":"s","__proto__":{"admin":true}}}';
    const answer = await raw(port, "POST", "/api/v1/fighters", { "content-type": "application/json" }, body);
    expect(answer.status).toBe(400);
    expect(answer.json().error.code).toBe("VALIDATION_FAILED");
    expect(answer.json().error.message).toMatch(/"__proto__" \(at \/manifest\/__proto__\) is not allowed/);
    const ctor = await daemon.request<{ error: { message: string } }>("POST", "/api/v1/fighters", {
      template: "constructor",
    });
    expect(ctor.status).toBe(400);
    expect(ctor.body.error.message).toMatch(/unknown fighter kind "constructor"/);
    expect((await daemon.request("POST", "/api/v1/fighters", { template: "toString" })).status).toBe(400);
  });

  it("refuses prototype keys in a WebSocket frame", async () => {
    const { ws } = await openSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
    const frame = new Promise<{ type: string; error: { message: string } }>((done) =>
      ws.once("message", (d) => done(JSON.parse(String(d)))),
    );
    ws.send('{"type":"subscribe","kinds":["*"],"__proto__":{"polluted":true}}');
    const answer = await frame;
    expect(answer.type).toBe("error");
    expect(answer.error.message).toMatch(/"__proto__"/);
    ws.close();
  });

  it("answers what Node's parser refuses and unknown routes in the error envelope, echoing at most 100 characters (issue 28 item 18)", async () => {
    const huge = await raw(port, "GET", "/api/v1/health", { "x-padding": "a".repeat(20_000) });
    expect(huge.status).toBe(431);
    expect(huge.headers["content-type"]).toMatch(/^application\/json/);
    expect(huge.json()).toEqual({
      error: {
        code: "HEADERS_TOO_LARGE",
        message: "the request's headers are larger than this server accepts (16 KB)",
      },
    });

    const long = "a".repeat(3000);
    const route = await raw(port, "GET", `/api/v1/fighters/${long}`);
    expect(route.status).toBe(404);
    expect(route.json().error).toEqual({
      code: "NOT_FOUND",
      message: `no route GET /api/v1/fighters/${"a".repeat(83)}… (3017 characters)`,
    });
    // A quoted id in any route's message is cut the same way.
    const id = "b".repeat(150);
    const bout = await raw(port, "GET", `/api/v1/bouts/${id}/messages`);
    expect(bout.status).toBe(404);
    expect(bout.json().error).toEqual({
      code: "BOUT_NOT_FOUND",
      message: `no bout with id "${"b".repeat(100)}…" (150 characters)`,
    });
    for (const answer of [route, bout]) expect(answer.body.length).toBeLessThan(400);
  });

  it("checks WebSocket chat frames as strictly as HTTP bodies: unknown keys, the same field rules (issue 28 item 18)", async () => {
    const { ws } = await openSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
    const frames: { type: string; id?: string; error?: { code: string; message: string; path?: string } }[] =
      [];
    ws.on("message", (d) => frames.push(JSON.parse(String(d))));
    const answer = async (id: string) => {
      await expect.poll(() => frames.some((f) => f.id === id)).toBe(true);
      return frames.find((f) => f.id === id);
    };
    ws.send(JSON.stringify({ type: "chat", id: "extra", fighter_id: "spar", message: "hi", admin: true }));
    expect(await answer("extra")).toEqual({
      type: "error",
      id: "extra",
      error: { code: "VALIDATION_FAILED", message: 'unknown key "frame.admin"', path: "/frame/admin" },
    });
    // The HTTP body refuses the same key in the same words.
    const http = await daemon.request<{ error: { message: string } }>(
      "POST",
      "/api/v1/fighters/spar/message",
      {
        message: "hi",
        admin: true,
      },
    );
    expect(http.status).toBe(400);
    expect(http.body.error.message).toBe('unknown key "body.admin"');

    ws.send(JSON.stringify({ type: "chat", id: "bout", fighter_id: "spar", message: "hi", bout_id: "xyz" }));
    expect((await answer("bout"))?.error).toMatchObject({
      code: "VALIDATION_FAILED",
      message: '"frame.bout_id" must be a bout id (a UUID)',
    });
    ws.send(JSON.stringify({ type: "cancel", id: "gone", reason: "x" }));
    expect((await answer("gone"))?.error?.message).toBe('unknown key "frame.reason"');
    ws.send(JSON.stringify({ type: "subscribe", kinds: ["*"], filter: "x" }));
    await expect.poll(() => frames.some((f) => f.error?.message === 'unknown key "frame.filter"')).toBe(true);
    ws.close();
  });

  it.each([
    "[__proto__]\npolluted = true\n",
    "__proto__ = { polluted = true }\n",
    '["__proto__"]\npolluted = true\n',
    "[agent]\nconstructor = 1\n",
  ])("refuses config.toml with %j", async (toml) => {
    const other = tempHome();
    try {
      writeConfig(other, await freePort(), fake.url, `\n${toml}`);
      const start = await runCli(other, ["start"]);
      expect(start.code).not.toBe(0);
      expect(start.stderr).toMatch(/the key "(__proto__|constructor)" .* is not allowed/);
    } finally {
      removeHome(other);
    }
  });

  it("shows terminal escapes in spar chat instead of obeying them, unless --raw", async () => {
    const evil = "title\u001b]0;pwned\u0007 clear\u001b[2J done\r\nline\ttab";
    fake.enqueue({ text: evil });
    const safe = await daemon.cli(["chat", "say something"]);
    expect(safe.code).toBe(0);
    for (const control of ["\u001b", "\u0007", "\r"]) expect(safe.stdout).not.toContain(control);
    expect(safe.stdout).toContain("title\u241b]0;pwned\u2407 clear\u241b[2J done\u240d\nline\ttab");
    fake.enqueue({ text: evil });
    const raw = await daemon.cli(["chat", "say something", "--raw"]);
    expect(raw.stdout).toContain(evil);
  });

  it("holds a tokens-per-minute quota under a burst, overshooting by at most one turn", async () => {
    const spawned = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "thrifty",
        description: "d",
        system_prompt: "Be brief.",
        quota: { tokens_per_minute: 1000 },
        model: { provider: "openai", model: "fake-model", base_url: fake.url, max_tokens: 100 },
      },
    });
    expect(spawned.status).toBe(201);
    // Every turn really costs 400 tokens, far more than its estimate (~110): the worst case.
    fake.setDefault(() => ({ text: "ok", usage: { prompt_tokens: 300, completion_tokens: 100 } }));
    try {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          daemon.request<{ error?: { code: string; retry_after_s: number } }>(
            "POST",
            "/api/v1/fighters/thrifty/message",
            { message: `burst ${i}` },
          ),
        ),
      );
      const ok = answers.filter((a) => a.status === 200).length;
      const limited = answers.filter((a) => a.status === 429);
      expect(ok + limited.length).toBe(50);
      expect(ok).toBeGreaterThan(0);
      for (const a of limited) {
        expect(a.body.error?.code).toBe("RATE_LIMITED");
        expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
      }
      const usage = await daemon.request<{ totals: { input_tokens: number; output_tokens: number } }>(
        "GET",
        "/api/v1/fighters/thrifty/usage",
      );
      const used = usage.body.totals.input_tokens + usage.body.totals.output_tokens;
      // The quota, plus at most one turn's cost beyond its estimate.
      expect(used).toBeLessThanOrEqual(1000 + 400);
      expect(used).toBe(ok * 400);
    } finally {
      fake.reset();
    }
  });

  it("refuses a fighter name with leading or trailing spaces", async () => {
    for (const name of [" padded", "padded ", "padded\t"]) {
      const answer = await daemon.request<{ error: { message: string } }>("POST", "/api/v1/fighters", {
        manifest: { name, description: "d", system_prompt: "p" },
      });
      expect(answer.status, JSON.stringify(name)).toBe(400);
      expect(answer.body.error.message).toMatch(/cannot start or end with a space/);
    }
  });
});

describe("API hardening: idle connections and each peer's share", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    // One peer could take every connection (32) were it not for its share (16); idle ones go in 1 s.
    writeConfig(
      home,
      port,
      fake.url,
      "\n[api]\nmax_connections = 32\nmax_connections_per_peer = 16\nidle_timeout_ms = 1000\n",
    );
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  /** A signed GET /api/v1/status from another loopback address than the attacker's. */
  function signedStatus(): Promise<number> {
    const privateKey = loadCliKey(home);
    if (!privateKey) throw new Error("no CLI key");
    const headers = signed(port, "GET", "/api/v1/status", { id: "cli", privateKey });
    return new Promise((done) => {
      const req = request(
        { host: "127.0.0.1", port, path: "/api/v1/status", headers, localAddress: "127.0.0.2", agent: false },
        (res) => {
          res.resume();
          res.on("end", () => done(res.statusCode ?? 0));
        },
      );
      req.on("error", () => done(0));
      req.end();
    });
  }

  it("answers a signed client while one peer holds all the idle sockets it may, and closes them", async () => {
    // The attacker keeps 40 idle sockets open from one address, opening a new one for each that closes.
    const open = new Set<Socket>();
    let attacking = true;
    const attack = () => {
      while (attacking && open.size < 40) {
        const socket = connect(port, "127.0.0.1");
        open.add(socket);
        socket.on("error", () => undefined);
        socket.on("close", () => {
          open.delete(socket);
          // Throttled a little, so the reconnecting does not starve the machine the test runs on.
          setTimeout(attack, 20);
        });
      }
    };
    attack();
    await expect.poll(signedStatus, { timeout: 10_000 }).toBe(200);
    expect(await signedStatus()).toBe(200);
    attacking = false;
    // Idle sockets that never send a request are closed by the daemon after idle_timeout_ms.
    await expect.poll(() => open.size, { timeout: 15_000 }).toBe(0);
  });
});
