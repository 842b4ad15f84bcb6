import { definePlugin, type MoveHandler, type TaintSource } from "../../sdk/index.js";
import { webSearch } from "./search.js";
import { type WebTable, webSettings } from "./settings.js";
import { webFetch } from "./web-fetch.js";

/**
 * The web moves, behind the `network` capability (the kernel refuses a fighter without it before a
 * handler runs). `web_fetch` reads a page the model names, under the address rules of lib/web/ on
 * every hop; `web_search` asks the operator's search backend. Input arrives validated against
 * plugin.json's schemas, so the handlers only narrow types. What either brings back is untrusted:
 * the turn is tainted by the page's URL (once its server answered) or by the search.
 */
export default definePlugin<{ "moves.web"?: WebTable }>({
  id: "moves-web",
  apply({ hooks }, tables) {
    const settings = webSettings(tables["moves.web"]);
    const handlers: Record<string, MoveHandler> = {
      web_fetch: {
        name: "web_fetch",
        run: (input, { grants, callers, signal, untrusted }) =>
          webFetch(
            {
              url: String(input.url),
              ...(typeof input.max_bytes === "number" ? { max_bytes: input.max_bytes } : {}),
            },
            {
              settings,
              grants,
              callers,
              signal,
              answered: (url) => untrusted({ kind: "web", detail: url, move: "web_fetch" }),
            },
          ),
      },
      web_search: {
        name: "web_search",
        run: async (input, { signal, untrusted }) => {
          const found = await webSearch(
            {
              query: String(input.query),
              ...(typeof input.limit === "number" ? { limit: input.limit } : {}),
            },
            { settings, signal },
          );
          untrusted(searchTaint(found.query, settings.search?.url ?? ""));
          return found;
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));
  },
});

/**
 * What a search's results taint the turn with: the results are other sites' titles and snippets,
 * found through the operator's backend, named by its origin only (its URL may carry a key).
 */
export function searchTaint(query: string, backendUrl: string): TaintSource {
  const origin = URL.parse(backendUrl.replaceAll(/\{(query|limit)\}/g, "x"))?.origin ?? "the search backend";
  return { kind: "web", detail: `search ${JSON.stringify(query)} at ${origin}`, move: "web_search" };
}
