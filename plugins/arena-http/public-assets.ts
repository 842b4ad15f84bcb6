/**
 * Files plugins publish on the API listener (a dashboard): read-only, GET and HEAD only, from the
 * plugin's folder, never outside it, with their own Content-Security-Policy. They are open to the
 * page's browser; every API call the page makes passes the same authentication as any other.
 *
 * A plugin may publish at `/` (the dashboard does). The API's own paths (`/api/…`, `/v1/…`, the
 * WebSocket under `/api`) always win over files: they are never looked up here and never open. A
 * path that is not a file is 404, even without a dot: the dashboard routes with `#/…`, so no
 * navigation path other than `/` ever reaches the server.
 */
import { createReadStream } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import { extname, join, relative, resolve, sep } from "node:path";
import type { FastifyReply, FastifyRequest } from "fastify";
import { SparError } from "../../sdk/index.js";
import { echo } from "./errors.js";
import type { PluginRoutes } from "./plugin-routes.js";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** Same-origin scripts, styles, images and API calls; no framing, no plugins, no other origins. */
export const DEFAULT_ASSET_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function notFound(request: FastifyRequest): SparError {
  return new SparError(
    "NOT_FOUND",
    `no route ${request.method} ${echo(request.originalUrl.split("?")[0] ?? "")}`,
  );
}

/** `/api` and `/v1` and below: the Arena's routes, whatever a plugin published at `/`. */
const RESERVED = /^\/(?:api|v1)(?:\/|$)/i;
/**
 * A path the router can only send to the files: plain segments, no %-escape, no dot segment, no
 * empty segment. The router decodes escapes before matching (`/%61pi/v1/fighters` reaches the
 * `/api/v1/fighters` handler), so only a path like this may skip authentication.
 */
const PLAIN_PATH = /^(?:\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*\/?$/;

/** Whether a path (or a public prefix) is the API's own, never a plugin's files. */
export function isReservedPath(path: string): boolean {
  return RESERVED.test(path);
}

const under = (prefix: string, path: string) =>
  prefix === "/" || path === prefix || path.startsWith(`${prefix}/`);

/** The asset whose prefix holds the path, the longest prefix first (`/dashboard` over `/`). */
function assetFor(routes: PluginRoutes, path: string) {
  if (isReservedPath(path)) return undefined;
  let found: PluginRoutes["assets"][number] | undefined;
  for (const asset of routes.assets) {
    if (under(asset.prefix, path) && asset.prefix.length > (found?.prefix.length ?? -1)) found = asset;
  }
  return found;
}

/** Whether a path is a public asset's (so it is served without a signature). */
export function servesAsset(routes: PluginRoutes, path: string): boolean {
  return PLAIN_PATH.test(path) && assetFor(routes, path) !== undefined;
}

export async function serveAsset(routes: PluginRoutes, request: FastifyRequest, reply: FastifyReply) {
  let path: string;
  try {
    path = decodeURIComponent(request.originalUrl.split("?")[0] ?? "");
  } catch {
    throw notFound(request);
  }
  const asset = assetFor(routes, path);
  if (!asset) throw notFound(request);
  const root = await realpath(asset.dir);
  const wanted = path.slice(asset.prefix.length).replace(/^\/+/, "") || "index.html";
  // Resolved through symlinks, then required to stay inside the folder.
  const file = await realpath(resolve(root, wanted)).catch(() => undefined);
  const inside =
    file !== undefined &&
    !relative(root, file).startsWith("..") &&
    (file === root || file.startsWith(`${root}${sep}`));
  const info = inside ? await stat(file).catch(() => undefined) : undefined;
  if (!file || !info?.isFile()) throw notFound(request);
  reply.header("content-type", TYPES[extname(file).toLowerCase()] ?? "application/octet-stream");
  reply.header("content-length", String(info.size));
  // After the Arena's own headers (onSend), so this page's policy is the one that holds.
  reply.header("x-spar-csp", asset.csp ?? DEFAULT_ASSET_CSP);
  reply.header("cache-control", "no-cache");
  if (request.method === "HEAD") return reply.send();
  return reply.send(createReadStream(join(file)));
}
