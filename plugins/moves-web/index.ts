import { definePlugin, type MoveHandler } from "../../sdk/index.js";
import { webSearch } from "./search.js";
import { type WebTable, webSettings } from "./settings.js";
import { webFetch } from "./web-fetch.js";

/**
 * The web moves, behind the `network` capability (the kernel refuses a fighter without it before a
 * handler runs). `web_fetch` reads a page the model names, under the address rules of lib/web/ on
 * every hop; `web_search` asks the operator's search backend. Input arrives validated against
 * plugin.json's schemas, so the handlers only narrow types.
 */
export default definePlugin<{ "moves.web"?: WebTable }>({
  id: "moves-web",
  apply({ hooks }, tables) {
    const settings = webSettings(tables["moves.web"]);
    const handlers: Record<string, MoveHandler> = {
      web_fetch: {
        name: "web_fetch",
        run: (input, { grants, callers, signal }) =>
          webFetch(
            {
              url: String(input.url),
              ...(typeof input.max_bytes === "number" ? { max_bytes: input.max_bytes } : {}),
            },
            { settings, grants, callers, signal },
          ),
      },
      web_search: {
        name: "web_search",
        run: (input, { signal }) =>
          webSearch(
            {
              query: String(input.query),
              ...(typeof input.limit === "number" ? { limit: input.limit } : {}),
            },
            { settings, signal },
          ),
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));
  },
});
