/**
 * `/api/...` is the unversioned alias of `/api/v1/...` (DESIGN's API paths): the Arena registers
 * each route once, under `/api/v1`, and fastify's `rewriteUrl` maps an alias onto it before routing,
 * so a start registers, compiles and documents every route once rather than twice. The rewrite is
 * fastify's `request.url`; what the client sent stays `request.originalUrl`, and that is what the
 * Arena reads wherever the URL matters (a signature's `@target-uri`, an error's echo, the log).
 *
 * The first two segments are read as the router reads them, %-escapes decoded (`/%61pi/fighters`
 * reaches `/api/v1/fighters`, as it did when the aliases were routes of their own).
 *
 * @example
 * canonicalApiUrl("/api/fighters?x=1"); // "/api/v1/fighters?x=1"
 * canonicalApiUrl("/api/v1/fighters"); // unchanged
 */
export function canonicalApiUrl(url: string): string {
  const match = /^\/([^/?#]*)\/([^/?#]*)/.exec(url);
  if (!match || decoded(match[1] as string) !== "api" || decoded(match[2] as string) === "v1") return url;
  return `/api/v1/${url.slice((match[1] as string).length + 2)}`;
}

function decoded(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
