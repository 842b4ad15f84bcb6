/**
 * The dashboard (plugins/dashboard-web) in Debian's chromium, driven by playwright-core, against the
 * real daemon and the scripted model: every view renders real data (fighters spawned through the
 * API, a user gorilla with a run, a troop with a finished task, the moves and skills, the channels);
 * a chat streams into the page and is cancelled; a gorilla is unleashed and caged from the page; the
 * event feed shows a fighter spawned from the CLI and resumes with `since` after a reconnect; views
 * are reached with the keyboard. Signing in and keys' scopes: dashboard-keys.test.ts. Each view's
 * screenshot goes to the test output, checked non-blank, and the fighters view's to
 * docs/dashboard.png (when missing, or with SPAR_UPDATE_DOCS=1). Any console error fails the test.
 */

import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Browser, WebSocketRoute } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TroopTaskRecord } from "../../lib/troops/records.js";
import type { FighterRecord } from "../../sdk/index.js";
import type { TurnRecord } from "../../sdk/store-types.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { openPage, type WatchedPage } from "../helpers/browser.js";
import {
  allowUnasked,
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import {
  accessibilityProblems,
  launch,
  QUIET,
  RUN,
  screenshot,
  until,
  writeDigestGorilla,
} from "../helpers/dashboard.js";

const DOCS_SCREENSHOT = resolve(import.meta.dirname, "..", "..", "docs", "dashboard.png");

describe.runIf(RUN)("the dashboard in chromium", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let browser: Browser;
  let watched: WatchedPage | undefined;
  const ids: Record<string, string> = {};

  const spawn = async (name: string, description: string) => {
    const res = await daemon.request<FighterRecord>("POST", "/api/v1/fighters", {
      manifest: { name, description, system_prompt: `You are ${name}.` },
    });
    expect(res.status).toBe(201);
    ids[name] = res.body.id;
  };
  const open = async (hash: string) => {
    watched = await openPage(browser);
    await watched.page.goto(`${daemon.url}/${hash}`);
    return watched.page;
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // The Schedules view shows what schedule_add made: it runs unasked, as a rule in config.toml lets it.
    writeConfig(
      home,
      port,
      fake.url,
      `${QUIET}\n[gorillas]\ntimezone = "UTC"\n${allowUnasked(["schedule_add"])}`,
    );
    writeDigestGorilla(home);
    daemon = await startDaemon(home, port);
    browser = await launch();

    await spawn("alice", "Remembers what she is told.");
    await spawn("bob", "Drafts plans.");
    await spawn("carol", "Edits drafts.");
    await spawn("dana", "Talks at length.");
    // alice stores a memory: a tool call and its result in her bout.
    fake.enqueue({ tool_calls: [{ name: "memory_store", arguments: { key: "colour", value: "blue" } }] });
    const told = await daemon.request("POST", "/api/v1/fighters/alice/message", {
      message: "Remember that my colour is blue.",
    });
    expect(told.status).toBe(200);

    const troop = await daemon.request("POST", "/api/v1/troops", {
      name: "panel",
      leader: "alice",
      members: ["bob", "carol"],
      strategy: "pipeline",
    });
    expect(troop.status).toBe(201);
    const task = await daemon.request<TroopTaskRecord>("POST", "/api/v1/troops/panel/tasks", {
      task: "Plan the launch",
    });
    expect(task.body.status).toBe("completed");

    const run = await daemon.request<{ id: string }>("POST", "/api/v1/gorillas/digest/run");
    expect(run.status).toBe(201);
    await until("the digest's run to end", async () => {
      const got = await daemon.request<{ outcome: string }>(
        "GET",
        `/api/v1/gorillas/digest/runs/${run.body.id}`,
      );
      return got.body.outcome === "ok";
    });
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
    if (home) removeHome(home);
  });

  it("shows every fighter with its status and usage per model (and the docs' screenshot)", async () => {
    const page = await open("#/fighters");
    const alice = page.locator('tr[data-fighter="alice"]');
    await alice.waitFor();
    expect(await alice.locator(".badge").textContent()).toBe("idle");
    const usage = (
      await daemon.request<{ usage: { requests: number; input_tokens: number; output_tokens: number }[] }>(
        "GET",
        "/api/v1/fighters/alice/usage",
      )
    ).body.usage;
    expect(usage).toHaveLength(1);
    const [spent] = usage as [(typeof usage)[number]];
    expect(await alice.locator("li").textContent()).toBe(
      `openai/fake-model: ${spent.requests} request${spent.requests === 1 ? "" : "s"}, ${spent.input_tokens} in / ${spent.output_tokens} out tokens`,
    );
    for (const name of ["spar", "bob", "carol", "dana", "gorilla-digest"]) {
      await page.locator(`tr[data-fighter="${name}"]`).waitFor();
    }
    expect(await page.locator("h1").textContent()).toBe("Fighters");
    const png = await screenshot(page, "fighters");
    // The README's screenshot: refreshed on request, so a test run leaves the checkout as it was.
    if (process.env.SPAR_UPDATE_DOCS === "1" || !existsSync(DOCS_SCREENSHOT)) {
      mkdirSync(resolve(DOCS_SCREENSHOT, ".."), { recursive: true });
      writeFileSync(DOCS_SCREENSHOT, png);
    }
  });

  it("shows a fighter's Creed, usage, bouts and messages with tool calls and results", async () => {
    const page = await open(`#/fighters/${ids.alice}`);
    await page.getByText("Calls memory_store").waitFor();
    const call = page.locator(".tool-call pre").first();
    expect(JSON.parse((await call.textContent()) ?? "")).toEqual({ key: "colour", value: "blue" });
    await page.getByText("Result of memory_store").waitFor();
    expect(await page.locator(".message.user .text").first().textContent()).toBe(
      "Remember that my colour is blue.",
    );
    expect(await page.locator(".turn .badge").first().textContent()).toBe("completed");
    const creed = page.locator('section[aria-labelledby="creed-title"]');
    expect(await creed.textContent()).toContain("Remembers what she is told.");
    expect(await page.locator("table.usage").textContent()).toContain("openai/fake-model");
    await screenshot(page, "fighter");
  });

  it("streams a reply into the chat, cancels it (recorded cancelled), then chats again", async () => {
    const words = Array.from({ length: 4000 }, (_, i) => `word${i}`);
    fake.enqueue({ text: words.join(" ") });
    const page = await open(`#/chat/${ids.dana}`);
    // Subscribed, so the fighter's status changes reach the page.
    await page.getByText("● Live").waitFor();
    await page.getByLabel("Message to dana").fill("Tell me everything.");
    await page.getByRole("button", { name: "Send" }).click();
    const reply = page.locator(".reply").last();
    // Tokens arrive in the page while the model is still writing.
    await reply.filter({ hasText: "word0 word1 word2" }).waitFor();
    await page.locator("h1 .badge", { hasText: "fighting" }).waitFor();
    expect(await reply.getAttribute("aria-live")).toBe("polite");
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.getByText("Cancelled: the turn was stopped and recorded cancelled.").waitFor();
    const shown = (await reply.textContent()) ?? "";
    expect(shown.startsWith("word0 word1 word2")).toBe(true);
    expect(shown.length).toBeLessThan(words.join(" ").length);
    await page.locator("h1 .badge", { hasText: "idle" }).waitFor();

    const { bouts } = (
      await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/dana/bouts")
    ).body;
    const turns = (
      await daemon.request<{ turns: TurnRecord[] }>("GET", `/api/v1/bouts/${bouts[0]?.id}/turns`)
    ).body.turns;
    expect(turns.at(-1)).toMatchObject({ status: "cancelled", error: { code: "CANCELLED" } });

    await page.getByLabel("Message to dana").fill("hello again");
    await page.getByLabel("Message to dana").press("Enter");
    await page.locator(".reply", { hasText: "echo: hello again" }).waitFor();
    await screenshot(page, "chat");
  });

  it("unleashes and cages a gorilla from the page, and shows its runs", async () => {
    const state = async () =>
      (await daemon.request<{ state: string; next_run_at: string | null }>("GET", "/api/v1/gorillas/digest"))
        .body;
    const page = await open("#/gorillas/digest");
    const row = page.locator('tr[data-gorilla="digest"]');
    await row.locator(".badge", { hasText: "CAGED" }).waitFor();
    await page.locator("table.runs").getByRole("cell", { name: "manual", exact: true }).waitFor();
    expect(await page.locator("table.runs .badge").first().textContent()).toBe("ok");

    await page.getByRole("button", { name: "Unleash digest" }).click();
    await until("the API to say UNLEASHED", async () => (await state()).state === "UNLEASHED");
    expect((await state()).next_run_at).not.toBeNull();
    await row.locator(".badge", { hasText: "UNLEASHED" }).waitFor();
    await screenshot(page, "gorillas");

    await page.getByRole("button", { name: "Cage digest" }).click();
    await until("the API to say CAGED", async () => (await state()).state === "CAGED");
    await row.locator(".badge", { hasText: "CAGED" }).waitFor();
    await page.getByRole("button", { name: "Unleash digest" }).waitFor();
  });

  it("shows every fighter's scheduled messages and removes one from the page", async () => {
    const spawned = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "erin",
        description: "Keeps reminders.",
        system_prompt: "You are erin.",
        capabilities: [{ type: "schedule" }],
      },
    });
    expect(spawned.status).toBe(201);
    fake.enqueue({
      tool_calls: [
        {
          name: "schedule_add",
          arguments: { message: "water the plants", cron: "0 8 * * *", timezone: "UTC" },
        },
      ],
    });
    expect(
      (await daemon.request("POST", "/api/v1/fighters/erin/message", { message: "every morning" })).status,
    ).toBe(200);
    const listed = async () =>
      (await daemon.request<{ schedules: { id: string; fighter: string }[] }>("GET", "/api/v1/schedules"))
        .body.schedules;
    const [job] = (await listed()).filter((s) => s.fighter === "erin");
    expect(job).toBeDefined();
    const id = (job as { id: string }).id;

    const page = await open("#/schedules");
    const row = page.locator(`tr[data-schedule="${id}"]`);
    await row.waitFor();
    expect(await row.locator("th").textContent()).toBe("erin");
    expect(await row.textContent()).toContain("water the plants");
    expect(await row.locator("code").last().textContent()).toBe("0 8 * * *");
    await screenshot(page, "schedules");

    await page.getByRole("button", { name: `Remove schedule ${id} of erin` }).click();
    await until("the API to drop the schedule", async () => !(await listed()).some((s) => s.id === id));
    await row.waitFor({ state: "detached" });
    await page.getByText("No scheduled messages.").waitFor();
  });

  it("shows the troops and a finished task with its steps", async () => {
    const page = await open("#/troops");
    await page.getByRole("link", { name: "panel: tasks" }).click();
    const task = page.locator("article.task").first();
    await task.waitFor();
    expect(await task.locator("header .badge").first().textContent()).toBe("completed");
    expect(await task.locator("header").textContent()).toContain("Plan the launch");
    const steps = task.locator("table.steps tbody tr");
    expect(await steps.count()).toBe(2);
    expect(await steps.nth(0).locator("td").first().textContent()).toBe("bob");
    expect(await steps.nth(1).locator("td").first().textContent()).toBe("carol");
    await screenshot(page, "troops");
  });

  it("lists the moves and skills and searches them", async () => {
    const page = await open("#/moves");
    await page.locator("table.moves").getByText("memory_store", { exact: true }).waitFor();
    expect(await page.locator("table.skills tbody tr").count()).toBeGreaterThan(10);
    await page.getByLabel("Search moves and skills").fill("memory");
    await page.getByLabel("Search moves and skills").press("Enter");
    const results = page.locator("ol.search-results li");
    await results.first().waitFor();
    expect(await page.locator("ol.search-results").textContent()).toContain("memory_store");
    await screenshot(page, "moves");
  });

  it("feeds live events, a fighter spawned from the CLI among them, and resumes with since after a reconnect", async () => {
    watched = await openPage(browser);
    const { page } = watched;
    interface Connection {
      route: WebSocketRoute;
      server?: WebSocketRoute;
      subscribes: { since?: number }[];
      /** What the daemon sent, in order: frame types, and the seq of each event. */
      received: { type: string; seq?: number; kind?: string; name?: string }[];
    }
    const connections: Connection[] = [];
    let gate: Promise<unknown> = Promise.resolve();
    // A relay that sees every frame: what the page subscribes with, and what it was sent.
    await page.routeWebSocket(/\/api\/v1\/ws$/, async (route) => {
      const connection: Connection = { route, subscribes: [], received: [] };
      connections.push(connection);
      await gate;
      const server = route.connectToServer();
      connection.server = server;
      route.onMessage((message) => {
        const frame = JSON.parse(String(message));
        if (frame.type === "subscribe") connection.subscribes.push(frame);
        server.send(message);
      });
      server.onMessage((message) => {
        connection.received.push(JSON.parse(String(message)));
        route.send(message);
      });
    });
    await page.goto(`${daemon.url}/#/events`);
    await page.getByText("Live.", { exact: true }).waitFor();
    // The first connection asks for the recent events the daemon keeps (issue 28 item 25).
    expect(connections[0]?.subscribes).toEqual([{ type: "subscribe", kinds: ["*"], since: 0 }]);

    const spawned = await daemon.cli(["fighter", "spawn", "scout", "--name", "feed-scout"]);
    expect(spawned.code, spawned.stderr).toBe(0);
    const feed = page.locator("ol.feed");
    expect(await feed.getAttribute("aria-live")).toBe("polite");
    await feed.locator('li[data-kind="fighter.spawned"]', { hasText: "feed-scout" }).waitFor();

    // Drop the connection; the fighter spawned while it is down must come back through `since`.
    let release = () => {};
    gate = new Promise<void>((done) => {
      release = done;
    });
    const first = connections[0] as Connection;
    const lastSeen = first.received.filter((f) => f.type === "event").at(-1)?.seq;
    expect(lastSeen).toBeGreaterThan(0);
    await first.server?.close();
    await first.route.close({ code: 4000, reason: "test reconnect" });
    await page.getByText("The connection dropped; reconnecting…").waitFor();
    const late = await daemon.cli(["fighter", "spawn", "scout", "--name", "late-scout"]);
    expect(late.code, late.stderr).toBe(0);
    release();

    await feed.locator('li[data-kind="fighter.spawned"]', { hasText: "late-scout" }).waitFor();
    const second = connections[1] as Connection;
    expect(second.subscribes).toEqual([{ type: "subscribe", kinds: ["*"], since: lastSeen }]);
    // Replayed: it came before the `subscribed` frame, which ends the backlog.
    const replayed = second.received.findIndex(
      (f) => f.kind === "fighter.spawned" && f.name === "late-scout",
    );
    const subscribed = second.received.findIndex((f) => f.type === "subscribed");
    expect(replayed).toBeGreaterThanOrEqual(0);
    expect(replayed).toBeLessThan(subscribed);
    await page
      .getByText(`Live again: resumed after event #${lastSeen}, with what happened in between.`)
      .waitFor();
    await screenshot(page, "events");
  });

  it("opens the event view with the recent events the daemon keeps, not empty", async () => {
    const spawned = await daemon.cli(["fighter", "spawn", "scout", "--name", "early-scout"]);
    expect(spawned.code, spawned.stderr).toBe(0);
    const page = await open("#/events");
    await page.locator('ol.feed li[data-kind="fighter.spawned"]', { hasText: "early-scout" }).waitFor();
    await page.getByText("Live.", { exact: true }).waitFor();
  });

  it("opens a chat on the latest bout's messages and goes on in that bout", async () => {
    await spawn("gwen", "Keeps notes.");
    const sent = await daemon.request<{ bout_id: string }>("POST", "/api/v1/fighters/gwen/message", {
      message: "remember the lighthouse",
    });
    expect(sent.status).toBe(200);
    const page = await open(`#/chat/${ids.gwen}`);
    await page.locator(".message.user", { hasText: "remember the lighthouse" }).waitFor();
    await page.locator(".reply", { hasText: "echo: remember the lighthouse" }).waitFor();
    await page.getByLabel("Message to gwen").fill("and the harbour");
    await page.getByLabel("Message to gwen").press("Enter");
    await page.locator(".reply", { hasText: "echo: and the harbour" }).waitFor();
    const { bouts } = (
      await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/gwen/bouts")
    ).body;
    expect(bouts.map((b) => b.id)).toEqual([sent.body.bout_id]);
  });

  it("opens a chat on the user's latest bout, asked of the daemon, not a newer one another fighter started", async () => {
    await spawn("finn", "Keeps secrets.");
    const mine = await daemon.request<{ bout_id: string }>("POST", "/api/v1/fighters/finn/message", {
      message: "the key is under the mat",
    });
    expect(mine.status).toBe(200);
    // alice's message to finn runs in a bout of alice's (origin fighter:<alice>), now finn's newest.
    const whispered = await daemon.request<{ bout_id: string }>(
      "POST",
      "/api/v1/fighters/alice/message-to/finn",
      { content: "a whisper from alice" },
    );
    expect(whispered.status).toBe(200);
    const all = (await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/finn/bouts")).body
      .bouts;
    expect(all.map((b) => b.id)).toEqual([whispered.body.bout_id, mine.body.bout_id]);

    watched = await openPage(browser);
    const { page } = watched;
    const asked: string[] = [];
    page.on("request", (request) =>
      asked.push(new URL(request.url()).pathname + new URL(request.url()).search),
    );
    await page.goto(`${daemon.url}/#/chat/${ids.finn}`);
    await page.locator(".message.user", { hasText: "the key is under the mat" }).waitFor();
    expect(await page.locator(".transcript").textContent()).not.toContain("a whisper from alice");
    // The daemon decides which bouts are the user's: the page asks for them, it does not filter.
    expect(asked).toContain(`/api/v1/fighters/${ids.finn}/bouts?origin=user`);
    await page.getByLabel("Message to finn").fill("and the spare is in the shed");
    await page.getByLabel("Message to finn").press("Enter");
    await page.locator(".reply", { hasText: "echo: and the spare is in the shed" }).waitFor();
    const messages = async (bout: string) =>
      JSON.stringify((await daemon.request("GET", `/api/v1/bouts/${bout}/messages`)).body);
    expect(await messages(mine.body.bout_id)).toContain("and the spare is in the shed");
    expect(await messages(whispered.body.bout_id)).not.toContain("and the spare is in the shed");
  });

  it("shows the channels as the API reports them: none configured here", async () => {
    const page = await open("#/channels");
    await page.getByText("No channel is configured.", { exact: false }).waitFor();
    const channels = await daemon.request<{ channels: unknown[] }>("GET", "/api/v1/channels");
    expect(channels.body.channels).toEqual([]);
    await screenshot(page, "channels");
  });

  it("moves between views with the keyboard, the focus drawn and taken to each view's heading", async () => {
    const page = await open("#/fighters");
    await page.locator('tr[data-fighter="alice"]').waitFor();
    // Evaluated in the page, where `document` is; this file is compiled without the DOM's types.
    const focused = () =>
      page.evaluate("document.activeElement.tagName + ' ' + document.activeElement.textContent");
    await page.keyboard.press("Tab");
    expect(await focused()).toBe("A Skip to content");
    for (let i = 0; i < 10 && (await focused()) !== "A Gorillas"; i++) await page.keyboard.press("Tab");
    expect(await focused()).toBe("A Gorillas");
    const outline = await page.evaluate(
      "(() => { const s = getComputedStyle(document.activeElement); return s.outlineStyle + ' ' + s.outlineWidth })()",
    );
    expect(outline).toBe("solid 3px");
    await page.keyboard.press("Enter");
    await page.locator('tr[data-gorilla="digest"]').waitFor();
    expect(new URL(page.url()).hash).toBe("#/gorillas");
    expect(await focused()).toBe("H1 Gorillas");
    expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe("Gorillas");
  });

  it("passes the accessibility checks on every view, with data in it", async () => {
    const views: [string, string][] = [
      ["#/fighters", 'tr[data-fighter="alice"]'],
      [`#/fighters/${ids.alice}`, ".tool-call"],
      [`#/chat/${ids.alice}`, ".message.user"],
      ["#/approvals", "table.approval-rules"],
      ["#/gorillas/digest", "table.runs"],
      ["#/schedules", "h1"],
      ["#/troops/panel", "article.task"],
      ["#/moves", "table.skills"],
      ["#/events", "ol.feed li"],
      ["#/channels", "h1"],
    ];
    const page = await open("#/fighters");
    for (const [hash, shown] of views) {
      await page.goto(`${daemon.url}/${hash}`);
      await page.locator(shown).first().waitFor();
      expect(await accessibilityProblems(page), hash).toEqual([]);
    }
  });
});
