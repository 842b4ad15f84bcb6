import { describe, expect, it } from "vitest";
import { rankIndex, stem, terms } from "./rank.js";

const catalog = [
  {
    name: "review-pull-request",
    description: "Review a pull request or diff for correctness. Use when asked to review code.",
    tags: ["code-review", "git"],
  },
  {
    name: "write-commit-message",
    description: "Write a commit message for staged changes. Use when committing.",
    tags: ["git", "commit"],
  },
  {
    name: "proofread-document",
    description: "Proofread a document for typos. Use when asked to review writing.",
    tags: ["writing"],
  },
  { name: "web_fetch", description: "Fetch a web page and read it as text." },
];

describe("ranking", () => {
  it("stems words so their forms meet, and drops stopwords", () => {
    expect(stem("reviewing")).toBe("review");
    expect(stem("reviews")).toBe("review");
    expect(stem("queries")).toBe("query");
    expect(terms("Please review the pull-request for me")).toEqual(["review", "pull", "request"]);
  });

  it("puts the entry named after the query first, and is the same every time", () => {
    const index = rankIndex(catalog);
    const first = index.search("review a pull request");
    expect(first.map((r) => r.item.name)).toEqual(["review-pull-request", "proofread-document"]);
    expect(index.search("review a pull request")).toEqual(first);
    expect(index.search("fetching web pages")[0]?.item.name).toBe("web_fetch");
  });

  it("finds nothing for words nothing has, and respects the limit and the least score", () => {
    const index = rankIndex(catalog);
    expect(index.search("hello")).toEqual([]);
    expect(index.search("")).toEqual([]);
    expect(index.search("git", 1)).toHaveLength(1);
    expect(index.search("review", 10, 1000)).toEqual([]);
  });
});
