/** How `rank` splits text into terms: the same on every store, whatever the text. */
import { describe, expect, it } from "vitest";
import { MAX_RANK_TERMS, MAX_TERM_CHARS, queryTerms, wordsOf } from "./collection-terms.js";

describe("rank terms", () => {
  it("are letter and digit runs, NFKC and lower-cased, marks kept with their letters", () => {
    expect(wordsOf("Ada moved to LISBON in 2024!")).toEqual(["ada", "moved", "to", "lisbon", "in", "2024"]);
    expect(wordsOf("ﬁne Ｆｕｌｌ")).toEqual(["fine", "full"]);
    expect(wordsOf("नमस्ते दुनिया")).toEqual(["नमस्ते", "दुनिया"]);
    expect(wordsOf("東京に住む 😀 café")).toEqual(["東京に住む", "café"]);
  });

  it("never carry an operator: quotes, stars, colons, parentheses and minus signs are not words", () => {
    expect(queryTerms('"NEAR(a b)" OR x* -y ^z : {col}')).toEqual([
      "near",
      "a",
      "b",
      "or",
      "x",
      "y",
      "z",
      "col",
    ]);
    expect(queryTerms('"" * : - ( ) ^ 🙂')).toEqual([]);
  });

  it("are distinct, at most 32, each at most 64 characters, however long the text", () => {
    expect(queryTerms("tea Tea TEA")).toEqual(["tea"]);
    const many = Array.from({ length: 100 }, (_, i) => `w${i}`).join(" ");
    expect(queryTerms(many)).toHaveLength(MAX_RANK_TERMS);
    expect(queryTerms(many)[0]).toBe("w0");
    expect(queryTerms("ж".repeat(500))).toEqual(["ж".repeat(MAX_TERM_CHARS)]);
    const huge = `${"雨 ".repeat(50_000)}end`;
    expect(queryTerms(huge)).toEqual(["雨", "end"]);
  });
});
