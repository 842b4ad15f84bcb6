/**
 * A GET that checks where it goes before it goes there. For every hop (the first URL and each
 * redirect, followed here, never by the HTTP client): the scheme, the host rules, DNS resolution,
 * every resolved address; then the connection is made to the very address that was checked (the
 * socket gets an IP, with the Host header and the TLS server name set to the URL's host), so a DNS
 * answer that changes between the check and the connection (rebinding) changes nothing. The body is
 * read up to a byte cap, decompressed under the same cap, within a time cap and the caller's signal.
 * What may be fetched is the caller's rule (`checkHost`, `refuseAddress`, usually policy.ts's
 * `addressRefusal`): web_fetch (moves-web) and the skill installer (lib/skills/source.ts) share this.
 */
import { lookup } from "node:dns/promises";
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { isSparError, SparError } from "../../sdk/errors.js";
import { formatIp, hostLiteral, type Ip, parseIp, unmapped } from "./address.js";

/** Every address a name resolves to. Injectable so tests can play DNS. */
export type Resolver = (hostname: string) => Promise<string[]>;

/** The system's resolver (getaddrinfo through node:dns), every address of the name. */
export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/** The last hop's URL, status and headers, as `onHeaders` sees them before the body is read. */
export interface FinalHeaders {
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
}

/** What `guardedGet` checks on every hop and the limits it keeps. */
export interface GuardedGet {
  resolve: Resolver;
  /** Throws when the URL's host may not be fetched at all (checked before resolution, every hop). */
  checkHost(url: URL): void;
  /** Why `ip` (an address `url`'s host resolved to) may not be connected to, or undefined. */
  refuseAddress(url: URL, ip: Ip): string | undefined;
  maxRedirects: number;
  maxBytes: number;
  timeoutMs: number;
  /** The caller's signal: for a move, cancellation of the turn or the kernel's tool timeout. */
  signal: AbortSignal;
  headers: Record<string, string>;
  /** Sees the final response's headers before its body is read; throw to refuse it. */
  onHeaders?(response: FinalHeaders): void;
  /** What to call the request in errors ("web_fetch", "the search backend", "skill install"). */
  label: string;
  /** How a URL appears in errors; default in full (the search backend shows its origin only). */
  shown?: (url: URL) => string;
  /** Extra trusted certificates (tests: a local TLS server). */
  ca?: string;
}

/** The final response: its body up to `maxBytes` (decompressed), and whether it was cut there. */
export interface GuardedResponse extends FinalHeaders {
  body: Buffer;
  truncated: boolean;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// Failures where the next checked address of the same host is worth a try.
const TRY_NEXT = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "ETIMEDOUT"]);

/** GET `target`, following up to `maxRedirects` redirects, every hop checked. */
export async function guardedGet(target: string, options: GuardedGet): Promise<GuardedResponse> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  let url = parseTarget(target);
  const shown = (u: URL) => options.shown?.(u) ?? u.href;
  try {
    for (let hop = 0; ; hop++) {
      const response = await requestOnce(url, hop, options, signal);
      const location = response.headers.location;
      if (!REDIRECTS.has(response.statusCode ?? 0) || !location) {
        const final = { url: url.href, status: response.statusCode ?? 0, headers: response.headers };
        try {
          options.onHeaders?.(final);
        } catch (err) {
          response.destroy();
          throw err;
        }
        return { ...final, ...(await readBody(response, options.maxBytes)) };
      }
      response.destroy();
      if (hop >= options.maxRedirects) {
        throw new SparError(
          "PROVIDER_ERROR",
          options.maxRedirects === 0
            ? `${options.label} answered ${response.statusCode} (a redirect), which is not followed`
            : `${shown(url)} redirected more than ${options.maxRedirects} times; stopped`,
        );
      }
      const next = URL.parse(location, url.href);
      if (!next) throw new SparError("PROVIDER_ERROR", `${shown(url)} redirected to an invalid URL`);
      url = parseTarget(next.href, hop + 1);
    }
  } catch (err) {
    if (isSparError(err)) throw err;
    if (timeout.aborted) {
      throw new SparError(
        "MOVE_TIMEOUT",
        `${options.label}: ${shown(url)} did not answer in full within ${options.timeoutMs / 1000} s`,
      );
    }
    if (options.signal.aborted) throw options.signal.reason ?? err;
    throw new SparError(
      "PROVIDER_ERROR",
      `${options.label}: could not fetch ${shown(url)}: ${describe(err)}`,
    );
  }
}

/** An http(s) URL without credentials, or VALIDATION_FAILED (FORBIDDEN when a redirect brought it). */
function parseTarget(text: string, hop = 0): URL {
  const url = URL.parse(text);
  const where = hop === 0 ? "" : `the redirect (hop ${hop}) `;
  const code = hop === 0 ? "VALIDATION_FAILED" : "FORBIDDEN";
  if (!url) throw new SparError(code, `${where}${JSON.stringify(text)} is not a valid URL`);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new SparError(code, `${where}${url.protocol} URLs are not fetched: only http and https`);
  }
  if (url.username || url.password) {
    throw new SparError(code, `${where}URLs with a user name or password are not fetched`);
  }
  return url;
}

/** One request to one checked address (trying the host's other checked addresses if it is down). */
async function requestOnce(
  url: URL,
  hop: number,
  options: GuardedGet,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  options.checkHost(url);
  const addresses = await resolveChecked(url, hop, options, signal);
  let lastError: unknown;
  for (const ip of addresses) {
    try {
      return await connect(url, ip, options, signal);
    } catch (err) {
      lastError = err;
      if (!TRY_NEXT.has((err as NodeJS.ErrnoException).code ?? "") || signal.aborted) throw err;
    }
  }
  throw lastError;
}

/** Every address the host resolves to, each checked: one refused address refuses the host. */
async function resolveChecked(
  url: URL,
  hop: number,
  options: GuardedGet,
  signal: AbortSignal,
): Promise<Ip[]> {
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const literal = hostLiteral(hostname);
  const addresses = literal ? [literal] : await resolveName(hostname, options.resolve, signal);
  for (const ip of addresses) {
    const reason = options.refuseAddress(url, ip);
    if (reason) {
      const what = hop === 0 ? url.href : `the redirect (hop ${hop}) to ${url.href}`;
      const via = literal ? "" : ` (${hostname} resolves to ${formatIp(ip)})`;
      throw new SparError("FORBIDDEN", `refused ${what}${via}: ${reason}`);
    }
  }
  return addresses;
}

async function resolveName(hostname: string, resolve: Resolver, signal: AbortSignal): Promise<Ip[]> {
  let answers: string[];
  try {
    answers = await abortable(resolve(hostname), signal);
  } catch (err) {
    if (signal.aborted) throw err;
    throw new SparError("NOT_FOUND", `no address found for ${hostname} (${describe(err)})`);
  }
  const addresses = answers.map((a) => parseIp(a));
  if (addresses.length === 0) throw new SparError("NOT_FOUND", `no address found for ${hostname}`);
  const bad = answers.find((_, i) => addresses[i] === undefined);
  if (bad !== undefined)
    throw new SparError("FORBIDDEN", `${hostname} resolved to ${JSON.stringify(bad)}, no IP`);
  return addresses as Ip[];
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((done, fail) => {
    const onAbort = () => fail(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(done, fail).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Connects to exactly `checked`: the socket is given the IP, and any lookup answers with it too. */
function connect(url: URL, checked: Ip, options: GuardedGet, signal: AbortSignal): Promise<IncomingMessage> {
  const ip = unmapped(checked);
  const address = formatIp(ip);
  const family = ip.family;
  const pinned: LookupFunction = (_host, opts, callback) => {
    if (opts.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const secure = url.protocol === "https:";
  const hostname = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "");
  const request = secure ? httpsRequest : httpRequest;
  return new Promise((done, fail) => {
    const req = request({
      host: address,
      family,
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: "GET",
      headers: { ...options.headers, host: url.host },
      lookup: pinned,
      agent: false,
      signal,
      // The certificate is checked against the URL's host, never against the IP we dialled.
      ...(secure && !hostLiteral(hostname) ? { servername: hostname } : {}),
      ...(options.ca ? { ca: options.ca } : {}),
    });
    req.once("response", done);
    req.once("error", fail);
    req.end();
  });
}

/** The body, decompressed, at most `maxBytes` of it (raw and decoded); `truncated` when there was more. */
async function readBody(
  response: IncomingMessage,
  maxBytes: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const encoding = String(response.headers["content-encoding"] ?? "identity")
    .trim()
    .toLowerCase();
  const decompressor =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : undefined;
  if (!decompressor && encoding !== "identity" && encoding !== "") {
    response.destroy();
    throw new SparError("UNSUPPORTED_MEDIA_TYPE", `the answer is encoded as ${encoding}, which is not read`);
  }
  let raw = 0;
  let rawCapped = false;
  const source: Readable = decompressor ? response.pipe(decompressor) : response;
  if (decompressor) {
    response.on("data", (chunk: Buffer) => {
      raw += chunk.length;
      if (raw > maxBytes && !rawCapped) {
        rawCapped = true;
        response.unpipe();
        decompressor.end();
      }
    });
    // A broken compressed stream surfaces through the decompressor, which is what we read.
    response.on("error", (err) => decompressor.destroy(err));
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      const room = maxBytes - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        size += room;
        truncated = true;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } catch (err) {
    // A decompressor cut off at the raw cap complains about the missing end: what we have stands.
    if (!rawCapped) throw err;
  } finally {
    response.destroy();
    if (source !== response) source.destroy();
  }
  return { body: Buffer.concat(chunks), truncated: truncated || rawCapped };
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN") return "the name does not resolve";
  return e?.message ?? String(err);
}
