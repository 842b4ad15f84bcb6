/**
 * What the dashboard's browser suites share (test/browser/dashboard*.test.ts): whether they run,
 * launching Debian's chromium, screenshots checked to show something, polling, the quiet config and
 * the user gorilla the views show.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { expect } from "vitest";
import { CHROMIUM_PATH, chromiumInstalled, outputDir, summarizePng, underCi } from "./browser.js";

/** Whether the browser suites run: with a chromium, or under CI (where a missing one fails). */
export const RUN = chromiumInstalled() || underCi();
if (!RUN) {
  console.warn(
    `Skipping the dashboard's browser tests: no chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set SPAR_CHROMIUM). Under CI=true they fail instead.`,
  );
}

/** The docs name a host the browser maps to 127.0.0.1: an http origin that is not a secure context. */
export const PLAIN_HOST = "spar-dashboard.test";
/** Config for a daemon the tests drive hard: no reflection turns, no quota in the way. */
export const QUIET =
  "\n[creed]\nreflect = false\n\n[quotas]\nrequests_per_minute = 100000\ntokens_per_minute = 100000000\n";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A user gorilla, caged, for the views that show one. */
export function writeDigestGorilla(home: string): void {
  mkdirSync(join(home, "gorillas", "digest"), { recursive: true });
  writeFileSync(
    join(home, "gorillas", "digest", "GORILLA.toml"),
    [
      'name = "digest"',
      'display_name = "Digest"',
      'description = "A morning digest of the topics I follow."',
      'schedule = "0 7 1 1 *"',
      'moves = ["memory_store"]',
      'system_prompt = "You are Digest."',
      'task = "Write the digest."',
      "",
    ].join("\n"),
  );
}

/** Polls `probe` until it answers something truthy; fails naming `what` after 20 s. */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value) return value;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Debian's chromium, with PLAIN_HOST mapped to 127.0.0.1; fails naming what to install when missing. */
export async function launch(): Promise<Browser> {
  if (!chromiumInstalled()) {
    throw new Error(
      `no chromium at ${CHROMIUM_PATH}: .ci/run installs Debian's (apt-get install chromium), or set SPAR_CHROMIUM`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ["--no-sandbox", `--host-resolver-rules=MAP ${PLAIN_HOST} 127.0.0.1`],
  });
}

/** A screenshot of the page as it is, kept in the test output, checked to show something. */
export async function screenshot(page: Page, view: string): Promise<Buffer> {
  const png = await page.screenshot();
  writeFileSync(join(outputDir("dashboard"), `${view}.png`), png);
  const summary = summarizePng(png);
  expect(summary, `${view}.png`).toMatchObject({ width: 1280, height: 800 });
  expect(summary.colours, `${view}.png has ${summary.colours} colours`).toBeGreaterThan(50);
  return png;
}

/**
 * The page's accessibility problems, each in a sentence (none: `[]`): a field without a label, a
 * button or link without a name, a reference (`aria-labelledby`, `aria-describedby`, `for`) to no
 * element, a repeated id, not exactly one h1 or a skipped heading level, an image without alt, a
 * table header without a scope, and text under 4.5:1 contrast (3:1 when large) against the
 * background it is drawn on. A subset of axe-core's rules, checked in the page: axe-core itself is
 * not among the project's dependencies.
 */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  // A string, evaluated in the page: this file is compiled without the DOM's types.
  return page.evaluate(`(() => {
    const problems = [];
    const visible = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
    const describe = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + " " + JSON.stringify((el.textContent || "").trim().slice(0, 40));
    const named = (el) =>
      (el.getAttribute("aria-label") || "").trim() !== "" ||
      (el.getAttribute("aria-labelledby") || "").split(/\\s+/).some((id) => document.getElementById(id)?.textContent.trim()) ||
      (el.textContent || "").trim() !== "" ||
      [...el.querySelectorAll("img[alt]")].some((img) => img.alt.trim() !== "");
    if (!document.documentElement.lang) problems.push("html has no lang");
    for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
      const labelled = [...(el.labels || [])].some((l) => l.textContent.trim()) || named(el);
      if (!labelled) problems.push("field without a label: " + describe(el));
    }
    for (const el of document.querySelectorAll("button, a[href], [role=button], [role=link]")) {
      if (visible(el) && !named(el)) problems.push("control without a name: " + el.outerHTML.slice(0, 80));
    }
    for (const attr of ["aria-labelledby", "aria-describedby", "aria-controls"]) {
      for (const el of document.querySelectorAll("[" + attr + "]")) {
        for (const id of el.getAttribute(attr).split(/\\s+/).filter(Boolean)) {
          if (!document.getElementById(id)) problems.push(attr + " names no element: " + id);
        }
      }
    }
    for (const label of document.querySelectorAll("label[for]")) {
      if (!document.getElementById(label.htmlFor)) problems.push("label for no element: " + label.htmlFor);
    }
    const ids = new Map();
    for (const el of document.querySelectorAll("[id]")) ids.set(el.id, (ids.get(el.id) || 0) + 1);
    for (const [id, n] of ids) if (n > 1) problems.push("id used " + n + " times: " + id);
    const headings = [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].filter(visible);
    const h1s = headings.filter((h) => h.tagName === "H1").length;
    if (h1s !== 1) problems.push(h1s + " h1 headings");
    let level = 0;
    for (const h of headings) {
      const next = Number(h.tagName[1]);
      if (next > level + 1) problems.push("heading level skipped: " + describe(h) + " after h" + level);
      level = next;
    }
    for (const img of document.querySelectorAll("img:not([alt])")) problems.push("image without alt: " + img.src);
    for (const th of document.querySelectorAll("th:not([scope])")) problems.push("table header without scope: " + describe(th));
    if (!document.querySelector("main")) problems.push("no main landmark");
    const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
    const luminance = ([r, g, b]) => {
      const c = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
      return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    };
    const background = (el) => {
      for (let at = el; at; at = at.parentElement) {
        const colour = rgb(getComputedStyle(at).backgroundColor);
        if (colour.length >= 3 && (colour[3] === undefined || colour[3] === 1)) return colour;
      }
      return [255, 255, 255];
    };
    for (const el of document.body.querySelectorAll("*")) {
      const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!text || !visible(el) || el.closest(".visually-hidden, .skip-link")) continue;
      const style = getComputedStyle(el);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      const [fg, bg] = [luminance(rgb(style.color)), luminance(background(el))];
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      const needed = el.closest("button:disabled") ? 0 : large ? 3 : 4.5;
      if (ratio < needed) problems.push("contrast " + ratio.toFixed(2) + ":1 under " + needed + ":1: " + describe(el));
    }
    return problems;
  })()`);
}
