/**
 * guardedGet's contract, whoever calls it (web_fetch, the search backend, the skill installer):
 * the caller's rules run on every hop with that hop's URL and addresses, the connection goes to the
 * address checked, and the caps, the label and `shown` hold. Real servers on 127.0.0.1; DNS played.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isSparError, SparError } from "../../sdk/errors.js";
import { formatIp, type Ip } from "./address.js";
import { type GuardedGet, guardedGet, type Resolver } from "./fetch.js";

async function failure(work: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await work;
  } catch (err) {
    if (isSparError(err)) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("expected the request to fail");
}

describe("guardedGet", () => {
  let server: Server;
  let port: number;
  let seen: { path: string; host: string | undefined }[];
  let lookups: string[];
  let checked: string[];
  const names: Record<string, string[]> = {};
  const resolve: Resolver = async (hostname) => {
    lookups.push(hostname);
    const answer = names[hostname];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return answer;
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ path: req.url ?? "", host: req.headers.host });
      const url = new URL(req.url ?? "/", "http://x");
      const to = url.searchParams.get("to");
      if (url.pathname === "/redirect" && to) {
        res.writeHead(302, { location: to });
        res.end();
      } else if (url.pathname === "/gzip") {
        res.writeHead(200, { "content-encoding": "gzip" });
        res.end(gzipSync("z".repeat(10_000)));
      } else if (url.pathname === "/odd-encoding") {
        res.writeHead(200, { "content-encoding": "zstd" });
        res.end("x");
      } else if (url.pathname === "/hang") {
        // Never answers.
      } else res.end(`body of ${url.pathname}`);
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(
    () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  );

  beforeEach(() => {
    seen = [];
    lookups = [];
    checked = [];
    for (const key of Object.keys(names)) delete names[key];
  });

  /** Allows loopback on the test server's port only, recording every check. */
  const options = (extra: Partial<GuardedGet> = {}): GuardedGet => ({
    resolve,
    checkHost: (url) => {
      checked.push(`host ${url.host}`);
      if (url.hostname === "blocked.test")
        throw new SparError("CAPABILITY_DENIED", "blocked.test is not allowed");
    },
    refuseAddress: (url, ip: Ip) => {
      checked.push(`address ${formatIp(ip)}`);
      return Number(url.port) === port ? undefined : `${formatIp(ip)} on port ${url.port} is not for tests`;
    },
    maxRedirects: 3,
    maxBytes: 1024,
    timeoutMs: 10_000,
    signal: new AbortController().signal,
    headers: { "user-agent": "guard test" },
    label: "the tester",
    ...extra,
  });
  const at = (path: string, host = "127.0.0.1") => `http://${host}:${port}${path}`;

  it("checks every hop and connects to the address it checked, with the URL's host", async () => {
    names["site.test"] = ["127.0.0.1"];
    const response = await guardedGet(
      at(`/redirect?to=${encodeURIComponent(at("/end", "site.test"))}`),
      options(),
    );
    expect(response).toMatchObject({ status: 200, url: at("/end", "site.test"), truncated: false });
    expect(response.body.toString()).toBe("body of /end");
    expect(checked).toEqual([
      `host 127.0.0.1:${port}`,
      "address 127.0.0.1",
      `host site.test:${port}`,
      "address 127.0.0.1",
    ]);
    expect(lookups).toEqual(["site.test"]);
    expect(seen.map((s) => s.host)).toEqual([`127.0.0.1:${port}`, `site.test:${port}`]);
  });

  it("refuses a hop the caller's rules refuse, before connecting, naming the hop", async () => {
    const away = await failure(
      guardedGet(at(`/redirect?to=${encodeURIComponent("http://127.0.0.1:1/")}`), options()),
    );
    expect(away).toEqual({
      code: "FORBIDDEN",
      message: "refused the redirect (hop 1) to http://127.0.0.1:1/: 127.0.0.1 on port 1 is not for tests",
    });
    const denied = await failure(
      guardedGet(at(`/redirect?to=${encodeURIComponent(`http://blocked.test:${port}/`)}`), options()),
    );
    expect(denied.code).toBe("CAPABILITY_DENIED");
    expect(seen).toHaveLength(2);
    names["bad.test"] = ["not-an-ip"];
    expect(await failure(guardedGet(`http://bad.test:${port}/`, options()))).toMatchObject({
      code: "FORBIDDEN",
    });
    expect(await failure(guardedGet(`http://nowhere.test:${port}/`, options()))).toMatchObject({
      code: "NOT_FOUND",
    });
  });

  it("follows at most maxRedirects, and says so with the label when it follows none", async () => {
    const loop = at(`/redirect?to=${encodeURIComponent(at("/redirect?to=%2Fredirect%3Fto%3D%252Fx"))}`);
    expect(await failure(guardedGet(loop, options({ maxRedirects: 1 })))).toMatchObject({
      code: "PROVIDER_ERROR",
      message: expect.stringContaining("redirected more than 1 times"),
    });
    expect(await failure(guardedGet(loop, options({ maxRedirects: 0 })))).toEqual({
      code: "PROVIDER_ERROR",
      message: "the tester answered 302 (a redirect), which is not followed",
    });
  });

  it("lets the caller refuse by the headers, caps the body, decoded or not", async () => {
    const refused = await failure(
      guardedGet(
        at("/x"),
        options({
          onHeaders: ({ status }) => {
            throw new SparError("UNSUPPORTED_MEDIA_TYPE", `no thanks (${status})`);
          },
        }),
      ),
    );
    expect(refused).toEqual({ code: "UNSUPPORTED_MEDIA_TYPE", message: "no thanks (200)" });
    const gzip = await guardedGet(at("/gzip"), options());
    expect(gzip.truncated).toBe(true);
    expect(gzip.body.toString()).toBe("z".repeat(1024));
    expect(await failure(guardedGet(at("/odd-encoding"), options()))).toMatchObject({
      code: "UNSUPPORTED_MEDIA_TYPE",
    });
  });

  it("times out with the label, and shows URLs as the caller wants", async () => {
    const slow = await failure(
      guardedGet(at("/hang?token=secret"), options({ timeoutMs: 200, shown: (u) => u.origin })),
    );
    expect(slow).toEqual({
      code: "MOVE_TIMEOUT",
      message: `the tester: http://127.0.0.1:${port} did not answer in full within 0.2 s`,
    });
  });
});
