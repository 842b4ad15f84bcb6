/**
 * web_fetch against real HTTP(S) servers on loopback, with DNS played by an injected resolver: names
 * that resolve to loopback, to a mix of addresses, or differently on a second lookup (rebinding).
 * The canary on 127.0.0.1 counts every request that reaches it; it must stay at zero.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Capability, isSparError, type MoveCaller } from "../../sdk/index.js";
import type { Resolver } from "../../sdk/kits/web.js";
import { DEFAULTS, webSettings } from "./settings.js";
import { webFetch } from "./web-fetch.js";

// A certificate for secure.test (self-signed, valid 2000–2100), trusted only through `ca` below.
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgoYJZ5fXYJ9B9r0KE
tIWN5YzuS37rX5cGroyi6frt6rChRANCAAR6uVi9tZA5xnogADCvpV/r+x3XqR0L
GK0/XjePWCbhcjv3ElZmdl7+KMSKm6G6LCWhKzTngPXBboGxS2qPRtSb
-----END PRIVATE KEY-----
`;
const CERT = `-----BEGIN CERTIFICATE-----
MIIBaDCCAQ2gAwIBAgIBATAKBggqhkjOPQQDAjAWMRQwEgYDVQQDDAtzZWN1cmUu
dGVzdDAgFw0wMDAxMDEwMDAwMDBaGA8yMTAwMDEwMTAwMDAwMFowFjEUMBIGA1UE
AwwLc2VjdXJlLnRlc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAR6uVi9tZA5
xnogADCvpV/r+x3XqR0LGK0/XjePWCbhcjv3ElZmdl7+KMSKm6G6LCWhKzTngPXB
boGxS2qPRtSbo0owSDAPBgNVHRMBAf8EBTADAQH/MBYGA1UdEQQPMA2CC3NlY3Vy
ZS50ZXN0MB0GA1UdDgQWBBSGDcYHJXA5MVYuSkA6/4ZsiNY8ITAKBggqhkjOPQQD
AgNJADBGAiEAlCYVAqU+6u4skWUH6DSbXDHTWJBh7+De6lRakbPaGjYCIQC6qsrp
xI84i8Nu9Y902aWsdfuZdeKbSq0BPZmzb3eE7w==
-----END CERTIFICATE-----
`;

interface Seen {
  path: string;
  host: string | undefined;
  servername?: string | false;
}

interface TestServer {
  server: Server;
  port: number;
  seen: Seen[];
}

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((done) => server.listen(0, host, done));
  return (server.address() as AddressInfo).port;
}

async function startServer(
  host: string,
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => res.end("ok"),
): Promise<TestServer> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? "", host: req.headers.host });
    handler(req, res);
  });
  return { server, port: await listen(server, host), seen };
}

const close = (s: Server | undefined) =>
  new Promise<void>((done) => {
    if (!s) return done();
    s.closeAllConnections();
    s.close(() => done());
  });

async function failure(work: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await work;
  } catch (err) {
    if (isSparError(err)) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("expected the fetch to fail");
}

describe("web_fetch", () => {
  let canary: TestServer;
  let site: TestServer;
  let tls: { server: Server; port: number; seen: Seen[] };
  let lookups: string[];
  const names: Record<string, string[] | string[][]> = {};

  /** Plays DNS from `names`; a list of lists answers with the next list on each lookup (rebinding). */
  const resolve: Resolver = async (hostname) => {
    lookups.push(hostname);
    const answer = names[hostname];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    if (Array.isArray(answer[0])) {
      const lists = answer as string[][];
      return lists.length > 1 ? (lists.shift() as string[]) : (lists[0] as string[]);
    }
    return answer as string[];
  };

  const settings = (table = {}) => webSettings({ allow_private: ["127.0.0.2"], ...table });
  const fetchAs = (
    url: string,
    options: {
      table?: object;
      grants?: Capability[];
      callers?: MoveCaller[];
      max_bytes?: number;
      signal?: AbortSignal;
    } = {},
  ) =>
    webFetch(
      { url, ...(options.max_bytes ? { max_bytes: options.max_bytes } : {}) },
      {
        settings: settings(options.table),
        grants: options.grants ?? [{ type: "network" }],
        ...(options.callers ? { callers: options.callers } : {}),
        signal: options.signal ?? new AbortController().signal,
        resolve,
        ca: CERT,
      },
    );

  beforeAll(async () => {
    canary = await startServer("127.0.0.1", (_req, res) => res.end("CANARY"));
    site = await startServer("127.0.0.2", (req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const to = url.searchParams.get("to");
      if (url.pathname === "/redirect" && to) {
        res.writeHead(Number(url.searchParams.get("status") ?? 302), { location: to });
        res.end();
      } else if (url.pathname.startsWith("/hop/")) {
        const n = Number(url.pathname.slice(5));
        res.writeHead(301, { location: n > 0 ? `/hop/${n - 1}` : "/page" });
        res.end();
      } else if (url.pathname === "/page") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end("<title>A page</title><h1>Hello</h1><p>from <a href='/next'>the site</a></p>");
      } else if (url.pathname === "/json") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"a": [1, 2]}');
      } else if (url.pathname === "/latin1") {
        res.writeHead(200, { "content-type": "text/plain; charset=ISO-8859-1" });
        res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
      } else if (url.pathname === "/meta-charset") {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(
          Buffer.concat([Buffer.from('<meta charset="windows-1252"><p>'), Buffer.from([0x93, 0x71, 0x94])]),
        );
      } else if (url.pathname === "/png") {
        res.writeHead(200, { "content-type": "image/png", "content-length": "8" });
        res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
      } else if (url.pathname === "/untyped-html") {
        res.end("<!doctype html><p>sniffed</p>");
      } else if (url.pathname === "/untyped-binary") {
        res.end(Buffer.from([1, 2, 0, 3]));
      } else if (url.pathname === "/big") {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("x".repeat(5000));
      } else if (url.pathname === "/bomb") {
        res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
        res.end(gzipSync(Buffer.alloc(20 * 1024 * 1024, "a")));
      } else if (url.pathname === "/gzip") {
        res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
        res.end(gzipSync("compressed text"));
      } else if (url.pathname === "/missing") {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("no such page");
      } else if (url.pathname === "/hang") {
        // Never answers: the time cap or the signal must end the call.
      } else res.end("ok");
    });
    const tlsServer = createTlsServer({ key: KEY, cert: CERT }, (req, res) => {
      tls.seen.push({
        path: req.url ?? "",
        host: req.headers.host,
        // The SNI name the client sent: set at runtime, though @types/node does not declare it.
        servername: (req.socket as TLSSocket & { servername?: string | false }).servername,
      });
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("secret-free secure text");
    });
    tls = { server: tlsServer, port: await listen(tlsServer, "127.0.0.2"), seen: [] };
  });

  afterAll(async () => {
    await Promise.all([close(canary?.server), close(site?.server), close(tls?.server)]);
  });

  beforeEach(() => {
    lookups = [];
    canary.seen.length = 0;
    site.seen.length = 0;
    tls.seen.length = 0;
    for (const key of Object.keys(names)) delete names[key];
  });

  const canaryUrl = () => `http://127.0.0.1:${canary.port}/`;
  const siteUrl = (path: string) => `http://127.0.0.2:${site.port}${path}`;

  it("reads an allowed page: HTML as text with its title, relative links made absolute", async () => {
    const result = await fetchAs(siteUrl("/page"));
    expect(result).toEqual({
      url: siteUrl("/page"),
      status: 200,
      content_type: "text/html",
      title: "A page",
      text: `# Hello\n\nfrom [the site](${siteUrl("/next")})`,
      truncated: false,
    });
  });

  it("refuses every spelling of loopback, and names that resolve to it, before connecting", async () => {
    names["evil.test"] = ["127.0.0.1"];
    names["mixed.test"] = ["93.184.216.34", "127.0.0.1"];
    names["mapped.test"] = ["::ffff:127.0.0.1"];
    const port = canary.port;
    const attempts = [
      canaryUrl(),
      `http://2130706433:${port}/`,
      `http://0177.0.0.1:${port}/`,
      `http://0x7f.1:${port}/`,
      `http://127.1:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://[::ffff:7f00:1]:${port}/`,
      `http://[::1]:${port}/`,
      `http://[64:ff9b::7f00:1]:${port}/`,
      `http://0.0.0.0:${port}/`,
      `http://evil.test:${port}/`,
      `http://mixed.test:${port}/`,
      `http://mapped.test:${port}/`,
    ];
    for (const url of attempts) {
      const error = await failure(fetchAs(url));
      expect(error.code, url).toBe("FORBIDDEN");
    }
    expect((await failure(fetchAs(`http://evil.test:${port}/`))).message).toMatch(
      /evil\.test resolves to 127\.0\.0\.1\): 127\.0\.0\.1 is a loopback address/,
    );
    expect(canary.seen).toEqual([]);
  });

  it("refuses cloud metadata by name without looking it up, and by address", async () => {
    names["metadata.google.internal"] = ["127.0.0.2"];
    const byName = await failure(fetchAs(`http://metadata.google.internal:${site.port}/`));
    expect(byName).toMatchObject({ code: "FORBIDDEN" });
    expect(byName.message).toMatch(/cloud metadata service/);
    expect(lookups).toEqual([]);
    const byAddress = await failure(fetchAs("http://169.254.169.254/latest/meta-data/"));
    expect(byAddress.message).toMatch(/169\.254\.169\.254 is a cloud metadata address/);
    expect(site.seen).toEqual([]);
  });

  it("connects to the address it checked, so DNS rebinding after the check changes nothing", async () => {
    // First lookup: the allowed 127.0.0.2. Any later one would say the canary's 127.0.0.1.
    names["rebind.test"] = [["127.0.0.2"], ["127.0.0.1"]];
    const result = await fetchAs(`http://rebind.test:${site.port}/page`);
    expect(result.title).toBe("A page");
    expect(lookups).toEqual(["rebind.test"]);
    expect(site.seen).toEqual([{ path: "/page", host: `rebind.test:${site.port}` }]);
    expect(canary.seen).toEqual([]);
  });

  it("speaks TLS to the checked address with the URL's host as server name and certificate name", async () => {
    names["secure.test"] = ["127.0.0.2"];
    names["other.test"] = ["127.0.0.2"];
    const result = await fetchAs(`https://secure.test:${tls.port}/doc?q=1`);
    expect(result).toMatchObject({ status: 200, text: "secret-free secure text" });
    expect(tls.seen).toEqual([
      { path: "/doc?q=1", host: `secure.test:${tls.port}`, servername: "secure.test" },
    ]);
    // The same server under another name fails verification: the certificate is checked against the name.
    const mismatch = await failure(fetchAs(`https://other.test:${tls.port}/`));
    expect(mismatch.code).toBe("PROVIDER_ERROR");
    expect(mismatch.message).toMatch(/other\.test/);
  });

  it("tries the host's next checked address when one refuses connections", async () => {
    names["two.test"] = ["127.0.0.3", "127.0.0.2"];
    const result = await fetchAs(`http://two.test:${site.port}/json`, {
      table: { allow_private: ["127.0.0.2", "127.0.0.3"] },
    });
    expect(result).toMatchObject({ status: 200, content_type: "application/json", text: '{"a": [1, 2]}' });
  });

  it("follows redirects itself, checking every hop, at most five", async () => {
    const five = await fetchAs(siteUrl("/hop/4"));
    expect(five).toMatchObject({ url: siteUrl("/page"), title: "A page" });
    const six = await failure(fetchAs(siteUrl("/hop/5")));
    expect(six).toMatchObject({ code: "PROVIDER_ERROR" });
    expect(six.message).toMatch(/redirected more than 5 times/);

    names["evil.test"] = ["127.0.0.1"];
    names.localhost = ["127.0.0.1", "::1"];
    for (const [to, status] of [
      [canaryUrl(), 302],
      [`http://0x7f.1:${canary.port}/`, 301],
      [`http://[::ffff:7f00:1]:${canary.port}/`, 307],
      [`http://evil.test:${canary.port}/`, 308],
      [`http://localhost:${canary.port}/`, 303],
    ] as const) {
      const error = await failure(
        fetchAs(siteUrl(`/redirect?status=${status}&to=${encodeURIComponent(to)}`)),
      );
      expect(error.code, to).toBe("FORBIDDEN");
      expect(error.message).toMatch(/the redirect \(hop 1\)/);
    }
    const scheme = await failure(
      fetchAs(siteUrl(`/redirect?to=${encodeURIComponent("file:///etc/passwd")}`)),
    );
    expect(scheme).toMatchObject({ code: "FORBIDDEN" });
    expect(scheme.message).toMatch(/file: URLs are not fetched/);
    expect(canary.seen).toEqual([]);
  });

  it("holds a grant's hosts allowlist on the first URL and on every redirect", async () => {
    names["allowed.test"] = ["127.0.0.2"];
    names["wild.allowed.test"] = ["127.0.0.2"];
    const grants = [{ type: "network", hosts: ["allowed.test", "*.allowed.test"] }];
    expect((await fetchAs(`http://allowed.test:${site.port}/page`, { grants })).status).toBe(200);
    expect((await fetchAs(`http://wild.allowed.test:${site.port}/page`, { grants })).status).toBe(200);
    const other = await failure(fetchAs(siteUrl("/page"), { grants }));
    expect(other).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(other.message).toMatch(
      /^127\.0\.0\.2:\d+ is not among the hosts .*\(allowed\.test, \*\.allowed\.test\)$/,
    );
    const away = await failure(
      fetchAs(`http://allowed.test:${site.port}/redirect?to=${encodeURIComponent(siteUrl("/page"))}`, {
        grants,
      }),
    );
    expect(away).toMatchObject({ code: "CAPABILITY_DENIED" });
    // full_access beside a restricted grant lifts the restriction.
    const wide = await fetchAs(siteUrl("/page"), { grants: [...grants, { type: "full_access" }] });
    expect(wide.status).toBe(200);
  });

  it("holds every caller's hosts too in a turn another fighter started, naming whose grant refused", async () => {
    names["allowed.test"] = ["127.0.0.2"];
    const malloryGrants = [{ type: "network", hosts: "allowed.test" }];
    const mallory = { id: "m-1", name: "mallory", grants: malloryGrants, capabilities: malloryGrants };
    const boss = {
      id: "b-1",
      name: "boss",
      grants: [{ type: "full_access" }],
      capabilities: [{ type: "full_access" }],
    };
    const callers = [boss, mallory];
    const open = [{ type: "full_access" }];
    expect((await fetchAs(`http://allowed.test:${site.port}/page`, { grants: open, callers })).status).toBe(
      200,
    );
    const refused = await failure(fetchAs(siteUrl("/page"), { grants: open, callers }));
    expect(refused).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(refused.message).toMatch(
      /^127\.0\.0\.2:\d+ is not among the hosts fighter "mallory"'s \(which started this turn\) network grant allows \(allowed\.test\)$/,
    );
    // A redirect away from the caller's hosts is refused as well.
    const away = `http://allowed.test:${site.port}/redirect?to=${encodeURIComponent(siteUrl("/page"))}`;
    expect(await failure(fetchAs(away, { grants: open, callers }))).toMatchObject({
      code: "CAPABILITY_DENIED",
    });
  });

  it("holds a port in a grant's hosts: that host on that port only", async () => {
    names["allowed.test"] = ["127.0.0.2"];
    const grants = [{ type: "network", hosts: `allowed.test:${site.port}` }];
    expect((await fetchAs(`http://allowed.test:${site.port}/page`, { grants })).status).toBe(200);
    const otherPort = await failure(fetchAs(`http://allowed.test:${tls.port}/`, { grants }));
    expect(otherPort).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(otherPort.message).toMatch(new RegExp(`^allowed\\.test:${tls.port} is not among the hosts`));
    expect(tls.seen).toEqual([]);
  });

  it("opens a loopback address on the listed port only: the canary beside it stays shut", async () => {
    const local = await startServer("127.0.0.1", (req, res) => {
      if (req.url === "/away") {
        res.writeHead(302, { location: `http://localhost:${canary.port}/` });
        res.end();
      } else {
        res.writeHead(200, { "content-type": "text/html" });
        res.end("<title>Local</title><p>local page</p>");
      }
    });
    try {
      names.localhost = ["127.0.0.1"];
      const table = { allow_private: [`127.0.0.1:${local.port}`] };
      const page = await fetchAs(`http://127.0.0.1:${local.port}/`, { table });
      expect(page).toMatchObject({ title: "Local", text: "local page" });
      expect((await fetchAs(`http://localhost:${local.port}/`, { table })).title).toBe("Local");
      const direct = await failure(fetchAs(canaryUrl(), { table }));
      expect(direct).toEqual({
        code: "FORBIDDEN",
        message: `refused ${canaryUrl()}: 127.0.0.1 is a loopback address ([moves.web] allow_private allows it on port ${local.port} only, not ${canary.port})`,
      });
      const redirected = await failure(fetchAs(`http://127.0.0.1:${local.port}/away`, { table }));
      expect(redirected.code).toBe("FORBIDDEN");
      expect(redirected.message).toMatch(/the redirect \(hop 1\).*localhost resolves to 127\.0\.0\.1/);
      expect(local.seen.map((s) => s.path)).toEqual(["/", "/", "/away"]);
      expect(canary.seen).toEqual([]);
    } finally {
      await close(local.server);
    }
  });

  it("caps what it reads, compressed or not, and says so", async () => {
    const big = await fetchAs(siteUrl("/big"), { max_bytes: 1024 });
    expect(big).toMatchObject({ truncated: true });
    expect(big.text).toHaveLength(1024);
    const bomb = await fetchAs(siteUrl("/bomb"), { table: { max_bytes: 65536 } });
    expect(bomb.truncated).toBe(true);
    expect(bomb.text).toHaveLength(65536);
    // A model cannot ask for more than the operator's cap.
    const capped = await fetchAs(siteUrl("/big"), { table: { max_bytes: 2048 }, max_bytes: 4096 });
    expect(capped.text).toHaveLength(2048);
    expect(await fetchAs(siteUrl("/gzip"))).toMatchObject({ text: "compressed text", truncated: false });
  });

  it("reads text in its charset and JSON as it is; refuses binary with a summary", async () => {
    expect((await fetchAs(siteUrl("/latin1"))).text).toBe("café");
    expect((await fetchAs(siteUrl("/meta-charset"))).text).toBe("“q”");
    expect(await fetchAs(siteUrl("/json"))).toMatchObject({
      content_type: "application/json",
      text: '{"a": [1, 2]}',
    });
    expect(await fetchAs(siteUrl("/untyped-html"))).toMatchObject({
      content_type: "text/html",
      text: "sniffed",
    });
    const png = await failure(fetchAs(siteUrl("/png")));
    expect(png).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE" });
    expect(png.message).toMatch(/is image\/png, 8 bytes/);
    expect(await failure(fetchAs(siteUrl("/untyped-binary")))).toMatchObject({
      code: "UNSUPPORTED_MEDIA_TYPE",
    });
    expect(await fetchAs(siteUrl("/missing"))).toMatchObject({ status: 404, text: "no such page" });
  });

  it("refuses what is no http(s) URL, and URLs with credentials", async () => {
    for (const url of [
      "file:///etc/passwd",
      "ftp://example.com/",
      "gopher://x/",
      "not a url",
      "javascript:1",
    ]) {
      expect((await failure(fetchAs(url))).code, url).toBe("VALIDATION_FAILED");
    }
    expect((await failure(fetchAs(`http://user:pw@127.0.0.2:${site.port}/`))).message).toMatch(
      /user name or password/,
    );
  });

  it("gives up after timeout_s, and stops when the move's signal fires", async () => {
    const slow = await failure(fetchAs(siteUrl("/hang"), { table: { timeout_s: 0.3 } }));
    expect(slow).toMatchObject({ code: "MOVE_TIMEOUT" });
    expect(slow.message).toMatch(/did not answer in full within 0\.3 s/);
    const controller = new AbortController();
    const reason = new Error("turn cancelled");
    const pending = fetchAs(siteUrl("/hang"), { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 50);
    await expect(pending).rejects.toBe(reason);
  });

  it("says when a name does not resolve", async () => {
    const error = await failure(fetchAs("http://nowhere.test/"));
    expect(error).toMatchObject({ code: "NOT_FOUND" });
    expect(error.message).toMatch(/no address found for nowhere\.test/);
  });

  it("fills the defaults plugin.json declares when [moves.web] is absent", async () => {
    const { readFileSync } = await import("node:fs");
    const manifest = JSON.parse(readFileSync(new URL("./plugin.json", import.meta.url), "utf8"));
    const properties = manifest.sections["moves.web"].properties as Record<string, { default?: unknown }>;
    const declared = Object.fromEntries(
      Object.entries(properties)
        .filter(([, p]) => p.default !== undefined)
        .map(([k, p]) => [k, p.default]),
    );
    expect(declared).toEqual(DEFAULTS);
    expect(webSettings()).toMatchObject({ maxBytes: 1_048_576, timeoutMs: 20_000 });
  });
});
