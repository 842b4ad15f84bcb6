/**
 * The egress proxy: the only way out of a sandbox that has network. The sandbox has a network
 * namespace of its own, with nothing but its own loopback; a forwarder inside it
 * (egress-forward.ts) listens on that loopback and carries each connection over a Unix socket to
 * this proxy, which the daemon runs for the one call. It speaks HTTP proxy: `CONNECT host:port`
 * (HTTPS and anything tunnelled) and absolute-form plain HTTP requests (`GET http://host/…`). Each
 * connection is checked before anything is dialled, with web_fetch's rules:
 *
 * - the host must match the fighter's `network` grant (its `hosts`, as lib/web/host-grants.ts reads
 *   them for web_fetch too; none, or `*`, means any host);
 * - the name is resolved here, and every address it resolves to must be public: loopback, private,
 *   link-local, CGNAT, multicast, metadata and reserved addresses are refused (IPv4-mapped and
 *   numeric spellings included), unless the operator's `[sandbox] allow_private` lists them;
 * - the connection goes to the checked address itself, so a second lookup cannot move it.
 *
 * So no sandboxed process reaches the daemon's API, its webhook listener, a database or Redis on
 * this machine, or the local network. A program that ignores the proxy variables has no network.
 */
import { lookup } from "node:dns/promises";
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import { connect, type Server, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { formatIp, hostLiteral, type Ip, parseIp, unmapped } from "../web/address.js";
import { type HostAllowlist, hostAllowed } from "../web/host-grants.js";
import { type AllowPrivate, addressRefusal, hostKey, isMetadataName, splitPort } from "../web/policy.js";

/** What the egress proxy lets a sandboxed process reach: which hosts, and the operator's exceptions to the address rules. */
export interface EgressRules {
  /**
   * The hosts the grants name, one list per fighter whose grant names some: a host must be in every
   * list. None: any host (still only public addresses).
   */
  hostSets?: readonly HostAllowlist[];
  /** The operator's exceptions to the address rules (`[sandbox] allow_private`). */
  allow: AllowPrivate;
  /** Name resolution (tests may give their own); all addresses of the name. */
  resolve?: (name: string) => Promise<string[]>;
}

export interface EgressProxy {
  /** The TCP port on loopback, when the proxy listens there (macOS: no socket can be lent in). */
  port?: number;
  /** Connections refused, each with its reason (for the call's logs and tests). */
  readonly refused: readonly string[];
  close(): Promise<void>;
}

const systemResolve = async (name: string) => (await lookup(name, { all: true })).map((a) => a.address);

/** Starts the proxy on the Unix socket at `socketPath`, or (null) on a free loopback port. */
export async function openEgress(socketPath: string | null, rules: EgressRules): Promise<EgressProxy> {
  const refused: string[] = [];
  const sockets = new Set<Duplex>();
  const track = (socket: Duplex) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const server: Server = createServer((req, res) => {
    track(req.socket);
    void forwardRequest(req, res, rules, refused, track);
  });
  server.on("connection", track);
  server.on("connect", (req: IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    void tunnel(req, client, head, rules, refused, track);
  });
  await new Promise<void>((done, fail) => {
    server.once("error", fail);
    if (socketPath === null) server.listen(0, "127.0.0.1", () => done());
    else server.listen(socketPath, () => done());
  });
  const address = server.address();
  return {
    ...(typeof address === "object" && address ? { port: address.port } : {}),
    refused,
    close: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}

/** Where a connection may go: the checked address to dial, or why not. */
async function destination(
  host: string,
  port: number,
  rules: EgressRules,
): Promise<{ ip: Ip } | { refused: string }> {
  const key = hostKey(host.replace(/^\[|\]$/g, ""));
  if (!key || !Number.isInteger(port) || port < 1 || port > 65_535) return { refused: `no valid host:port` };
  if (rules.hostSets?.some((hosts) => !hostAllowed(hosts, key, port)))
    return { refused: `${key}:${port} is not among the hosts this fighter's network grant names` };
  if (isMetadataName(key)) return { refused: `${key} is a cloud metadata service, never reached` };
  const literal = hostLiteral(key);
  let addresses: Ip[];
  if (literal) addresses = [literal];
  else {
    try {
      const answers = await (rules.resolve ?? systemResolve)(key);
      addresses = answers.map((a) => parseIp(a)).filter((ip): ip is Ip => ip !== undefined);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) return { refused: `no address found for ${key}` };
  }
  for (const ip of addresses) {
    const reason = addressRefusal(key, ip, rules.allow, port);
    if (reason) return { refused: literal ? reason : `${key} resolves to ${formatIp(ip)}: ${reason}` };
  }
  return { ip: unmapped(addresses[0] as Ip) };
}

function refuse(client: Duplex, status: string, reason: string): void {
  const body = `spar sandbox egress: ${reason}\n`;
  client.end(
    `HTTP/1.1 ${status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

async function tunnel(
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  rules: EgressRules,
  refused: string[],
  track: (s: Duplex) => void,
): Promise<void> {
  const target = splitPort(req.url ?? "");
  const where = target?.port === undefined ? undefined : await destination(target.host, target.port, rules);
  if (!where || "refused" in where) {
    const reason = where?.refused ?? `CONNECT needs host:port, not ${JSON.stringify(req.url)}`;
    refused.push(reason);
    refuse(client, "403 Forbidden", reason);
    return;
  }
  const upstream: Socket = connect({ host: formatIp(where.ip), port: target?.port as number });
  track(upstream);
  upstream.once("connect", () => {
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.once("error", (err: NodeJS.ErrnoException) => {
    if (upstream.connecting)
      refuse(client, "502 Bad Gateway", `could not connect: ${err.code ?? err.message}`);
    else client.destroy();
  });
  client.once("error", () => upstream.destroy());
  client.once("close", () => upstream.destroy());
}

/** Hop-by-hop headers, and the proxy's own, are not passed on. */
const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

async function forwardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  rules: EgressRules,
  refused: string[],
  track: (s: Duplex) => void,
): Promise<void> {
  const url = URL.parse(req.url ?? "");
  if (url?.protocol !== "http:") {
    const reason = `only absolute http:// requests and CONNECT pass the proxy, not ${JSON.stringify(req.url)}`;
    refused.push(reason);
    res.writeHead(400, { "content-type": "text/plain; charset=utf-8", connection: "close" });
    res.end(`spar sandbox egress: ${reason}\n`);
    return;
  }
  const port = Number(url.port) || 80;
  const where = await destination(url.hostname, port, rules);
  if ("refused" in where) {
    refused.push(where.refused);
    res.writeHead(403, { "content-type": "text/plain; charset=utf-8", connection: "close" });
    res.end(`spar sandbox egress: ${where.refused}\n`);
    return;
  }
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP.has(name)) headers[name] = value;
  }
  headers.connection = "close";
  const upstream = request({
    host: formatIp(where.ip),
    port,
    method: req.method,
    path: `${url.pathname}${url.search}`,
    headers: { ...headers, host: url.host },
    agent: false,
  });
  upstream.on("socket", track);
  upstream.once("response", (answer) => {
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !HOP.has(name)) out[name] = value;
    }
    res.writeHead(answer.statusCode ?? 502, { ...out, connection: "close" });
    answer.pipe(res);
  });
  upstream.once("error", (err: NodeJS.ErrnoException) => {
    if (res.headersSent) res.destroy();
    else {
      res.writeHead(502, { "content-type": "text/plain; charset=utf-8", connection: "close" });
      res.end(`spar sandbox egress: could not connect: ${err.code ?? err.message}\n`);
    }
  });
  req.pipe(upstream);
}
