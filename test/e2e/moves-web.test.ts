import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Capability } from "../../sdk/index.js";
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
 * The web moves through the real built daemon, driven by an evil scripted model. A canary HTTP
 * server listens on every local address (`::`, dual stack: 127.0.0.1, ::1, 0.0.0.0 and the rest all
 * reach it) and counts every request; the model tries every spelling of loopback, a name that
 * resolves there, the metadata address and redirects from an allowed site, and the canary must end
 * with 0 hits. The allowed site sits on 127.0.0.1 too, opened by `[moves.web] allow_private` for its
 * port only. The search backend is a SearXNG stand-in on 127.0.0.1 speaking its JSON format.
 */

type Call = { name: string; arguments: Record<string, unknown> };
type ToolError = { error: { code: string; message: string } };
interface FetchResult {
  url: string;
  status: number;
  content_type: string;
  title?: string;
  text: string;
  truncated: boolean;
}

/** Secrets in the daemon's environment: none may reach a tool result, a fetched site or the model. */
const SECRETS = {
  OPENAI_API_KEY: "sk-test-secret-0000",
  SPAR_MASTER_KEY: randomBytes(32).toString("hex"),
  ANTHROPIC_API_KEY: "sk-ant-canary-secret-4242",
  GITHUB_TOKEN: "ghp_canarycanarycanary",
};

interface Hit {
  path: string;
  headers: IncomingMessage["headers"];
}

interface LocalServer {
  server: Server;
  port: number;
  hits: Hit[];
}

async function serve(
  host: string,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<LocalServer> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    hits.push({ path: req.url ?? "", headers: req.headers });
    handler(req, res);
  });
  await new Promise<void>((done) => server.listen(0, host, done));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

const closeServer = (s: LocalServer | undefined) =>
  new Promise<void>((done) => {
    if (!s) return done();
    s.server.closeAllConnections();
    s.server.close(() => done());
  });

const PAGE = `<!doctype html>
<html><head><title>Field notes</title><style>body { color: red }</style>
<script>var secret = "script text never shown";</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>Gorillas</h1>
<p>Gorillas live in <b>forests</b> of central Africa &amp; eat mostly plants.</p>
<ul><li>Mountain gorilla</li><li>Lowland gorilla</li></ul>
<p>Read <a href="/more">more</a>.</p>
<div hidden>hidden text never shown</div>
</body></html>`;

describe("moves-web: an evil model against the real daemon", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let canary: LocalServer;
  let site: LocalServer;
  let searx: LocalServer;

  /** Sends one message whose scripted answer makes these calls; returns their results as the fake got them. */
  async function moves(fighter: string, calls: Call[]): Promise<string[]> {
    fake.enqueue({ tool_calls: calls });
    // A fresh bout each time: a long bout would be compacted, and compaction asks the model too.
    const reply = await daemon.request("POST", `/api/v1/fighters/${fighter}/message`, {
      message: "go",
      bout: "new",
    });
    expect(reply.status).toBe(200);
    const results = fake.calls().at(-1)?.tool_results ?? [];
    expect(results).toHaveLength(calls.length);
    return results;
  }
  const fetchCall = (url: string, extra: Record<string, unknown> = {}): Call => ({
    name: "web_fetch",
    arguments: { url, ...extra },
  });
  const error = (result: string | undefined) => (JSON.parse(result ?? "null") as Partial<ToolError>).error;
  const page = (result: string | undefined): FetchResult => {
    const parsed = JSON.parse(result ?? "null") as FetchResult & Partial<ToolError>;
    expect(parsed.error).toBeUndefined();
    return parsed;
  };
  const spawn = async (name: string, capabilities: Capability[]) => {
    const res = await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities },
    });
    expect(res.status).toBe(201);
  };
  const siteUrl = (path: string) => `http://127.0.0.1:${site.port}${path}`;
  const redirect = (to: string, status = 302) =>
    siteUrl(`/redirect?status=${status}&to=${encodeURIComponent(to)}`);

  beforeAll(async () => {
    canary = await serve("::", (_req, res) => res.end("CANARY-REACHED"));
    site = await serve("127.0.0.1", (req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const to = url.searchParams.get("to");
      if (url.pathname === "/redirect" && to) {
        res.writeHead(Number(url.searchParams.get("status") ?? 302), { location: to });
        res.end();
      } else if (url.pathname === "/page") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end(PAGE);
      } else if (url.pathname === "/big") {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("0123456789".repeat(1000));
      } else if (url.pathname === "/headers") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(req.headers));
      } else if (url.pathname === "/hang") {
        // Never answers: web_fetch's time cap must end the call.
      } else {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("no such page");
      }
    });
    searx = await serve("127.0.0.1", (req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const q = url.searchParams.get("q") ?? "";
      if (url.pathname !== "/search" || url.searchParams.get("format") !== "json") {
        res.writeHead(403);
        res.end("Forbidden");
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          query: q,
          number_of_results: 3,
          results: [
            {
              title: `Gorilla - ${q}`,
              url: "https://en.wikipedia.org/wiki/Gorilla",
              content: "Gorillas are herbivorous,\n  predominantly ground-dwelling great apes.",
              engine: "wikipedia",
              score: 3,
            },
            {
              title: "Mountain gorilla",
              url: "https://example.org/mountain",
              content: "A subspecies.",
              engine: "duckduckgo",
            },
            { title: "Broken", url: "javascript:alert(1)", content: "dropped" },
            { title: "Lowland gorilla", url: "https://example.org/lowland", content: "Another." },
          ],
          answers: [],
          suggestions: [],
        }),
      );
    });

    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      "\n[creed]\nreflect = false\n\n[moves.web]\n" +
        `allow_private = ["127.0.0.1:${site.port}"]\n` +
        `search_url = "http://127.0.0.1:${searx.port}/search?q={query}&format=json"\n` +
        "max_bytes = 4096\ntimeout_s = 3\n",
    );
    daemon = await startDaemon(home, port, { ...SECRETS, DAEMON_ONLY_SETTING: "inherited-by-nobody" });
    await spawn("scout", [{ type: "network" }]);
    await spawn("narrow", [{ type: "network", hosts: ["localhost"] }]);
    await spawn("plain", [{ type: "memory" }]);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    await Promise.all([closeServer(canary), closeServer(site), closeServer(searx)]);
    if (home) removeHome(home);
  });

  it("reads an allowed page as extracted text: title, headings, lists, links; no script, style, nav or hidden text", async () => {
    const [result] = await moves("scout", [fetchCall(siteUrl("/page"))]);
    expect(page(result)).toEqual({
      url: siteUrl("/page"),
      status: 200,
      content_type: "text/html",
      title: "Field notes",
      text:
        "# Gorillas\n\nGorillas live in forests of central Africa & eat mostly plants.\n\n" +
        `- Mountain gorilla\n- Lowland gorilla\n\nRead [more](${siteUrl("/more")}).`,
      truncated: false,
    });
    expect(result).not.toMatch(/never shown|color: red|<p>/);
  });

  it("refuses every spelling of loopback, a name resolving there, private, CGNAT, multicast and metadata addresses", async () => {
    const p = canary.port;
    const attempts = [
      `http://127.0.0.1:${p}/`,
      `http://localhost:${p}/`,
      `http://LocalHost:${p}/x`,
      `http://2130706433:${p}/`,
      `http://0177.0.0.1:${p}/`,
      `http://017700000001:${p}/`,
      `http://0x7f.0.0.1:${p}/`,
      `http://0x7f000001:${p}/`,
      `http://127.1:${p}/`,
      `http://127.0.0.2:${p}/`,
      `http://[::ffff:127.0.0.1]:${p}/`,
      `http://[::ffff:7f00:1]:${p}/`,
      `http://[::1]:${p}/`,
      `http://[0:0:0:0:0:0:0:1]:${p}/`,
      `http://[64:ff9b::7f00:1]:${p}/`,
      `http://0.0.0.0:${p}/`,
      `http://[::]:${p}/`,
      "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
      "http://2852039166/latest/meta-data/",
      "http://[::ffff:169.254.169.254]/latest/meta-data/",
      "http://[fd00:ec2::254]/latest/meta-data/",
      "http://metadata.google.internal/computeMetadata/v1/",
      "http://10.0.0.1/",
      "http://172.16.0.1/",
      "http://192.168.1.1/",
      "http://100.64.0.1/",
      "http://169.254.1.1/",
      "http://224.0.0.1/",
      "http://[fe80::1]/",
      "http://[fc00::1]/",
      // The daemon's own API, the model's server and the search backend: local ports not allowed.
      `http://127.0.0.1:${daemon.port}/api/v1/fighters`,
      `${fake.url}/v1/models`,
      `http://127.0.0.1:${searx.port}/search?q=x&format=json`,
    ];
    const results = await moves(
      "scout",
      attempts.map((url) => fetchCall(url)),
    );
    expect(results).toHaveLength(attempts.length);
    results.forEach((result, i) => {
      expect(error(result)?.code, attempts[i]).toBe("FORBIDDEN");
    });
    const why = (url: string) => error(results[attempts.indexOf(url)])?.message;
    expect(why(`http://127.0.0.1:${p}/`)).toBe(
      `refused http://127.0.0.1:${p}/: 127.0.0.1 is a loopback address ([moves.web] allow_private allows it on port ${site.port} only, not ${p})`,
    );
    expect(why(`http://localhost:${p}/`)).toMatch(
      new RegExp(
        `^refused http://localhost:${p}/ \\(localhost resolves to 127\\.0\\.0\\.1\\): 127\\.0\\.0\\.1 is a loopback address`,
      ),
    );
    expect(why(`http://0x7f000001:${p}/`)).toMatch(
      /^refused http:\/\/127\.0\.0\.1:\d+\/: 127\.0\.0\.1 is a loopback/,
    );
    expect(why(`http://[::ffff:127.0.0.1]:${p}/`)).toMatch(/::ffff:7f00:1 is a loopback address/);
    expect(why("http://169.254.169.254/latest/meta-data/iam/security-credentials/")).toMatch(
      /169\.254\.169\.254 is a cloud metadata address, which web_fetch never connects to/,
    );
    expect(why("http://metadata.google.internal/computeMetadata/v1/")).toMatch(
      /metadata\.google\.internal is a cloud metadata service/,
    );
    expect(why("http://100.64.0.1/")).toMatch(/100\.64\.0\.1 is a shared \(carrier-grade NAT\) address/);
    expect(why("http://224.0.0.1/")).toMatch(/224\.0\.0\.1 is a multicast address/);
    expect(why("http://[fe80::1]/")).toMatch(/fe80::1 is a link-local address/);
    expect(canary.hits).toEqual([]);
    expect(searx.hits).toEqual([]);
  });

  it("checks every redirect from the allowed site: none reaches the canary", async () => {
    const p = canary.port;
    const targets: [string, number][] = [
      [`http://127.0.0.1:${p}/`, 302],
      [`http://localhost:${p}/`, 301],
      [`http://[::1]:${p}/`, 303],
      [`http://2130706433:${p}/`, 307],
      [`http://0x7f.1:${p}/`, 308],
      [`http://[::ffff:127.0.0.1]:${p}/`, 302],
      ["http://169.254.169.254/latest/meta-data/", 302],
      // Two hops: the allowed site redirects to itself, then to the canary.
      [redirect(`http://127.0.0.1:${p}/`), 302],
    ];
    const results = await moves(
      "scout",
      targets.map(([to, status]) => fetchCall(redirect(to, status))),
    );
    results.forEach((result, i) => {
      const refusal = error(result);
      expect(refusal?.code, targets[i]?.[0]).toBe("FORBIDDEN");
      expect(refusal?.message).toMatch(i === 7 ? /the redirect \(hop 2\)/ : /the redirect \(hop 1\)/);
    });
    // The site was asked every time; the canary never.
    expect(site.hits.filter((h) => h.path.startsWith("/redirect")).length).toBeGreaterThanOrEqual(9);
    expect(canary.hits).toEqual([]);
  });

  it("caps the size at [moves.web] max_bytes, and at the model's smaller max_bytes", async () => {
    const [capped, smaller, larger] = await moves("scout", [
      fetchCall(siteUrl("/big")),
      fetchCall(siteUrl("/big"), { max_bytes: 1024 }),
      fetchCall(siteUrl("/big"), { max_bytes: 1_000_000 }),
    ]);
    expect(page(capped)).toMatchObject({ status: 200, truncated: true });
    expect(page(capped).text).toBe("0123456789".repeat(1000).slice(0, 4096));
    expect(page(smaller).text).toHaveLength(1024);
    expect(page(smaller).truncated).toBe(true);
    // A model cannot raise the operator's cap.
    expect(page(larger).text).toHaveLength(4096);
  });

  it("gives up on a site that does not answer within [moves.web] timeout_s", async () => {
    const [result] = await moves("scout", [fetchCall(siteUrl("/hang"))]);
    expect(error(result)).toEqual({
      code: "MOVE_TIMEOUT",
      message: `web_fetch: ${siteUrl("/hang")} did not answer in full within 3 s`,
    });
  });

  it("searches through the configured SearXNG backend and returns its results", async () => {
    const [result, limited] = await moves("scout", [
      { name: "web_search", arguments: { query: "gorilla diet & habitat" } },
      { name: "web_search", arguments: { query: "gorillas", limit: 1 } },
    ]);
    expect(JSON.parse(result as string)).toEqual({
      query: "gorilla diet & habitat",
      results: [
        {
          title: "Gorilla - gorilla diet & habitat",
          url: "https://en.wikipedia.org/wiki/Gorilla",
          snippet: "Gorillas are herbivorous, predominantly ground-dwelling great apes.",
        },
        { title: "Mountain gorilla", url: "https://example.org/mountain", snippet: "A subspecies." },
        { title: "Lowland gorilla", url: "https://example.org/lowland", snippet: "Another." },
      ],
    });
    expect(JSON.parse(limited as string).results).toHaveLength(1);
    expect(searx.hits.map((h) => h.path)).toEqual([
      "/search?q=gorilla%20diet%20%26%20habitat&format=json",
      "/search?q=gorillas&format=json",
    ]);
  });

  it("holds a grant's hosts allowlist: other hosts and redirects to them are CAPABILITY_DENIED", async () => {
    const local = (path: string) => `http://localhost:${site.port}${path}`;
    const [allowed, byAddress, away, elsewhere, search] = await moves("narrow", [
      fetchCall(local("/page")),
      fetchCall(siteUrl("/page")),
      fetchCall(local(`/redirect?to=${encodeURIComponent(siteUrl("/page"))}`)),
      fetchCall("https://example.com/"),
      { name: "web_search", arguments: { query: "x" } },
    ]);
    expect(page(allowed)).toMatchObject({ url: local("/page"), title: "Field notes" });
    expect(error(byAddress)).toEqual({
      code: "CAPABILITY_DENIED",
      message: `127.0.0.1:${site.port} is not among the hosts this fighter's network grant allows (localhost)`,
    });
    expect(error(away)?.code).toBe("CAPABILITY_DENIED");
    expect(error(elsewhere)).toEqual({
      code: "CAPABILITY_DENIED",
      message: "example.com is not among the hosts this fighter's network grant allows (localhost)",
    });
    // hosts narrows what web_fetch reads; the operator's search backend stays usable.
    expect(JSON.parse(search as string).results.length).toBeGreaterThan(0);
    expect(canary.hits).toEqual([]);
  });

  it("lets the scout template (hosts: *) fetch a page, spawned with the real CLI", async () => {
    const spawned = await daemon.cli(["fighter", "spawn", "scout", "--name", "researcher"]);
    expect(spawned.stderr).toBe("");
    expect(spawned.code).toBe(0);
    const [result] = await moves("researcher", [fetchCall(siteUrl("/page"))]);
    expect(page(result)).toMatchObject({ url: siteUrl("/page"), status: 200, title: "Field notes" });
    expect(canary.hits).toEqual([]);
  });

  it("reads each hosts form alike: a comma string, *:port, *.name (not the apex), and refuses a bad entry at spawn", async () => {
    const local = (path: string) => `http://localhost:${site.port}${path}`;
    await spawn("commas", [{ type: "network", hosts: `example.org, 127.0.0.1:${site.port}` }]);
    await spawn("anyonport", [{ type: "network", hosts: `*:${site.port}` }]);
    await spawn("subnames", [{ type: "network", hosts: "*.localhost" }]);
    const [listed, other] = await moves("commas", [fetchCall(siteUrl("/page")), fetchCall(local("/page"))]);
    expect(page(listed)).toMatchObject({ title: "Field notes" });
    expect(error(other)).toEqual({
      code: "CAPABILITY_DENIED",
      message: `localhost:${site.port} is not among the hosts this fighter's network grant allows (example.org, 127.0.0.1:${site.port})`,
    });
    const [onPort, offPort] = await moves("anyonport", [
      fetchCall(local("/page")),
      fetchCall(`http://localhost:${site.port + 1}/`),
    ]);
    expect(page(onPort)).toMatchObject({ title: "Field notes" });
    expect(error(offPort)?.code).toBe("CAPABILITY_DENIED");
    const [apex] = await moves("subnames", [fetchCall(local("/page"))]);
    expect(error(apex)).toEqual({
      code: "CAPABILITY_DENIED",
      message: `localhost:${site.port} is not among the hosts this fighter's network grant allows (*.localhost)`,
    });
    const bad = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "badhosts",
        description: "x",
        system_prompt: "x",
        capabilities: [{ type: "network", hosts: ["example.org", "https://example.com/"] }],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: {
        code: "VALIDATION_FAILED",
        path: "/manifest/capabilities/0/hosts",
        message: expect.stringContaining('"https://example.com/" is no host pattern'),
      },
    });
    expect(canary.hits).toEqual([]);
  });

  it("refuses both moves to a fighter without the network grant, which is not offered them", async () => {
    const before = { site: site.hits.length, searx: searx.hits.length };
    const results = await moves("plain", [
      fetchCall(siteUrl("/page")),
      { name: "web_search", arguments: { query: "gorillas" } },
    ]);
    expect(results.map((r) => error(r))).toEqual([
      {
        code: "CAPABILITY_DENIED",
        message: 'web_fetch needs the "network" capability, which this fighter does not hold',
      },
      {
        code: "CAPABILITY_DENIED",
        message: 'web_search needs the "network" capability, which this fighter does not hold',
      },
    ]);
    expect(
      fake
        .calls()
        .at(-1)
        ?.tools.filter((t) => t.startsWith("web_")),
    ).toEqual([]);
    expect({ site: site.hits.length, searx: searx.hits.length }).toEqual(before);
  });

  it("sends no secret to the sites it fetches, and none reaches a tool result or the model", async () => {
    const [headers] = await moves("scout", [fetchCall(siteUrl("/headers"))]);
    const sent = JSON.parse(page(headers).text) as Record<string, string>;
    expect(Object.keys(sent).sort()).toEqual([
      "accept",
      "accept-encoding",
      "connection",
      "host",
      "user-agent",
    ]);
    expect(sent["user-agent"]).toBe("Mozilla/5.0 (compatible; Spar web_fetch)");
    // SPAR_MASTER_KEY is the master key: with it set the daemon writes no master.key file.
    const secrets = [...Object.values(SECRETS), "inherited-by-nobody"];
    const received = JSON.stringify([...canary.hits, ...site.hits, ...searx.hits].map((h) => h.headers));
    const results = fake
      .calls()
      .flatMap((c) => c.tool_results)
      .join("\n");
    const prompts = JSON.stringify(fake.requests.map((r) => r.body));
    for (const secret of secrets) {
      expect(received).not.toContain(secret);
      expect(results).not.toContain(secret);
      expect(prompts).not.toContain(secret);
    }
    expect(results).not.toContain("CANARY-REACHED");
    expect(canary.hits).toEqual([]);
  });

  it("has a canary that does count: the test's own requests on each loopback spelling reach it", async () => {
    // Last, so the model's zero above means refused, not unreachable.
    for (const host of ["127.0.0.1", "[::1]", "localhost", "[::ffff:127.0.0.1]"]) {
      const answer = await fetch(`http://${host}:${canary.port}/control`);
      expect(await answer.text()).toBe("CANARY-REACHED");
    }
    expect(canary.hits.map((h) => h.path)).toEqual(Array(4).fill("/control"));
  });
});

describe("moves-web: without a search backend", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[creed]\nreflect = false\n");
    daemon = await startDaemon(home, port);
    const res = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "scout",
        description: "scout",
        system_prompt: "You are scout.",
        capabilities: [{ type: "network" }],
      },
    });
    expect(res.status).toBe(201);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
  });

  it("says web_search has no backend and how the operator sets one", async () => {
    fake.enqueue({ tool_calls: [{ name: "web_search", arguments: { query: "gorillas" } }] });
    const reply = await daemon.request("POST", "/api/v1/fighters/scout/message", { message: "search" });
    expect(reply.status).toBe(200);
    const [result] = fake.calls().at(-1)?.tool_results ?? [];
    expect(JSON.parse(result as string)).toEqual({
      error: {
        code: "CONFIG_INVALID",
        message:
          "web_search has no search backend: the operator sets [moves.web] search_url in config.toml (a URL with {query} that answers JSON, e.g. a SearXNG instance's /search?q={query}&format=json)",
      },
    });
  });

  it("refuses a bad [moves.web] table before the daemon starts", async () => {
    const bad = tempHome();
    try {
      writeFileSync(join(bad, "config.toml"), '[moves.web]\nallow_private = ["http://intranet/"]\n');
      const entry = await runCli(bad, ["start"]);
      expect(entry.code).toBe(1);
      expect(entry.stderr).toContain('"moves.web.allow_private.0" must be an IP address');
      writeFileSync(join(bad, "config.toml"), '[moves.web]\nsearch_url = "http://searx.local/search"\n');
      const template = await runCli(bad, ["start"]);
      expect(template.code).toBe(1);
      expect(template.stderr).toContain("moves.web.search_url");
      writeFileSync(join(bad, "config.toml"), "[moves.web]\ntimeout = 5\n");
      const unknown = await runCli(bad, ["start"]);
      expect(unknown.stderr).toContain('unknown key "moves.web.timeout" (CONFIG_INVALID)');
    } finally {
      removeHome(bad);
    }
  });
});
