/**
 * The metrics listener (`[metrics] listen`): plain HTTP serving only `GET /metrics`, for a Prometheus
 * server, which cannot sign requests. Unsigned, so it binds to loopback unless a bearer token is
 * configured (`bearer_token_env`): then every request must carry it, from anywhere.
 */
import { timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import { parseListen, SparError } from "../../sdk/index.js";
import { isLoopbackHost, portInUse } from "../../sdk/kits/http.js";
import type { Metrics, MetricsSettings } from "./metrics.js";

/** Where the listener binds and the token it requires; CONFIG_INVALID for an open non-loopback one. */
export function listenerPlan(
  settings: MetricsSettings,
  env: Readonly<Record<string, string | undefined>>,
): { host: string; port: number; token?: string } | undefined {
  if (!settings.listen) return undefined;
  const { host, port } = parseListen(settings.listen, "[metrics] listen");
  const name = settings.bearer_token_env;
  const token = name ? env[name] : undefined;
  if (name && !token) {
    throw new SparError("CONFIG_INVALID", `[metrics] bearer_token_env names ${name}, which is not set`);
  }
  if (!token && !isLoopbackHost(host)) {
    throw new SparError(
      "CONFIG_INVALID",
      `[metrics] listen = "${settings.listen}" is not a loopback address: set [metrics] bearer_token_env so the listener requires a token`,
    );
  }
  return { host, port, ...(token ? { token } : {}) };
}

function authorized(header: string | undefined, token: string): boolean {
  const expected = Buffer.from(`Bearer ${token}`);
  const given = Buffer.from(header ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Starts the listener; resolves once it listens. */
export async function startListener(
  plan: { host: string; port: number; token?: string },
  metrics: Metrics,
  failed: (err: unknown) => void,
): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path !== "/metrics") {
      response
        .writeHead(404, { "content-type": "text/plain" })
        .end("not found: this listener serves /metrics\n");
      return;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("GET /metrics\n");
      return;
    }
    if (plan.token && !authorized(request.headers.authorization, plan.token)) {
      response
        .writeHead(401, { "www-authenticate": 'Bearer realm="spar metrics"', "content-type": "text/plain" })
        .end("unauthorized\n");
      return;
    }
    metrics.text().then(
      (text) => response.writeHead(200, { "content-type": metrics.contentType }).end(text),
      (err: unknown) => {
        failed(err);
        response.writeHead(500, { "content-type": "text/plain" }).end("metrics could not be read\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(err.code === "EADDRINUSE" ? portInUse(plan.host, plan.port, "[metrics] listen") : err),
    );
    server.listen(plan.port, plan.host, () => resolve());
  });
  return server;
}
