/**
 * Hostile input against the real daemon: fast-check makes request bodies (random JSON of any depth,
 * strings with NUL, bidi overrides and lone surrogates, invalid UTF-8 sent as raw bytes), headers
 * (random names and values within HTTP's grammar, huge values, a duplicated Host), query strings and
 * WebSocket frames, for every route the daemon's own OpenAPI document lists. Every answer is counted
 * by status class: a 5xx fails the run with the request that caused it, the daemon stays healthy and
 * its memory bounded. Then the cases a fuzzer rarely finds: an oversized body, JSON nested 100,000
 * deep, and names with NUL or bidi characters. `SPAR_FAULTS=long` runs 100,000 cases.
 */
import { execFileSync } from "node:child_process";
import { connect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { ERROR_CATALOG, type ErrorCode } from "../../sdk/errors.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const LONG = process.env.SPAR_FAULTS === "long";
const HTTP_CASES = LONG ? 95_000 : 2_850;
const WS_FRAMES = LONG ? 5_000 : 150;
const CONCURRENCY = 8;
/** RSS may grow this much over the run (V8's heap settles, caches fill): a leak grows past it. */
const RSS_MARGIN_MIB = LONG ? 256 : 160;

/**
 * Routes left out, and why: they reach outside this machine (a cloudflared tunnel, the skills
 * registry) or install code; fuzzing them would test the network, not the daemon.
 */
const SKIPPED = new Set(["GET /api/v1/tunnel", "POST /api/v1/moves/install", "GET /api/v1/moves/search"]);

interface HttpCase {
  method: string;
  path: string;
  headers: [string, string][];
  body?: Buffer;
}

/** Node's default --max-http-header-size. */
const MAX_HEADER_BYTES = 16 * 1024;

/** Bytes of the request line and headers. */
function headBytes(c: HttpCase): number {
  return c.path.length + c.headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
}

/** The case as a line a person can replay. */
function describeCase(c: HttpCase): string {
  const body = c.body
    ? ` body(${c.body.length} B)=${JSON.stringify(c.body.subarray(0, 300).toString("latin1"))}`
    : "";
  const headers = c.headers.map(([n, v]) => `${n}: ${v.slice(0, 80)}${v.length > 80 ? "…" : ""}`).join(" | ");
  return `${c.method} ${c.path.slice(0, 300)} [${headers}]${body}`;
}

/** Sends the case byte for byte over TCP (fetch would refuse a duplicated Host) and reads the status code; 0 when the connection closes without one. */
function send(port: number, c: HttpCase, bodyAfterMs = 0): Promise<number> {
  return new Promise((done) => {
    const head =
      `${c.method} ${c.path} HTTP/1.1\r\n` +
      c.headers.map(([n, v]) => `${n}: ${v}\r\n`).join("") +
      (c.body ? `content-length: ${c.body.length}\r\n` : "") +
      "connection: close\r\n\r\n";
    const socket = connect(port, "127.0.0.1");
    let data = "";
    const timer = setTimeout(() => socket.destroy(), 30_000);
    socket.on("connect", () => {
      socket.write(Buffer.from(head, "latin1"));
      // An oversized body is answered from its Content-Length alone; writing it at once would race
      // the server's close, and the reset would throw the answer away before it is read.
      const rest = setTimeout(() => c.body && !socket.destroyed && socket.write(c.body), bodyAfterMs);
      socket.once("data", () => clearTimeout(rest));
    });
    socket.on("data", (d: Buffer) => {
      data += d.toString("latin1");
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      done(Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0));
    });
  });
}

/** Percent-encodes every byte but the unreserved ones (encodeURIComponent throws on a lone surrogate). */
function pct(s: string): string {
  return [...Buffer.from(s, "utf8")]
    .map((b) =>
      /[A-Za-z0-9._~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).padStart(2, "0")}`,
    )
    .join("");
}

const BIDI = ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u200b", "\ufeff"];
/** Strings a hostile client would try: NUL, bidi overrides, lone surrogates, huge, plain. */
const nastyString = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.string({ unit: "grapheme" }),
  fc.constantFrom("\u0000", "a\u0000b", "\ud800", "x\udfffy", "../../etc/passwd", "%00", "spar", "", " "),
  fc.tuple(fc.string(), fc.constantFrom(...BIDI), fc.string()).map(([a, b, c]) => a + b + c),
  fc.nat({ max: 70_000 }).map((n) => "x".repeat(n)),
);
const nastyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    nastyString,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 6 }),
    fc.dictionary(
      fc.oneof(nastyString, fc.constantFrom("manifest", "message", "name", "__proto__", "constructor")),
      tie("value"),
      { maxKeys: 6 },
    ),
  ),
})).value;
/** A body shaped like the routes' own, so the fuzz reaches past the first type check. */
const shapedJson = fc.record(
  {
    message: nastyJson,
    name: nastyString,
    template: nastyString,
    manifest: fc.record(
      { name: nastyString, description: nastyJson, system_prompt: nastyString, extra: nastyJson },
      { requiredKeys: [] },
    ),
    content: nastyString,
    bout_id: nastyString,
    model: nastyString,
    messages: fc.array(fc.record({ role: nastyString, content: nastyJson }), { maxLength: 3 }),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  nastyJson.map((v) => Buffer.from(JSON.stringify(v) ?? "null", "utf8")),
  shapedJson.map((v) => Buffer.from(JSON.stringify(v), "utf8")),
  fc.uint8Array({ maxLength: 2048 }).map((a) => Buffer.from(a)),
  // Invalid UTF-8 inside an otherwise valid JSON string.
  fc
    .tuple(fc.constantFrom("name", "message", "manifest"), fc.uint8Array({ minLength: 1, maxLength: 16 }))
    .map(([k, bad]) =>
      Buffer.concat([Buffer.from(`{"${k}":"`), Buffer.from([0xff, 0xc0, ...bad]), Buffer.from('"}')]),
    ),
);

const TOKEN = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".split("");
const headerName = fc
  .array(fc.constantFrom(...TOKEN), { minLength: 1, maxLength: 24 })
  .map((a) => a.join(""))
  .filter((n) => !/^(content-length|transfer-encoding|connection|host|expect|upgrade)$/i.test(n));
/** VCHAR and obs-text, no leading or trailing space: what RFC 9110 allows in a field value. */
const headerValue = fc.oneof(
  fc
    .array(
      fc.oneof(fc.integer({ min: 0x21, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }), fc.constant(0x20)),
      {
        maxLength: 200,
      },
    )
    .map((codes) => Buffer.from(codes).toString("latin1").trim()),
  fc.nat({ max: 40_000 }).map((n) => "v".repeat(n)),
);
const contentType = fc.constantFrom(
  "application/json",
  "application/json; charset=utf-8",
  "application/json; charset=latin1",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json;;;",
  "",
);
const queryString = fc.oneof(
  fc.constant(""),
  fc
    .array(fc.tuple(nastyString, nastyString), { maxLength: 5 })
    .map((pairs) => `?${pairs.map(([k, v]) => `${pct(k.slice(0, 200))}=${pct(v.slice(0, 500))}`).join("&")}`),
  fc.constantFrom(
    "?%",
    "?%zz",
    "?a=%ff%fe",
    "?limit=-1",
    "?limit=1e309",
    "?since=NaN",
    "?a[b][c]=1",
    "?=&&=",
    "?limit=99999999999999999999",
  ),
);

/** Routes whose handlers read a JSON body: a nested one must be refused there, with a 400. */
const BODY_ROUTES = new Set([
  "/api/v1/fighters",
  "/api/v1/fighters/{id}/message",
  "/api/v1/fighters/{id}/chat",
  "/v1/chat/completions",
  "/api/v1/troops",
]);

interface Route {
  method: string;
  template: string;
}

describe("hostile input against every route", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  let routes: Route[] = [];
  const realIds: string[] = [];

  const rssKiB = () =>
    Number(
      execFileSync("ps", ["-o", "rss=", "-p", String(daemon.process.pid)])
        .toString()
        .trim(),
    );

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    // The rate limit is not what is under test here (the quota suite tests it): lift it.
    writeConfig(home, port, fake.url, "\n[api]\nrate_limit_per_minute = 10000000\n");
    daemon = await startDaemon(home, port);
    const doc = await daemon.request<{ paths: Record<string, Record<string, unknown>> }>(
      "GET",
      "/api/v1/openapi.json",
    );
    for (const [template, ops] of Object.entries(doc.body.paths)) {
      for (const method of Object.keys(ops)) {
        const upper = method.toUpperCase();
        if (!SKIPPED.has(`${upper} ${template}`)) routes.push({ method: upper, template });
      }
    }
    routes = routes.filter((r) => r.template !== "/api/v1/ws");
    const fighters = await daemon.request<{ fighters: { id: string; name: string }[] }>(
      "GET",
      "/api/v1/fighters",
    );
    for (const f of fighters.body.fighters) realIds.push(f.id, f.name);
    const gorillas = await daemon.request<{ gorillas: { id: string }[] }>("GET", "/api/v1/gorillas");
    for (const g of gorillas.body.gorillas ?? []) realIds.push(g.id);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
  });

  it("answers every fuzzed request and WebSocket frame with no 5xx, stays healthy, memory bounded", async () => {
    expect(routes.length).toBeGreaterThan(30);
    const route = fc.constantFrom(...routes);
    const param = fc.oneof(
      fc.constantFrom(...realIds),
      nastyString.map((s) => pct(s.slice(0, 1200))),
      fc.constantFrom("%", "%ff", "..", "%2e%2e", "%00", "a%2Fb"),
    );
    const httpCase: fc.Arbitrary<HttpCase> = fc
      .record({
        route,
        params: fc.array(param, { minLength: 3, maxLength: 3 }),
        query: queryString,
        extra: fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 }),
        host: fc.constantFrom("good", "good", "good", "twice", "foreign"),
        type: contentType,
        body: fc.option(body, { freq: 4 }),
        method: fc.option(fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"), {
          freq: 8,
        }),
      })
      .map((r) => {
        let i = 0;
        const path = r.route.template.replace(/\{[^}]+\}/g, () => r.params[i++ % 3] ?? "x") + r.query;
        const host = `127.0.0.1:${port}`;
        const hosts: [string, string][] =
          r.host === "twice"
            ? [
                ["Host", host],
                ["Host", "evil.example"],
              ]
            : [["Host", r.host === "good" ? host : "evil.example"]];
        const type: [string, string][] = r.type ? [["content-type", r.type]] : [];
        return {
          method: r.method ?? r.route.method,
          path,
          headers: [...hosts, ...type, ...r.extra],
          body: r.body ?? undefined,
        };
      });

    const rssBefore = rssKiB();
    const cases = fc.sample(httpCase, { numRuns: HTTP_CASES, seed: 20 });
    const byClass = new Map<string, number>();
    const failures: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++] as HttpCase;
        let status = await send(port, c);
        // A request refused before its body is read (a bad Host, say) is answered and closed while a
        // large body is still being written, and the reset can discard the answer: replay such a case
        // once, holding the body back until the answer comes. Only a case still unanswered fails.
        if (status === 0 && c.body && c.body.length > 64 * 1024) status = await send(port, c, 1000);
        // Past Node's 16 KiB header limit the server writes 431 and closes at once; the unread rest
        // of the request makes that close a reset, which often discards the 431 before it is read.
        const closedOnOversizedHead = status === 0 && headBytes(c) > MAX_HEADER_BYTES;
        const cls = closedOnOversizedHead
          ? "431/closed"
          : status === 0
            ? "none"
            : `${Math.floor(status / 100)}xx`;
        byClass.set(cls, (byClass.get(cls) ?? 0) + 1);
        if (status >= 500 || (status === 0 && !closedOnOversizedHead))
          failures.push(`${status} ← ${describeCase(c)}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    // WebSocket frames: random JSON text, shaped frames, raw binary, on a few connections.
    const frames = fc.sample(
      fc.oneof(
        nastyJson.map((v) => JSON.stringify(v) ?? "null"),
        fc
          .record(
            {
              type: fc.constantFrom("subscribe", "chat", "cancel", "ping", "x"),
              id: nastyJson,
              fighter_id: fc.oneof(fc.constantFrom(...realIds), nastyString),
              message: nastyJson,
              kinds: nastyJson,
              since: nastyJson,
            },
            { requiredKeys: ["type"] },
          )
          .map((v) => JSON.stringify(v)),
        fc.uint8Array({ maxLength: 512 }).map((a) => Buffer.from(a)),
      ),
      { numRuns: WS_FRAMES, seed: 21 },
    );
    let wsServerErrors = 0;
    let wsReplies = 0;
    for (let start = 0; start < frames.length; start += 50) {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
      await new Promise<void>((done, fail) => {
        ws.once("open", () => done());
        ws.once("error", fail);
      });
      ws.on("message", (data: Buffer) => {
        wsReplies++;
        const frame = JSON.parse(data.toString()) as { type: string; error?: { code: ErrorCode } };
        const code = frame.error?.code;
        if (code && (ERROR_CATALOG[code] ?? 500) >= 500 && !code.startsWith("PROVIDER")) {
          wsServerErrors++;
          failures.push(`ws error frame ${data.toString().slice(0, 300)}`);
        }
      });
      for (const frame of frames.slice(start, start + 50)) ws.send(frame);
      // A ping round trip after the batch: the socket is still served and every reply before it read.
      await new Promise<void>((done) => {
        ws.once("pong", () => done());
        ws.ping();
      });
      ws.close();
    }

    const health = await daemon.request("GET", "/api/v1/health");
    const rssGrowthMiB = (rssKiB() - rssBefore) / 1024;
    const total = cases.length + frames.length;
    const classes = [...byClass].map(([k, v]) => `${k} ${v}`).join(", ");
    console.log(
      `hostile input: ${total} cases, 5xx ${failures.length}, crashes ${daemon.process.exitCode === null ? 0 : 1}, rss ${rssGrowthMiB >= 0 ? "+" : ""}${rssGrowthMiB.toFixed(1)} MiB (${classes}; ws replies ${wsReplies})`,
    );
    expect(failures.slice(0, 20)).toEqual([]);
    expect(wsServerErrors).toBe(0);
    expect(daemon.process.exitCode).toBeNull();
    expect(health).toMatchObject({ status: 200, body: { status: "ok" } });
    expect(rssGrowthMiB).toBeLessThan(RSS_MARGIN_MIB);
  }, 600_000);

  it("refuses an oversized body with 413 PAYLOAD_TOO_LARGE on every route that takes one", async () => {
    const big = Buffer.from(JSON.stringify({ message: "x".repeat(2 * 1024 * 1024) }));
    // The routes that take a skill's files hold bodies to 22.4 MiB (PluginRoute.bodyLimit), not 1 MiB.
    const skillFiles = new Set(["POST /api/v1/moves/scan", "POST /api/v1/moves/install"]);
    const bigger = Buffer.from(JSON.stringify({ message: "x".repeat(24 * 1024 * 1024) }));
    const posts = [
      ...routes.filter((r) => r.method === "POST" || r.method === "PUT"),
      { method: "POST", template: "/api/v1/moves/install" },
    ];
    for (const r of posts) {
      const path = r.template.replace(/\{[^}]+\}/g, realIds[0] ?? "x");
      const body = skillFiles.has(`${r.method} ${r.template}`) ? bigger : big;
      const status = await send(
        port,
        {
          method: r.method,
          path,
          headers: [
            ["Host", `127.0.0.1:${port}`],
            ["content-type", "application/json"],
          ],
          body,
        },
        2000,
      );
      expect(`${r.method} ${path} → ${status}`).toBe(`${r.method} ${path} → 413`);
    }
    console.log(`hostile input: oversized body, ${posts.length} routes, all 413`);
  });

  it("refuses JSON nested 100,000 deep cheaply, with a 400 or 413 and no stack overflow", async () => {
    const depth = 100_000;
    const nested = `${"[".repeat(depth)}${"]".repeat(depth)}`;
    const bodies = [
      nested,
      `{"message":${nested}}`,
      `{"manifest":{"name":"n","description":${nested}}}`,
      `{"model":"spar","messages":${nested}}`,
    ];
    const posts = routes.filter((r) => r.method === "POST" || r.method === "PUT");
    const seen = new Map<number, number>();
    const started = Date.now();
    for (const r of posts) {
      for (const text of bodies) {
        const path = r.template.replace(/\{[^}]+\}/g, realIds[0] ?? "x");
        const status = await send(port, {
          method: r.method,
          path,
          headers: [
            ["Host", `127.0.0.1:${port}`],
            ["content-type", "application/json"],
          ],
          body: Buffer.from(text),
        });
        seen.set(status, (seen.get(status) ?? 0) + 1);
        expect([`${r.method} ${path}`, status < 500 && status !== 0]).toEqual([`${r.method} ${path}`, true]);
        // A route that reads a body refuses this one; a route that takes none (cancel, ticket) may ignore it.
        if (BODY_ROUTES.has(r.template))
          expect([`${r.method} ${path}`, status]).toEqual([`${r.method} ${path}`, 400]);
      }
    }
    const each = (Date.now() - started) / (posts.length * bodies.length);
    console.log(
      `hostile input: ${depth.toLocaleString("en")}-deep JSON, ${posts.length * bodies.length} requests, statuses ${[...seen].map(([s, n]) => `${s}×${n}`).join(" ")}, ${each.toFixed(0)} ms each`,
    );
    expect((await daemon.request("GET", "/api/v1/health")).status).toBe(200);
  });

  it("refuses fighter names with NUL, bidi or other invisible characters with VALIDATION_FAILED", async () => {
    const names = [
      "a\u0000b",
      "evil\u202egpj.exe",
      "\u2066spar\u2069",
      "zero\u200bwidth",
      "\ufeffbom",
      "line\nbreak",
      "\u001b[31mred",
    ];
    for (const name of names) {
      const answer = await daemon.request<{ error: { code: string; message: string } }>(
        "POST",
        "/api/v1/fighters",
        {
          manifest: { name, description: "d", system_prompt: "p" },
        },
      );
      expect([JSON.stringify(name), answer.status, answer.body.error?.code]).toEqual([
        JSON.stringify(name),
        400,
        "VALIDATION_FAILED",
      ]);
    }
    // Invalid UTF-8 in a name: refused as a body, never decoded into a replacement-character name.
    const bad = Buffer.concat([
      Buffer.from('{"manifest":{"name":"bad'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('","description":"d","system_prompt":"p"}}'),
    ]);
    const status = await send(port, {
      method: "POST",
      path: "/api/v1/fighters",
      headers: [
        ["Host", `127.0.0.1:${port}`],
        ["content-type", "application/json"],
      ],
      body: bad,
    });
    const list = await daemon.request<{ fighters: { name: string }[] }>("GET", "/api/v1/fighters");
    const created = list.body.fighters.filter((f) => f.name.startsWith("bad"));
    console.log(
      `hostile input: ${names.length + 1} hostile names (NUL, bidi, invisible, invalid UTF-8) → 400`,
    );
    expect(status).toBe(400);
    expect(created).toEqual([]);
  });
});
