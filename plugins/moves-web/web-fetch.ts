/**
 * The `web_fetch` move: the grant's host allowlist (policy.ts) and the address rules on every hop
 * (lib/web/policy.ts), the guarded GET (lib/web/fetch.ts), and the body made readable (content.ts).
 */

import { type Capability, type MoveCaller, SparError } from "../../sdk/index.js";
import {
  addressRefusal,
  grantHosts,
  guardedGet,
  hostAllowed,
  hostKey,
  isMetadataName,
  type Resolver,
  systemResolver,
  urlPort,
} from "../../sdk/kits/web.js";
import { type FetchResult, type Media, mediaOf, readableResult } from "./content.js";
import type { WebSettings } from "./settings.js";

export const MAX_REDIRECTS = 5;

export interface FetchCall {
  settings: WebSettings;
  grants: readonly Capability[];
  /** The fighters waiting on the turn: a host must be allowed by each one's grants too. */
  callers?: readonly MoveCaller[];
  signal: AbortSignal;
  /** Tests play DNS with this; the move uses the system resolver. */
  resolve?: Resolver;
  /** Tests trust a local TLS server's certificate with this. */
  ca?: string;
  /**
   * Told the final URL once its server has answered (before the body is read): from then on what
   * the call returns, or the error it throws, holds the page's content (the move marks the turn).
   */
  answered?(url: string): void;
}

const ACCEPT =
  "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,text/*;q=0.8,*/*;q=0.1";

export async function webFetch(
  input: { url: string; max_bytes?: number },
  call: FetchCall,
): Promise<FetchResult> {
  const { settings } = call;
  // This fighter's allowlist, then each caller's: a host must pass every one.
  const allowlists = [
    { whose: "this fighter's", hosts: grantHosts(call.grants) },
    ...(call.callers ?? []).map((c) => ({
      whose: `fighter ${JSON.stringify(c.name)}'s (which started this turn)`,
      hosts: grantHosts(c.grants),
    })),
  ];
  const checkHost = (url: URL) => {
    const key = hostKey(url.hostname);
    if (isMetadataName(key))
      throw new SparError("FORBIDDEN", `refused ${url.href}: ${key} is a cloud metadata service`);
    const port = urlPort(url);
    for (const { whose, hosts } of allowlists) {
      if (!hosts || hostAllowed(hosts, key, port)) continue;
      const listed = hosts.listed.length > 0 ? hosts.listed.join(", ") : "none";
      const shown = `${key.includes(":") ? `[${key}]` : key}${url.port ? `:${url.port}` : ""}`;
      throw new SparError(
        "CAPABILITY_DENIED",
        `${shown} is not among the hosts ${whose} network grant allows (${listed})`,
      );
    }
  };
  let media: Media | undefined;
  const response = await guardedGet(input.url, {
    resolve: call.resolve ?? systemResolver,
    checkHost,
    refuseAddress: (url, ip) => addressRefusal(hostKey(url.hostname), ip, settings.allow, urlPort(url)),
    maxRedirects: MAX_REDIRECTS,
    maxBytes: Math.min(input.max_bytes ?? settings.maxBytes, settings.maxBytes),
    timeoutMs: settings.timeoutMs,
    signal: call.signal,
    headers: { "user-agent": settings.userAgent, accept: ACCEPT, "accept-encoding": "gzip, deflate, br" },
    onHeaders: (final) => {
      call.answered?.(final.url);
      media = mediaOf(final.url, final.headers);
    },
    label: "web_fetch",
    ...(call.ca ? { ca: call.ca } : {}),
  });
  return readableResult(response, media as Media);
}
