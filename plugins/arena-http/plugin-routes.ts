/**
 * Routes other plugins add (`hooks.arena.routes`, DESIGN §3.1): `api` routes behind the API's
 * authentication, `webhook` routes on their own listener, `public` assets on the API listener. They
 * are collected when the daemon is ready, after every plugin has been applied, and matched here by a
 * small router of their own, so the Arena's own routes can be compiled at start, beside the store's
 * key derivation, without waiting for them.
 */
import { type Readable, Transform } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import {
  formatSchemaErrors,
  type PluginRoute,
  type PublicAssets,
  type RouteRegistry,
  type RouteResponse,
  SparError,
  validatorFor,
} from "../../sdk/index.js";
import { isReservedPath } from "./public-assets.js";
import { disconnectSignal } from "./routes.js";

interface Compiled {
  route: PluginRoute;
  segments: string[];
}

/** Matches `/a/:b/c` and a trailing `/*` against a path; returns the params or undefined. */
function match(segments: string[], path: string): Record<string, string> | undefined {
  const parts = path.split("/").filter(Boolean);
  const params: Record<string, string> = {};
  for (const [i, segment] of segments.entries()) {
    if (segment === "*") {
      params["*"] = parts.slice(i).map(decodeURIComponent).join("/");
      return params;
    }
    const part = parts[i];
    if (part === undefined) return undefined;
    if (segment.startsWith(":")) params[segment.slice(1)] = decodeURIComponent(part);
    else if (segment !== part) return undefined;
  }
  return parts.length === segments.length ? params : undefined;
}

export interface PluginRoutes extends RouteRegistry {
  /** The route for a request on a listener, with its params, if any plugin added one. */
  find(
    listener: "api" | "webhook",
    method: string,
    path: string,
  ): { route: PluginRoute; params: Record<string, string> } | undefined;
  readonly assets: readonly PublicAssets[];
  hasWebhooks(): boolean;
  /** Every `api` and `webhook` route added, in the order they were added (for the OpenAPI document). */
  list(): readonly PluginRoute[];
}

export function createPluginRoutes(): PluginRoutes {
  const routes: Compiled[] = [];
  const assets: PublicAssets[] = [];
  return {
    add(route) {
      if (route.listener === "public") {
        const { prefix } = route;
        // `/` or plain segments; the API's own paths stay the API's (public-assets.ts).
        if (
          (prefix !== "/" && !/^(?:\/[a-z0-9][a-z0-9_-]*)+$/i.test(prefix)) ||
          prefix.startsWith("/api") ||
          isReservedPath(prefix)
        ) {
          throw new SparError(
            "PLUGIN_INVALID",
            `public assets need the prefix "/" or one like "/dashboard" (not under /api or /v1), not "${prefix}"`,
          );
        }
        if (assets.some((a) => a.prefix === prefix)) {
          throw new SparError("PLUGIN_INVALID", `two plugins publish files at "${prefix}"`);
        }
        assets.push(route);
        return;
      }
      if (route.listener === "webhook" && typeof route.verify !== "function") {
        throw new SparError(
          "PLUGIN_INVALID",
          `the webhook ${route.method} ${route.path} has no verify: a webhook checks its sender's signature`,
        );
      }
      if (route.listener === "api" && !route.path.startsWith("/api/v1/")) {
        throw new SparError(
          "PLUGIN_INVALID",
          `an api route's path starts with /api/v1/, not "${route.path}"`,
        );
      }
      if (
        route.bodyLimit !== undefined &&
        (route.listener !== "api" ||
          !Number.isInteger(route.bodyLimit) ||
          route.bodyLimit < 1 ||
          route.bodyLimit > MAX_ROUTE_BODY_BYTES)
      ) {
        throw new SparError(
          "PLUGIN_INVALID",
          `${route.method} ${route.path}: bodyLimit is for api routes, 1 to ${MAX_ROUTE_BODY_BYTES} bytes`,
        );
      }
      const segments = route.path.split("/").filter(Boolean);
      const clash = routes.find(
        (r) =>
          r.route.listener === route.listener &&
          r.route.method === route.method &&
          r.route.path === route.path,
      );
      if (clash) throw new SparError("PLUGIN_INVALID", `two plugins add ${route.method} ${route.path}`);
      routes.push({ route, segments });
    },
    find(listener, method, path) {
      // `/api/…` answers like `/api/v1/…`, as for the Arena's own routes.
      const canonical =
        listener === "api" && !path.startsWith("/api/v1/") ? path.replace(/^\/api\//, "/api/v1/") : path;
      for (const { route, segments } of routes) {
        if (route.listener !== listener || route.method !== method) continue;
        const params = match(segments, canonical);
        if (params) return { route, params };
      }
      return undefined;
    },
    assets,
    hasWebhooks: () => routes.some((r) => r.route.listener === "webhook"),
    list: () => routes.map((r) => r.route),
  };
}

/** The most a plugin's api route may take in a body (PluginRoute.bodyLimit). */
export const MAX_ROUTE_BODY_BYTES = 64 * 1024 * 1024;

/**
 * Holds a plugin route's body to its limit before it is read: a Content-Length over it is refused at
 * once, and a body sent without one is cut off when it passes it. Both 413 PAYLOAD_TOO_LARGE.
 */
export function limitBody(payload: Readable, declared: string | undefined, limit: number): Readable {
  const tooLarge = () =>
    new SparError("PAYLOAD_TOO_LARGE", `the body is larger than this route takes (${limit} bytes)`);
  if (declared !== undefined && Number(declared) > limit) throw tooLarge();
  let seen = 0;
  return payload.pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        seen += chunk.length;
        done(seen > limit ? tooLarge() : null, chunk);
      },
    }),
  );
}

/** Runs a plugin's route for a fastify request: body checked against its schema, answer sent. */
export async function runPluginRoute(
  found: { route: PluginRoute; params: Record<string, string> },
  request: FastifyRequest & { rawBody?: string | Buffer; sparKeyId?: string },
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { route, params } = found;
  if (route.params) {
    const validate = validatorFor(route.params);
    if (!validate(params)) {
      // As fastify answers for the Arena's own routes' params (errors.ts).
      throw new SparError("VALIDATION_FAILED", formatSchemaErrors(validate.errors, "params"), {
        path: `/params${validate.errors?.[0]?.instancePath ?? ""}`,
      });
    }
  }
  if (route.body) {
    const validate = validatorFor(route.body);
    if (!validate(request.body)) {
      throw new SparError("VALIDATION_FAILED", formatSchemaErrors(validate.errors, "body"));
    }
  }
  const raw = request.rawBody;
  const answer: RouteResponse = await route.handler({
    method: request.method,
    path: request.originalUrl.split("?")[0] ?? "",
    params,
    query: request.query as Record<string, string>,
    headers: request.headers,
    body: request.body,
    ...(raw !== undefined ? { rawBody: Buffer.isBuffer(raw) ? raw : Buffer.from(raw) } : {}),
    ip: request.ip,
    ...(request.sparKeyId ? { keyId: request.sparKeyId } : {}),
    signal: disconnectSignal(reply),
  });
  if (answer.headers) reply.headers(answer.headers);
  const status = answer.status ?? 200;
  const schema = route.response?.[String(status)];
  const json = !Buffer.isBuffer(answer.body) && typeof answer.body !== "string";
  if (schema && json && answer.body !== undefined) {
    // Serialised with the schema the document shows, as fastify does its own routes' answers.
    const payload = reply.serializeInput(answer.body as Record<string, unknown>, schema);
    return reply.status(status).type("application/json; charset=utf-8").send(payload);
  }
  return reply.status(status).send(answer.body ?? null);
}
