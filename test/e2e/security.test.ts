import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { contentDigest } from "../../lib/http-signatures.js";
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
import { type RawResponse, raw, signed } from "../helpers/http.js";

describe("API security: signed requests only", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  let cli: { id: string; privateKey: KeyObject };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
    const privateKey = loadCliKey(home);
    if (!privateKey) throw new Error("spar init made no CLI key");
    cli = { id: "cli", privateKey };
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  const list = (headers: Record<string, string>) => raw(port, "GET", "/api/v1/fighters", headers);

  it("answers health unsigned, with status and version only, and checks a signature sent to it", async () => {
    const health = await raw(port, "GET", "/api/v1/health");
    expect(health.status).toBe(200);
    expect(Object.keys(health.json<object>()).sort()).toEqual(["status", "version"]);
    expect(
      (await raw(port, "GET", "/api/v1/health", signed(port, "GET", "/api/v1/health", cli))).status,
    ).toBe(200);
    const stranger = { id: "nobody", privateKey: generateKeyPairSync("ed25519").privateKey };
    expect(
      (await raw(port, "GET", "/api/v1/health", signed(port, "GET", "/api/v1/health", stranger))).status,
    ).toBe(401);
  });

  it("lets a correctly signed request through and refuses an unsigned one", async () => {
    expect((await list(signed(port, "GET", "/api/v1/fighters", cli))).status).toBe(200);
    const unsigned = await list({});
    expect(unsigned.status).toBe(401);
    expect(unsigned.json().error).toMatchObject({ code: "UNAUTHORIZED" });
    expect(unsigned.json().error.message).toMatch(/accepts signed requests only/);
  });

  it("keeps the CLI working, because it signs", async () => {
    const status = await daemon.cli(["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/is running/);
    fake.reset();
    const chat = await daemon.cli(["chat", "signed hello"]);
    expect(chat.stdout).toBe("echo: signed hello\n");
    expect((await daemon.cli(["fighter", "spawn", "oracle"])).code).toBe(0);
    expect((await daemon.cli(["fighter", "list", "--json"])).stdout).toContain('"oracle"');
  });

  it("refuses every kind of bad signature over HTTP", async () => {
    const path = "/api/v1/fighters";
    const good = () => signed(port, "GET", path, cli);
    const now = Math.floor(Date.now() / 1000);
    const stranger = { id: "stranger", privateKey: generateKeyPairSync("ed25519").privateKey };
    const flip = (h: Record<string, string>) => {
      const sig = Buffer.from(/:(.*):/.exec(h.signature ?? "")?.[1] ?? "", "base64");
      sig[0] = (sig[0] ?? 0) ^ 1;
      return { ...h, signature: `sig1=:${sig.toString("base64")}:` };
    };
    const cases: [string, Record<string, string>, RegExp][] = [
      ["malformed input", { ...good(), "signature-input": "sig1=(not a list" }, /malformed/i],
      ["missing signature header", { ...good(), signature: "" }, /signature/i],
      ["unknown key id", signed(port, "GET", path, stranger), /unknown key id "stranger"/],
      ["bad signature", flip(good()), /does not match|verify/i],
      ["too old", signed(port, "GET", path, cli, undefined, { created: now - 400 }), /old|created/i],
      [
        "from the future",
        signed(port, "GET", path, cli, undefined, { created: now + 400 }),
        /future|created/i,
      ],
      ["another path", { ...good() }, /does not match/i],
    ];
    for (const [name, headers, reason] of cases) {
      const target = name === "another path" ? "/api/v1/moves" : path;
      const response = await raw(port, "GET", target, headers);
      expect(response.status, name).toBe(401);
      expect(response.json().error.code, name).toBe("UNAUTHORIZED");
      expect(response.json().error.message, name).toMatch(reason);
    }
  });

  it("refuses a body that does not match its digest, and a tampered digest", async () => {
    const body = JSON.stringify({ manifest: { name: "honest", description: "d", system_prompt: "p" } });
    const headers = signed(port, "POST", "/api/v1/fighters", cli, body);
    const evil = JSON.stringify({ manifest: { name: "forged", description: "d", system_prompt: "p" } });
    const swapped = await raw(
      port,
      "POST",
      "/api/v1/fighters",
      { ...headers, "content-length": String(evil.length) },
      evil,
    );
    expect(swapped.status).toBe(401);
    expect(swapped.json().error.message).toMatch(/does not match its Content-Digest/);

    const fresh = signed(port, "POST", "/api/v1/fighters", cli, body);
    const digestSwapped = await raw(
      port,
      "POST",
      "/api/v1/fighters",
      { ...fresh, "content-digest": contentDigest(evil) },
      evil,
    );
    expect(digestSwapped.status).toBe(401);

    const ok = signed(port, "POST", "/api/v1/fighters", cli, body);
    expect((await raw(port, "POST", "/api/v1/fighters", ok, body)).status).toBe(201);
  });

  it("refuses a replayed request, also after a restart", async () => {
    const headers = signed(port, "GET", "/api/v1/fighters", cli);
    expect((await list(headers)).status).toBe(200);
    const replay = await list(headers);
    expect(replay.status).toBe(401);
    expect(replay.json().error.message).toMatch(/nonce was already used/);

    const beforeRestart = signed(port, "GET", "/api/v1/fighters", cli);
    expect((await list(beforeRestart)).status).toBe(200);
    await daemon.stop();
    daemon = await startDaemon(home, port);
    expect((await list(beforeRestart)).status).toBe(401);
    expect((await list(signed(port, "GET", "/api/v1/fighters", cli))).status).toBe(200);
  });

  it("accepts a key added with spar key add at once, and refuses it once removed", async () => {
    const pair = generateKeyPairSync("ed25519");
    const rawKey = Buffer.from(pair.publicKey.export({ format: "jwk" }).x ?? "", "base64url").toString(
      "base64url",
    );
    const added = await runCli(home, ["key", "add", "laptop", rawKey]);
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^Authorized laptop \(SHA256:/);
    const laptop = { id: "laptop", privateKey: pair.privateKey };
    expect((await list(signed(port, "GET", "/api/v1/fighters", laptop))).status).toBe(200);
    // A second key as a PEM file (the same key under a second name is refused: spar key add CONFLICT).
    const pemFile = join(home, "laptop.pem");
    const other = generateKeyPairSync("ed25519").publicKey;
    writeFileSync(pemFile, other.export({ type: "spki", format: "pem" }).toString());
    expect((await runCli(home, ["key", "add", "laptop-pem", pemFile])).code).toBe(0);
    const listed = JSON.parse((await runCli(home, ["key", "list", "--json"])).stdout) as {
      keys: { name: string }[];
    };
    expect(listed.keys.map((k) => k.name)).toEqual(["cli", "laptop", "laptop-pem"]);
    expect((await runCli(home, ["key", "add", "bad", "not-a-key"])).stderr).toMatch(
      /not an Ed25519 public key/,
    );
    expect((await runCli(home, ["key", "remove", "laptop"])).code).toBe(0);
    expect((await list(signed(port, "GET", "/api/v1/fighters", laptop))).status).toBe(401);
  });

  it("refuses an unsigned WebSocket and accepts a signed one", async () => {
    const url = `ws://127.0.0.1:${port}/api/v1/ws`;
    const refused = await new Promise<number>((done) => {
      const ws = new WebSocket(url);
      ws.on("unexpected-response", (req, res) => {
        req.destroy();
        done(res.statusCode ?? 0);
      });
      ws.on("open", () => done(101));
    });
    expect(refused).toBe(401);
    const headers = signed(port, "GET", "/api/v1/ws", cli);
    const opened = await new Promise<boolean>((done) => {
      const ws = new WebSocket(url, { headers });
      ws.on("open", () => {
        ws.close();
        done(true);
      });
      ws.on("unexpected-response", (req) => {
        req.destroy();
        done(false);
      });
    });
    expect(opened).toBe(true);
  });
});

describe("API security: the default loopback trust", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url, "\n[api]\nrate_limit_per_minute = 40\n");
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("accepts unsigned requests from this machine to a loopback Host", async () => {
    expect((await raw(port, "GET", "/api/v1/fighters")).status).toBe(200);
    expect((await raw(port, "GET", "/api/v1/fighters", { host: `localhost:${port}` })).status).toBe(200);
  });

  it("refuses a foreign Host, a forwarding header, and a foreign Origin even from loopback", async () => {
    const host = await raw(port, "GET", "/api/v1/fighters", { host: "evil.example" });
    expect(host.status).toBe(401);
    expect(host.json().error.message).toMatch(/Host "evil.example" is not a loopback name/);
    for (const header of ["x-forwarded-for", "forwarded", "cf-connecting-ip"]) {
      const forwarded = await raw(port, "GET", "/api/v1/fighters", { [header]: "203.0.113.7" });
      expect(forwarded.status, header).toBe(401);
      expect(forwarded.json().error.message).toContain(header);
    }
    const origin = await raw(port, "GET", "/api/v1/fighters", { origin: "https://evil.example" });
    expect(origin.status).toBe(403);
    expect(origin.json().error.code).toBe("FORBIDDEN");
    expect(origin.headers["access-control-allow-origin"]).toBeUndefined();
    expect((await raw(port, "GET", "/api/v1/fighters", { origin: `http://127.0.0.1:${port}` })).status).toBe(
      200,
    );
  });

  it("sends security headers and a request id, and gzips larger responses", async () => {
    const response = await raw(port, "GET", "/api/v1/moves", { "accept-encoding": "gzip" });
    expect(response.headers["x-content-type-options"]).toBe("nosniff");
    expect(response.headers["x-frame-options"]).toBe("DENY");
    expect(response.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(gunzipSync(response.body).toString()).moves.length).toBeGreaterThan(0);
    expect(response.headers.vary).toMatch(/accept-encoding/i);
    const small = await raw(port, "GET", "/api/v1/health", { "accept-encoding": "gzip" });
    expect(small.headers["content-encoding"]).toBeUndefined();
    for (const refused of ["gzip;q=0", "br", ""]) {
      const plain = await raw(port, "GET", "/api/v1/moves", { "accept-encoding": refused });
      expect(plain.headers["content-encoding"]).toBeUndefined();
      expect(JSON.parse(plain.body.toString()).moves.length).toBeGreaterThan(0);
    }
  });

  it("writes one log line per request, without bodies", async () => {
    const secret = "do-not-log-this-message-body";
    await raw(
      port,
      "POST",
      "/api/v1/fighters/spar/message",
      { "content-type": "application/json" },
      JSON.stringify({ message: secret }),
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(daemon.output()).toMatch(
      /info request req_id="[0-9a-f-]{36}" method="POST" path="\/api\/v1\/fighters\/spar\/message" status=200/,
    );
    expect(daemon.output()).not.toContain(secret);
  });

  it("limits requests per peer with 429 and Retry-After", async () => {
    let limited: RawResponse | undefined;
    for (let i = 0; i < 60 && !limited; i++) {
      const r = await raw(port, "GET", "/api/v1/fighters");
      if (r.status === 429) limited = r;
    }
    expect(limited?.json().error.code).toBe("RATE_LIMITED");
    expect(Number(limited?.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("refuses to listen beyond loopback with no authorized key", async () => {
    const open = tempHome();
    await runCli(open, ["init"]);
    rmSync(join(open, "keys", "authorized", "cli.pub"));
    const openPort = await freePort();
    writeFileSync(
      join(open, "config.toml"),
      readFileSync(join(open, "config.toml"), "utf8").replace(
        /api_listen = .*/,
        `api_listen = "0.0.0.0:${openPort}"`,
      ),
    );
    const result = await runCli(open, ["start"]);
    removeHome(open);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /refusing to listen on 0\.0\.0\.0:\d+, reachable from other machines, with no authorized key/,
    );
  });
});
