/**
 * How the dashboard's files are served at `/` (plugins/dashboard-web through arena-http's public
 * assets), over plain HTTP against a daemon that takes signed requests only: the files are open, with
 * their Content-Security-Policy; the API's own paths are not opened by them (not even spelled with
 * %-escapes, upper case or dot segments); a path that is not a file is 404; the built folder holds the
 * vendored framework and every module the page imports, so nothing comes from elsewhere.
 */
import { readdirSync, readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const PUBLIC = resolve(import.meta.dirname, "..", "..", "dist", "plugins", "dashboard-web", "public");

/** A GET with the path sent exactly as written (fetch would normalize dot segments and escapes). */
function rawGet(
  port: number,
  path: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((done, fail) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, method: "GET" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        body += chunk;
      });
      res.on("end", () => done({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", fail);
    req.end();
  });
}

/** Every relative module a file imports, resolved against its folder, recursively. */
function moduleGraph(entry: string, seen = new Set<string>()): Set<string> {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  const text = readFileSync(join(PUBLIC, entry), "utf8");
  for (const [, specifier] of text.matchAll(/(?:from|import)\s*["']([^"']+)["']/g)) {
    expect(specifier, `${entry} imports ${specifier}`).toMatch(/^\.\.?\//);
    moduleGraph(join(entry, "..", specifier ?? ""), seen);
  }
  return seen;
}

describe("the dashboard's files at /", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
  });

  it("serves the page and its modules unsigned, under a CSP that allows this origin only", async () => {
    const page = await fetch(`${daemon.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    const html = await page.text();
    expect(html).toContain('<script type="module" src="app.js"></script>');
    expect(html).not.toMatch(/<script>|<style|\sstyle=|\son[a-z]+=/);
    for (const [path, type] of [
      ["/app.js", "text/javascript; charset=utf-8"],
      ["/vendor/standalone.module.js", "text/javascript; charset=utf-8"],
      ["/style.css", "text/css; charset=utf-8"],
      ["/favicon.svg", "image/svg+xml"],
    ]) {
      const res = await fetch(`${daemon.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe(type);
    }
  });

  it("never opens the API: /api, /v1 and the WebSocket stay signed, however the path is spelled", async () => {
    for (const path of [
      "/api/v1/fighters",
      "/api/fighters",
      "/%61pi/v1/fighters",
      "/api/v1/%66ighters",
      "/./api/v1/fighters",
      "/x/../api/v1/fighters",
      "/API/v1/fighters",
      "/v1/models",
      "/%76%31/models",
      "/api/v1/ws",
    ]) {
      const res = await rawGet(daemon.port, path);
      expect(res.status, path).toBe(401);
      expect(JSON.parse(res.body).error.code, path).toBe("UNAUTHORIZED");
    }
  });

  it("answers 404 for what is not a file, navigation paths included (the page routes with #/…)", async () => {
    for (const path of ["/nope.js", "/fighters", "/views/", "/index.html/x"]) {
      const res = await rawGet(daemon.port, path);
      expect(res.status, path).toBe(404);
      expect(JSON.parse(res.body).error.code, path).toBe("NOT_FOUND");
    }
    // A dot segment is not a plain path: it is not public, so it needs a signature first.
    expect((await rawGet(daemon.port, "/../index.html")).status).toBe(401);
  });

  it("holds every module the page loads, and nothing from another origin; the bundle's size", () => {
    const graph = moduleGraph("app.js");
    expect(graph.has("vendor/standalone.module.js")).toBe(true);
    const loaded = ["index.html", "style.css", "favicon.svg", ...graph];
    const all = readdirSync(PUBLIC, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name).slice(PUBLIC.length + 1));
    // Everything shipped is loaded by the page, apart from the vendored code's licences.
    expect(all.filter((f) => !loaded.includes(f)).sort()).toEqual([
      "vendor/LICENSE-htm.txt",
      "vendor/LICENSE-preact.txt",
    ]);
    for (const file of loaded) {
      expect(readFileSync(join(PUBLIC, file), "utf8"), file).not.toMatch(
        /(?:src|href)=["']?(?:https?:)?\/\//,
      );
    }
    const bytes = loaded.map((f) => readFileSync(join(PUBLIC, f)));
    const total = bytes.reduce((n, b) => n + b.length, 0);
    const gzipped = bytes.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0);
    console.info(
      `dashboard: ${loaded.length} files, ${total} bytes, ${gzipped} bytes gzipped (each file alone)`,
    );
    expect(total).toBeLessThan(150_000);
  });
});
