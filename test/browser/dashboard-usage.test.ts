/**
 * The dashboard's usage view (`#/usage`, issue 31 item 4) in chromium against the real daemon: usage
 * seeded in the ledger on three past days (through the store, the daemon stopped) draws one bar per
 * day of the last 30, each as tall as its cost against the highest, with its figures in its title and
 * in the table beside the chart; the breakdowns by model and by fighter; the budgets panel says none
 * is configured while the daemon has no budgets route; a turn's calls appear without a reload; and
 * the view passes the accessibility checks. Any console error fails the test.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
import type { FighterRecord, UsageRecord } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { openPage, type WatchedPage } from "../helpers/browser.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { accessibilityProblems, launch, QUIET, RUN, screenshot } from "../helpers/dashboard.js";

/** A day `back` days ago, as the API keys it, and noon (UTC) of it: the same date in any zone within ±11 h. */
const dayAgo = (back: number) => new Date(Date.now() - back * 86_400_000).toISOString().slice(0, 10);
const noonOf = (back: number) => `${dayAgo(back)}T12:00:00.000Z`;

describe.runIf(RUN)("the dashboard's usage view in chromium", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  let browser: Browser;
  let watched: WatchedPage | undefined;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url, QUIET);
    daemon = await startDaemon(home, port);
    for (const name of ["ada", "ben"]) {
      const res = await daemon.request<FighterRecord>("POST", "/api/v1/fighters", {
        manifest: {
          name,
          description: name,
          system_prompt: `You are ${name}.`,
          model: { provider: "openai", model: "gpt-4o-mini", base_url: fake.url },
        },
      });
      expect(res.status).toBe(201);
      ids[name] = res.body.id;
    }
    await daemon.stop();
    // The ledger of earlier days, written as the daemon writes it, while it is stopped.
    const store = await openSqliteStore({ home, masterSecret: readFileSync(join(home, "master.key")) });
    const call = (fighter: string, back: number, entry: Partial<UsageRecord>): UsageRecord => ({
      fighter_id: ids[fighter] as string,
      origin: "user",
      provider: "openai",
      model: "gpt-4o-mini",
      at: noonOf(back),
      input_tokens: 1000,
      output_tokens: 100,
      cached_tokens: 0,
      cache_write_tokens: 0,
      cost_micros: 210,
      currency: "USD",
      ...entry,
    });
    for (const row of [
      call("ada", 1, { cost_micros: 248 }),
      call("ben", 3, { provider: "anthropic", model: "claude-sonnet-4-5", cost_micros: 9525 }),
      call("ada", 10, { cost_micros: 1_500_000 }),
      call("ada", 10, { model: "gpt-mystery", cost_micros: null, currency: null }),
    ]) {
      await store.usage.record(row);
    }
    await store.close();
    daemon = await startDaemon(home, port);
    browser = await launch();
  });

  afterEach(async () => {
    const errors = watched?.errors ?? [];
    await watched?.close();
    watched = undefined;
    expect(errors, "console errors and uncaught exceptions").toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  const open = async (): Promise<Page> => {
    watched = await openPage(browser);
    await watched.page.goto(`${daemon.url}/#/usage`);
    await watched.page.locator("svg.chart").waitFor();
    return watched.page;
  };
  const bar = (page: Page, back: number) => page.locator(`svg.chart rect[data-day="${dayAgo(back)}"]`);
  const height = async (page: Page, back: number) => Number(await bar(page, back).getAttribute("height"));

  it("draws a bar per day of the last 30, each as tall as its cost against the highest", async () => {
    const page = await open();
    expect(await page.locator("svg.chart rect").count()).toBe(30);
    expect(await page.locator("svg.chart rect.bar:not(.empty)").count()).toBe(3);
    expect(await bar(page, 10).getAttribute("data-cost")).toBe("1.5");
    expect(await bar(page, 3).getAttribute("data-cost")).toBe("0.009525");
    expect(await bar(page, 1).getAttribute("data-cost")).toBe("0.000248");
    expect(await bar(page, 10).locator("title").textContent()).toBe(`${dayAgo(10)}: $1.50, 2 calls`);
    expect(await bar(page, 3).locator("title").textContent()).toBe(`${dayAgo(3)}: $0.009525, 1 call`);
    const tallest = await height(page, 10);
    expect(tallest).toBeGreaterThan(100);
    expect((await height(page, 3)) / tallest).toBeCloseTo(9525 / 1_500_000, 3);
    expect((await height(page, 1)) / tallest).toBeCloseTo(248 / 1_500_000, 3);
    expect(await height(page, 2)).toBe(0);
    // The text alternative: the summary the chart is labelled with, and the table of days.
    expect(await page.locator("#cost-summary").textContent()).toBe(
      `$1.509773 over the last 30 days, 4 calls; the most on ${dayAgo(10)}: $1.50; 1 call unpriced.`,
    );
    await page.getByText("The chart as a table").click();
    expect(await page.locator(`table.usage-days tr[data-day="${dayAgo(10)}"] td`).allTextContents()).toEqual([
      "2",
      "2,000 / 200",
      "$1.50 (+1 unpriced)",
    ]);
    await screenshot(page, "usage");
  });

  it("breaks the days down by model and by fighter, and says no budget is configured", async () => {
    const page = await open();
    const row = (table: string, key: string) =>
      page.locator(`table.usage-${table} tr[data-key="${key}"] td`).allTextContents();
    expect(await row("by-model", "anthropic/claude-sonnet-4-5")).toEqual([
      "1",
      "1,000",
      "0",
      "100",
      "$0.009525",
    ]);
    expect(await row("by-model", "openai/gpt-mystery")).toEqual(["1", "1,000", "0", "100", "unpriced"]);
    expect(await row("by-model", "Total")).toEqual(["4", "4,000", "0", "400", "$1.509773 (+1 unpriced)"]);
    expect(await row("by-fighter", "ada")).toEqual(["3", "3,000", "0", "300", "$1.500248 (+1 unpriced)"]);
    expect(await row("by-fighter", "ben")).toEqual(["1", "1,000", "0", "100", "$0.009525"]);
    expect(await page.locator("#no-budgets").textContent()).toBe("No budgets configured.");
  });

  it("shows a turn's calls without a reload", async () => {
    const page = await open();
    expect(await page.locator(`svg.chart rect[data-day="${dayAgo(0)}"]`).getAttribute("data-cost")).toBe("");
    fake.enqueue({ text: "hello", usage: { prompt_tokens: 1000, completion_tokens: 100 } });
    const sent = await daemon.request("POST", "/api/v1/fighters/ada/message", { message: "hi" });
    expect(sent.status).toBe(200);
    // 1000 × $0.15 + 100 × $0.60 per million tokens: 210 micro-dollars. Today is the page's today.
    const today = await page.evaluate(
      "(() => { const d = new Date(); return d.getFullYear() + '-' + String(d.getMonth() + 1).padStart(2, '0') + '-' + String(d.getDate()).padStart(2, '0'); })()",
    );
    await page.locator(`svg.chart rect[data-day="${today}"][data-cost="0.00021"]`).waitFor();
  });

  it("passes the accessibility checks", async () => {
    const page = await open();
    await page.locator("table.usage-by-model").waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
  });
});
