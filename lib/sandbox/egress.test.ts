import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { grantHosts, type HostAllowlist } from "../web/host-grants.js";
import { parseAllowPrivate } from "../web/policy.js";
import { type EgressProxy, type EgressRules, openEgress } from "./egress.js";
import { egressOf } from "./grants.js";

const SETTING = { name: "[sandbox] allow_private", path: "sandbox.allow_private", who: "the proxy" };

/** One raw exchange with the proxy over its socket: what it answered, whole. */
function exchange(socket: string, request: string): Promise<string> {
  return new Promise((done, fail) => {
    const client = connect(socket);
    let answer = "";
    client.on("data", (chunk) => {
      answer += chunk.toString();
    });
    client.once("error", fail);
    client.once("close", () => done(answer));
    client.write(request);
    // A tunnel stays open: end our side once the answer has had time to arrive.
    setTimeout(() => client.end(), 300);
  });
}

describe("the egress proxy", () => {
  let dir: string;
  let site: Server;
  let sitePort: number;
  let hits = 0;
  let proxy: EgressProxy | undefined;
  const open = async (rules: Omit<EgressRules, "allow"> & { allowed?: string[] }) => {
    const socket = join(dir, `p-${Math.random().toString(36).slice(2)}.sock`);
    proxy = await openEgress(socket, { ...rules, allow: parseAllowPrivate(rules.allowed ?? [], SETTING) });
    return socket;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "spar-egress-"));
    site = createServer((req, res) => {
      hits += 1;
      res.end(`site saw ${req.method} ${req.url} host=${req.headers.host}`);
    });
    await new Promise<void>((done) => site.listen(0, "127.0.0.1", done));
    sitePort = (site.address() as { port: number }).port;
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  afterAll(() => {
    site.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses loopback, private, metadata and their other spellings before dialling anything", async () => {
    const socket = await open({});
    const targets = [
      `127.0.0.1:${sitePort}`,
      `[::1]:${sitePort}`,
      `[::ffff:127.0.0.1]:${sitePort}`,
      "10.0.0.1:80",
      "192.168.1.1:443",
      "100.64.0.1:443",
      "169.254.169.254:80",
      "metadata.google.internal:80",
      "[fe80::1]:80",
      "224.0.0.1:80",
      "0.0.0.0:80",
    ];
    for (const target of targets) {
      const answer = await exchange(socket, `CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`);
      expect(answer, target).toMatch(/^HTTP\/1\.1 403 Forbidden/);
    }
    const plain = await exchange(socket, `GET http://2130706433:${sitePort}/x HTTP/1.1\r\nhost: a\r\n\r\n`);
    expect(plain).toMatch(/^HTTP\/1\.1 403/);
    expect(plain).toContain("127.0.0.1 is a loopback address");
    expect(hits).toBe(0);
    expect(proxy?.refused.length).toBe(targets.length + 1);
  });

  it("refuses a name that resolves to a private address (DNS rebinding to loopback included)", async () => {
    const socket = await open({ resolve: async () => ["93.184.216.34", "127.0.0.1"] });
    const answer = await exchange(socket, `CONNECT rebind.example:${sitePort} HTTP/1.1\r\n\r\n`);
    expect(answer).toMatch(/403/);
    expect(answer).toContain("rebind.example resolves to 127.0.0.1");
    expect(hits).toBe(0);
  });

  it("reaches an address the operator allows, tunnelled or plain, and only the hosts the grants name", async () => {
    const socket = await open({
      allowed: [`127.0.0.1:${sitePort}`],
      hostSets: [grantHosts([{ type: "network", hosts: `127.0.0.1:${sitePort}` }]) as HostAllowlist],
    });
    const plain = await exchange(
      socket,
      `GET http://127.0.0.1:${sitePort}/page?q=1 HTTP/1.1\r\nhost: x\r\n\r\n`,
    );
    expect(plain).toMatch(/^HTTP\/1\.1 200/);
    expect(plain).toContain(`site saw GET /page?q=1 host=127.0.0.1:${sitePort}`);
    const tunnel = await exchange(
      socket,
      `CONNECT 127.0.0.1:${sitePort} HTTP/1.1\r\n\r\nGET /t HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n`,
    );
    expect(tunnel).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/);
    expect(tunnel).toContain("site saw GET /t host=t");
    const other = await exchange(socket, `CONNECT 127.0.0.1:${sitePort + 1} HTTP/1.1\r\n\r\n`);
    expect(other).toContain("is not among the hosts this fighter's network grant names");
  });

  it("needs a host every fighter's grant names when several limit the turn", async () => {
    const pattern = (text: string) => grantHosts([{ type: "network", hosts: text }]) as HostAllowlist;
    const socket = await open({
      allowed: ["127.0.0.1"],
      hostSets: [pattern("127.0.0.1"), pattern("localhost")],
    });
    const answer = await exchange(socket, `CONNECT 127.0.0.1:${sitePort} HTTP/1.1\r\n\r\n`);
    expect(answer).toMatch(/403/);
  });

  it("refuses what is no proxy request", async () => {
    const socket = await open({});
    expect(await exchange(socket, "GET /relative HTTP/1.1\r\nhost: x\r\n\r\n")).toMatch(/^HTTP\/1\.1 400/);
    expect(await exchange(socket, "GET ftp://example.com/ HTTP/1.1\r\nhost: x\r\n\r\n")).toMatch(/400/);
  });
});

describe("egressOf: the network a turn's grants give its processes", () => {
  it("is none without a network grant, any host for full_access, no hosts or *, else the named ones", () => {
    expect(egressOf([[{ type: "shell_exec" }]])).toBeUndefined();
    expect(egressOf([[{ type: "full_access" }]])).toEqual({});
    expect(egressOf([[{ type: "network" }]])).toEqual({});
    expect(egressOf([[{ type: "network", hosts: "*" }]])).toEqual({});
    expect(egressOf([[{ type: "network", hosts: ["a.example", "*.b.example:8443"] }]])).toEqual({
      hostSets: [
        {
          patterns: [{ exact: "a.example" }, { suffix: ".b.example", port: 8443 }],
          listed: ["a.example", "*.b.example:8443"],
        },
      ],
    });
  });

  it("is none when any fighter of the chain holds no network, and every named list otherwise", () => {
    expect(egressOf([[{ type: "full_access" }], [{ type: "agent_message" }]])).toBeUndefined();
    expect(egressOf([[{ type: "full_access" }], [{ type: "network", hosts: "a.example" }]])).toEqual({
      hostSets: [{ patterns: [{ exact: "a.example" }], listed: ["a.example"] }],
    });
  });
});
