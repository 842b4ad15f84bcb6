/**
 * What the dashboard's browser suites share (test/browser/dashboard*.test.ts): whether they run,
 * launching Debian's chromium, screenshots checked to show something, polling, the quiet config and
 * the user gorilla the views show.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
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
 * The page's accessibility problems found by axe-core (WCAG 2.0, 2.1 and 2.2 A and AA, and axe's
 * best practices: one main landmark, one h1, no skipped heading level), each as
 * `<rule>: <target> (<summary>)`; none: `[]`.
 */
let axeCode: string | undefined;
const axeSource = () => {
  axeCode ??= readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  return axeCode;
};

export async function accessibilityProblems(page: Page): Promise<string[]> {
  // Evaluated, not added as a script tag: the dashboard's CSP allows no inline script.
  if (!(await page.evaluate("typeof axe !== 'undefined'"))) await page.evaluate(axeSource());
  // A string, evaluated in the page: this file is compiled without the DOM's types.
  return page.evaluate(`(async () => {
    const tags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"];
    const { violations } = await axe.run(document, { runOnly: { type: "tag", values: tags } });
    return violations.flatMap((v) =>
      v.nodes.map((n) => v.id + ": " + n.target.join(" ") + " (" + (n.failureSummary || v.help).replace(/\\s+/g, " ").trim() + ")"),
    );
  })()`);
}
