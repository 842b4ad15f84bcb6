import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/index.js";
import { pickResults, searchUrl, webSearch } from "./search.js";
import { webSettings } from "./settings.js";

/** A SearXNG stand-in on loopback: `/search?q=…&format=json` answers its JSON shape. */
describe("web_search", () => {
  let server: Server;
  let base: string;
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? "");
      const url = new URL(req.url ?? "/", "http://x");
      const q = url.searchParams.get("q") ?? "";
      if (url.pathname === "/search" && url.searchParams.get("format") === "json") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            query: q,
            results: [
              {
                title: `About ${q}`,
                url: "https://one.example/",
                content: "First   hit\nsnippet",
                engine: "x",
              },
              { title: "No URL", content: "dropped" },
              { title: "Bad scheme", url: "javascript:alert(1)", content: "dropped" },
              { title: "Two", url: "https://two.example/page", content: "Second" },
              { title: "Three", url: "https://three.example/", content: "Third" },
            ],
          }),
        );
      } else if (url.pathname === "/search") {
        res.writeHead(403);
        res.end("Forbidden");
      } else if (url.pathname === "/brave") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            web: { results: [{ name: "B", link: "https://b.example/", description: "bee" }] },
          }),
        );
      } else if (url.pathname === "/moved") {
        res.writeHead(302, { location: "http://127.0.0.1:1/elsewhere" });
        res.end();
      } else {
        res.writeHead(200, { "content-type": "text/html" });
        res.end("<p>not json</p>");
      }
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  const search = (table: object, query: string, limit?: number) =>
    webSearch(
      { query, ...(limit ? { limit } : {}) },
      { settings: webSettings(table), signal: new AbortController().signal },
    );

  const failure = async (work: Promise<unknown>) => {
    try {
      await work;
    } catch (err) {
      if (isSparError(err)) return { code: err.code, message: err.message };
      throw err;
    }
    throw new Error("expected the search to fail");
  };

  it("asks a SearXNG backend on a loopback address (the operator's choice) and maps its results", async () => {
    const answer = await search(
      { search_url: `${base}/search?q={query}&format=json&n={limit}` },
      "rust & go?",
      2,
    );
    expect(answer).toEqual({
      query: "rust & go?",
      results: [
        { title: "About rust & go?", url: "https://one.example/", snippet: "First hit snippet" },
        { title: "Two", url: "https://two.example/page", snippet: "Second" },
      ],
    });
    expect(seen.at(-1)).toBe("/search?q=rust%20%26%20go%3F&format=json&n=2");
  });

  it("maps another JSON shape through search_results_path and the field names", async () => {
    const answer = await search(
      {
        search_url: `${base}/brave?q={query}`,
        search_results_path: "web.results",
        search_title_field: "name",
        search_url_field: "link",
        search_snippet_field: "description",
      },
      "bees",
    );
    expect(answer.results).toEqual([{ title: "B", url: "https://b.example/", snippet: "bee" }]);
  });

  it("names the config key when no backend is configured", async () => {
    const error = await failure(search({}, "anything"));
    expect(error).toMatchObject({ code: "CONFIG_INVALID" });
    expect(error.message).toMatch(/\[moves\.web\] search_url/);
  });

  it("explains a backend's refusal, a non-JSON answer, a wrong path and a redirect, without the full URL", async () => {
    const refused = await failure(search({ search_url: `${base}/search?q={query}&key=SECRET` }, "x"));
    expect(refused).toMatchObject({ code: "PROVIDER_ERROR" });
    expect(refused.message).toMatch(/HTTP 403.*search\.formats/);
    const html = await failure(search({ search_url: `${base}/other?q={query}` }, "x"));
    expect(html.message).toMatch(/did not answer JSON/);
    const path = await failure(search({ search_url: `${base}/brave?q={query}` }, "x"));
    expect(path.message).toMatch(/no list of results at "results"/);
    const moved = await failure(search({ search_url: `${base}/moved?q={query}&key=SECRET` }, "x"));
    expect(moved.message).toMatch(/answered 302 \(a redirect\), which is not followed/);
    const down = await failure(search({ search_url: "http://127.0.0.1:1/s?q={query}&key=SECRET" }, "x"));
    expect(down.code).toBe("PROVIDER_ERROR");
    for (const e of [refused, html, path, moved, down]) expect(e.message).not.toContain("SECRET");
  });

  it("fills the template and picks results defensively", () => {
    expect(searchUrl("http://s/?q={query}&q2={query}&n={limit}", "a/b c", 3)).toBe(
      "http://s/?q=a%2Fb%20c&q2=a%2Fb%20c&n=3",
    );
    const backend = {
      url: "",
      resultsPath: "results",
      titleField: "title",
      urlField: "url",
      snippetField: "content",
    };
    expect(pickResults({ results: [null, 3, { url: "http://a.example/", title: 7 }] }, backend, 5)).toEqual([
      { title: "", url: "http://a.example/", snippet: "" },
    ]);
    // Inherited keys are not fields: "__proto__" or "constructor" paths find nothing.
    expect(() => pickResults({}, { ...backend, resultsPath: "constructor" }, 5)).toThrow(
      /no list of results/,
    );
  });
});
