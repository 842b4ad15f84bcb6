import { describe, expect, it } from "vitest";
import { decodeEntities, NAMED_ENTITIES } from "./entities.js";
import { htmlToText } from "./html-text.js";

describe("character references", () => {
  it("decodes named, decimal and hex references", () => {
    expect(decodeEntities("Tom &amp; Jerry &lt;3 &quot;hi&quot; &apos;x&apos;")).toBe(
      `Tom & Jerry <3 "hi" 'x'`,
    );
    expect(
      decodeEntities("caf&eacute; &mdash; na&iuml;ve &hellip; &euro;5 &copy; &alpha;&Omega;&sigmaf;"),
    ).toBe("café — naïve … €5 © αΩς");
    expect(decodeEntities("&#65;&#x42;&#X43;&#128512;")).toBe("ABC😀");
  });

  it("decodes numbers as the HTML standard does: windows-1252 for 0x80–0x9F, U+FFFD for the impossible", () => {
    expect(decodeEntities("&#150;&#x93;q&#x94;&#128;")).toBe("–“q”€");
    expect(decodeEntities("&#0;&#xD800;&#x110000;")).toBe("\ufffd\ufffd\ufffd");
  });

  it("keeps unknown names, and decodes the legacy ones without a semicolon", () => {
    expect(decodeEntities("&bogus; &amp &lt b &nbsp;")).toBe("&bogus; & < b \u00a0");
    expect(decodeEntities("R&D, AT&T, a&b=c")).toBe("R&D, AT&T, a&b=c");
  });

  it("maps the whole Latin-1 block", () => {
    expect(NAMED_ENTITIES.get("nbsp")).toBe("\u00a0");
    expect(NAMED_ENTITIES.get("yuml")).toBe("ÿ");
    expect(NAMED_ENTITIES.get("szlig")).toBe("ß");
    expect(NAMED_ENTITIES.get("times")).toBe("×");
  });
});

describe("htmlToText", () => {
  it("keeps the title, headings, paragraphs and links, and leaves out script, style and nav", () => {
    const page = htmlToText(
      `<!DOCTYPE html><html><head><title> The  Page &amp; Co </title>
       <style>body { color: red }</style><script>var secret = "<p>not text</p>";</script></head>
       <body><nav><a href="/home">Home</a> <a href="/about">About</a></nav>
       <h1>Main   heading</h1><p>First <b>bold</b> paragraph
       with a <a href="/docs/intro?x=1">relative link</a>.</p>
       <h2>Second</h2><p>Another&nbsp;one.</p></body></html>`,
      "https://example.com/start/",
    );
    expect(page.title).toBe("The Page & Co");
    expect(page.text).toBe(
      "# Main heading\n\nFirst bold paragraph with a [relative link](https://example.com/docs/intro?x=1).\n\n## Second\n\nAnother one.",
    );
  });

  it("renders lists, nested lists, tables, line breaks and preformatted text", () => {
    const { text } = htmlToText(
      `<ul><li>one</li><li>two<ol><li>a</li><li>b</li></ol></li></ul>
       <table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>31</td></tr></table>
       <p>line one<br>line two</p><pre>  keep   this
    indented &lt;x&gt;</pre><p>after</p>`,
    );
    expect(text).toBe(
      "- one\n- two\n  1. a\n  2. b\n\nName | Age\nAnn | 31\n\nline one\nline two\n\n  keep   this\n    indented <x>\n\nafter",
    );
  });

  it("leaves out hidden elements, forms' widgets, embedded documents and comments", () => {
    const { text } = htmlToText(
      `<div>shown</div><div hidden>hidden one</div><span aria-hidden="true">hidden two</span>
       <div style="color: red; display: none">hidden three</div><div role="navigation">menu</div>
       <!-- a comment <p>with a tag</p> --><svg><title>svg title</title><text>svg text</text></svg>
       <iframe src="x">frame</iframe><noscript>enable js</noscript><select><option>opt</option></select>
       <button>Click</button><textarea>typed</textarea><template><p>tpl</p></template><p>end</p>`,
    );
    expect(text).toBe("shown\n\nend");
  });

  it("counts nested skipped elements so the page after them survives", () => {
    const { text } = htmlToText(`<nav><div><nav>inner</nav>still nav</div></nav><p>after</p>`);
    expect(text).toBe("after");
  });

  it("does not skip the rest of a page after a hidden element whose end tag may be left out", () => {
    expect(htmlToText(`<p hidden>gone?<p>kept`).text).toContain("kept");
  });

  it("shows only useful links: no javascript:, data: or same-page ones, no empty brackets", () => {
    const { text } = htmlToText(
      `<a href="javascript:alert(1)">js</a> <a href="#top">top</a> <a href="data:text/html,x">data</a>
       <a href="https://x.example/"><img src="logo.png"></a> <a href="mailto:a@b.c">mail</a>
       <a href="http://y.example/a b">y</a>`,
      "https://example.com/",
    );
    expect(text).toBe("js top data mail [y](http://y.example/a%20b)");
  });

  it("honours <base href>, and keeps headings that are links", () => {
    const { text } = htmlToText(
      `<base href="https://cdn.example/root/"><h3><a href="page">Linked heading</a></h3>`,
      "https://example.com/",
    );
    expect(text).toBe("### [Linked heading](https://cdn.example/root/page)");
  });

  it("treats script content as raw text, and a stray < as text", () => {
    const { text } = htmlToText(
      `<script>if (a < b && "</div>") {}</script><p>1 < 2 and 3 > 2</p><script type="x">never</SCRIPT ><p>ok</p>`,
    );
    expect(text).toBe("1 < 2 and 3 > 2\n\nok");
  });

  it("reads attributes with quotes holding > and entities", () => {
    const { text } = htmlToText(`<a title="a > b" href='/x?a=1&amp;b=2'>link</a>`, "http://h.example/");
    expect(text).toBe("[link](http://h.example/x?a=1&b=2)");
  });

  it("survives broken markup: unclosed tags, a tag cut off at the end, no <html> at all", () => {
    expect(htmlToText("<p>one<p>two<div>three").text).toBe("one\n\ntwo\nthree");
    expect(htmlToText("text then <a href='x").text).toBe("text then");
    expect(htmlToText("plain words, no tags").text).toBe("plain words, no tags");
    expect(htmlToText("").text).toBe("");
    expect(htmlToText("<title>only a title</title>")).toEqual({ title: "only a title", text: "" });
  });

  it("takes a large hostile page in linear time", () => {
    const hostile = `${"<a ".repeat(50_000)}${"<div ".repeat(50_000)}${"&amp".repeat(50_000)}`;
    expect(htmlToText(hostile).text).toBe("");
    const many = `<ul>${"<li>item <b>x</b></li>".repeat(20_000)}</ul>`;
    expect(htmlToText(many).text.split("\n")).toHaveLength(20_000);
  });
});
