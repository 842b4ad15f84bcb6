/**
 * The `web_search` move: the operator's search backend, `[moves.web] search_url`, asked with the
 * query (and limit) in its URL; the answer is JSON, SearXNG's `format=json` shape by default
 * (`{results: [{title, url, content}]}`), or any shape named by `search_results_path` and the field
 * names. The backend is the operator's choice, so it may live on a private address (a local
 * SearXNG): it is exempt from web_fetch's address rules, but redirects from it are not followed, so
 * the exemption reaches that one address and nothing it points to.
 */

import { SparError } from "../../sdk/index.js";
import { guardedGet, type Resolver, systemResolver } from "../../sdk/kits/web.js";
import type { SearchBackend, WebSettings } from "./settings.js";

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchCall {
  settings: WebSettings;
  signal: AbortSignal;
  resolve?: Resolver;
}

/** The template with `{query}` (and `{limit}`) filled in, each URL-encoded. */
export function searchUrl(template: string, query: string, limit: number): string {
  return template.replaceAll("{query}", encodeURIComponent(query)).replaceAll("{limit}", String(limit));
}

const text = (value: unknown, max: number): string =>
  typeof value === "string" ? value.trim().slice(0, max) : "";

/** The results in a backend's answer, at most `limit`; those without a URL are left out. */
export function pickResults(answer: unknown, backend: SearchBackend, limit: number): SearchResult[] {
  let node: unknown = answer;
  for (const key of backend.resultsPath.split(".").filter(Boolean)) {
    node =
      typeof node === "object" && node !== null && Object.hasOwn(node, key)
        ? (node as Record<string, unknown>)[key]
        : undefined;
  }
  if (!Array.isArray(node)) {
    throw new SparError(
      "PROVIDER_ERROR",
      `the search backend's answer has no list of results at "${backend.resultsPath}" (set [moves.web] search_results_path)`,
    );
  }
  const results: SearchResult[] = [];
  for (const item of node) {
    if (results.length >= limit) break;
    if (typeof item !== "object" || item === null) continue;
    const field = (name: string) =>
      Object.hasOwn(item, name) ? (item as Record<string, unknown>)[name] : undefined;
    const url = text(field(backend.urlField), 2000);
    if (!/^https?:\/\//i.test(url)) continue;
    results.push({
      title: text(field(backend.titleField), 300),
      url,
      snippet: text(field(backend.snippetField), 1000).replace(/\s+/g, " "),
    });
  }
  return results;
}

export async function webSearch(
  input: { query: string; limit?: number },
  call: SearchCall,
): Promise<{ query: string; results: SearchResult[] }> {
  const backend = call.settings.search;
  if (!backend) {
    throw new SparError(
      "CONFIG_INVALID",
      "web_search has no search backend: the operator sets [moves.web] search_url in config.toml (a URL with {query} that answers JSON, e.g. a SearXNG instance's /search?q={query}&format=json)",
    );
  }
  const limit = input.limit ?? 5;
  const response = await guardedGet(searchUrl(backend.url, input.query, limit), {
    resolve: call.resolve ?? systemResolver,
    checkHost: () => {},
    // The operator configured this address: the private-address rules are for model-chosen URLs.
    refuseAddress: () => undefined,
    maxRedirects: 0,
    maxBytes: call.settings.maxBytes,
    timeoutMs: call.settings.timeoutMs,
    signal: call.signal,
    headers: {
      "user-agent": call.settings.userAgent,
      accept: "application/json",
      "accept-encoding": "gzip, deflate, br",
    },
    label: "the search backend",
    shown: (url) => url.origin,
  });
  if (response.status < 200 || response.status > 299) {
    const hint =
      response.status === 403
        ? " (a SearXNG instance answers 403 until json is among search.formats in its settings.yml)"
        : "";
    throw new SparError("PROVIDER_ERROR", `the search backend answered HTTP ${response.status}${hint}`);
  }
  if (response.truncated) {
    throw new SparError(
      "PROVIDER_ERROR",
      `the search backend's answer is larger than [moves.web] max_bytes (${call.settings.maxBytes} bytes)`,
    );
  }
  let answer: unknown;
  try {
    answer = JSON.parse(response.body.toString("utf8"));
  } catch {
    throw new SparError("PROVIDER_ERROR", "the search backend did not answer JSON");
  }
  return { query: input.query, results: pickResults(answer, backend, limit) };
}
