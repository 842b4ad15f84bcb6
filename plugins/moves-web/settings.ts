/**
 * The `[moves.web]` table. plugin.json's schema checks it and fills its defaults when the table is in
 * config.toml; when it is absent the kernel hands over `{}` (it fills defaults only for top-level
 * tables), so the same defaults are applied here. A test in web-fetch.test.ts keeps the two in step.
 */
import { type AllowPrivate, parseAllowPrivate } from "../../sdk/kits/web.js";
import { WEB_ALLOW } from "./policy.js";

export interface WebTable {
  allow_private?: string[];
  search_url?: string;
  search_results_path?: string;
  search_title_field?: string;
  search_url_field?: string;
  search_snippet_field?: string;
  max_bytes?: number;
  timeout_s?: number;
  user_agent?: string;
}

export const DEFAULTS = {
  allow_private: [] as string[],
  search_results_path: "results",
  search_title_field: "title",
  search_url_field: "url",
  search_snippet_field: "content",
  max_bytes: 1_048_576,
  timeout_s: 20,
  user_agent: "Mozilla/5.0 (compatible; Spar web_fetch)",
};

export interface WebSettings {
  allow: AllowPrivate;
  search?: SearchBackend;
  maxBytes: number;
  timeoutMs: number;
  userAgent: string;
}

/** Where web_search asks, and where in its JSON answer the results sit. */
export interface SearchBackend {
  url: string;
  resultsPath: string;
  titleField: string;
  urlField: string;
  snippetField: string;
}

/** The table with defaults applied; a bad allow_private entry is CONFIG_INVALID naming it. */
export function webSettings(table: WebTable = {}): WebSettings {
  const t = { ...DEFAULTS, ...table };
  return {
    allow: parseAllowPrivate(t.allow_private, WEB_ALLOW),
    ...(t.search_url
      ? {
          search: {
            url: t.search_url,
            resultsPath: t.search_results_path,
            titleField: t.search_title_field,
            urlField: t.search_url_field,
            snippetField: t.search_snippet_field,
          },
        }
      : {}),
    maxBytes: t.max_bytes,
    timeoutMs: t.timeout_s * 1000,
    userAgent: t.user_agent,
  };
}
