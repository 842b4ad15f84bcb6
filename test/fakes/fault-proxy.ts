/**
 * A fault-injecting HTTP proxy on 127.0.0.1, put between the daemon and a fake LLM server: each
 * request takes the next fault from a script (or passes through), so a test can say "the first two
 * calls get a 429, the third goes through" and then count what the daemon really sent. Faults act
 * on the wire, where real networks fail: latency, a reset connection, a stream cut or stalled
 * mid-way, a malformed body, an error status with or without Retry-After.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { startFakeHttp } from "./http-fake.js";

/** What the proxy does to one request. */
export type Fault =
  | { kind: "pass" }
  /** Waits this long, then passes the request through. */
  | { kind: "latency"; ms: number }
  /** Destroys the client connection before any answer. */
  | { kind: "reset" }
  /** Passes the answer through but cuts the connection after this many bytes of its body. */
  | { kind: "truncate"; afterBytes: number }
  /** Passes this many bytes of the answer's body, then sends nothing more, holding the connection open. */
  | { kind: "stall"; afterBytes: number }
  /** A 200 whose body is not JSON (or, for a stream, an event that is not). */
  | { kind: "malformed" }
  /** An error status with an OpenAI-shaped error body; `retryAfter` adds the header. */
  | { kind: "status"; status: number; retryAfter?: string };

export interface FaultProxy {
  /** The base URL to give the daemon in place of the fake's, with the same path (`/v1`). */
  readonly url: string;
  /** Requests the proxy received, with the fault each got. */
  readonly log: { path: string; fault: Fault["kind"] }[];
  /** Queues faults for the next requests, in order; when the queue is empty requests pass. */
  script(...faults: Fault[]): void;
  reset(): void;
  close(): Promise<void>;
}

/**
 * Starts a proxy in front of `upstream` (a base URL such as `http://127.0.0.1:1234/v1`).
 *
 * @example
 * const proxy = await startFaultProxy(fake.url);
 * proxy.script({ kind: "status", status: 429, retryAfter: "0" }, { kind: "pass" });
 */
export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const queue: Fault[] = [];
  const log: FaultProxy["log"] = [];
  const http = await startFakeHttp(async (req, res, body, signal) => {
    const fault = queue.shift() ?? { kind: "pass" };
    log.push({ path: req.url ?? "/", fault: fault.kind });
    switch (fault.kind) {
      case "reset":
        res.socket?.resetAndDestroy();
        return;
      case "malformed":
        res.writeHead(200, { "content-type": wantsStream(body) ? "text/event-stream" : "application/json" });
        res.end(
          wantsStream(body)
            ? 'data: {"id": "x", "choices": [{"delta": \n\ndata: [DONE]\n\n'
            : '{"id": "x", "choices": [',
        );
        return;
      case "status": {
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (fault.retryAfter !== undefined) headers["retry-after"] = fault.retryAfter;
        res.writeHead(fault.status, headers);
        const type = fault.status === 429 ? "rate_limit_error" : "server_error";
        res.end(
          JSON.stringify({ error: { message: `injected ${fault.status}`, type, param: null, code: null } }),
        );
        return;
      }
      case "latency":
        await sleep(fault.ms, undefined, { signal });
        return forward(req, res, body, target, signal);
      case "truncate":
      case "stall":
        return forward(req, res, body, target, signal, fault);
      case "pass":
        return forward(req, res, body, target, signal);
    }
  });
  return {
    url: `http://127.0.0.1:${http.port}${target.pathname}`,
    log,
    script: (...faults) => {
      queue.push(...faults);
    },
    reset: () => {
      queue.length = 0;
      log.length = 0;
    },
    close: () => http.close(),
  };
}

function wantsStream(body: string): boolean {
  try {
    return (JSON.parse(body) as { stream?: unknown }).stream === true;
  } catch {
    return false;
  }
}

/** Sends the request upstream and copies the answer back, cut or stalled as the fault says. */
function forward(
  req: IncomingMessage,
  res: ServerResponse,
  body: string,
  target: URL,
  signal: AbortSignal,
  cut?: { kind: "truncate" | "stall"; afterBytes: number },
): Promise<void> {
  return new Promise((done) => {
    const headers = { ...req.headers, host: target.host };
    delete headers["content-length"];
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        signal,
      },
      (answer) => {
        const passHeaders = { ...answer.headers };
        // The body may be cut: a length the client would wait for must not be promised.
        if (cut) delete passHeaders["content-length"];
        res.writeHead(answer.statusCode ?? 502, passHeaders);
        let sent = 0;
        answer.on("data", (chunk: Buffer) => {
          if (!cut) return void res.write(chunk);
          if (sent >= cut.afterBytes) return;
          const part = chunk.subarray(0, cut.afterBytes - sent);
          sent += part.length;
          res.write(part);
          if (sent < cut.afterBytes) return;
          answer.destroy();
          // A stall keeps the socket open and silent until the client gives up (or the proxy closes).
          if (cut.kind === "truncate") res.socket?.destroy();
          done();
        });
        answer.on("end", () => {
          if (!res.writableEnded && (!cut || sent < cut.afterBytes)) res.end();
          done();
        });
        answer.on("error", () => done());
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent && !signal.aborted) res.writeHead(502).end();
      done();
    });
    upstream.end(body);
  });
}
