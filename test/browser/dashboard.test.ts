/**
 * The dashboard (plugins/dashboard-web) in Debian's chromium, driven by playwright-core, against the
 * real daemon and the scripted model: every view renders real data (fighters spawned through the
 * API, a user gorilla with a run, a troop with a finished task, the moves and skills, the channels);
 * a chat streams into the page and is cancelled; a gorilla is unleashed and caged from the page; the
 * event feed shows a fighter spawned from the CLI and resumes with `since` after a reconnect; views
 * are reached with the keyboard. With unsigned loopback off, the page asks once for a key and signs
 * in the browser, or says why it cannot; a `read` key and a `chat:<fighter>` key are offered only what
 * their scope allows (issue 28 item 33). Each view's screenshot goes to the test output, checked
 * non-blank, and the fighters view's to docs/dashboard.png (when missing, or with
 * SPAR_UPDATE_DOCS=1). Any console error fails the test.
 */
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Browser, chromium, type Page, type WebSocketRoute } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { FighterRecord, TroopTaskRecord } from "../../sdk/index.js";
import type { TurnRecord } from "../../sdk/store-types.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  CHROMIUM_PATH,
  chromiumInstalled,
  openPage,
  outputDir,
  summarizePng,
  underCi,
  type WatchedPage,
} from "../helpers/browser.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const RUN = chromiumInstalled() || underCi();
if (!RUN) {
  console.warn(
    `Skipping the dashboard's browser tests: no chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set SPAR_CHROMIUM). Under CI=true they fail instead.`,
  );
}

const DOCS_SCREENSHOT = resolve(import.meta.dirname, "..", "..", "docs", "dashboard.png");
/** The docs name a host the browser maps to 127.0.0.1: an http origin that is not a secure context. */
const PLAIN_HOST = "spar-dashboard.test";
const QUIET =
  "\n[creed]\nreflect = false\n\n[quotas]\nrequests_per_minute = 100000\ntokens_per_minute = 100000000\n";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A user gorilla, caged, for the views that show one. */
function writeDigestGorilla(home: string): void {
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
async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value) return value;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function launch(): Promise<Browser> {
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
async function screenshot(page: Page, view: string): Promise<Buffer> {
  const png = await page.screenshot();
  writeFileSync(join(outputDir("dashboard"), `${view}.png`), png);
  const summary = summarizePng(png);
  expect(summary, `${view}.png`).toMatchObject({ width: 1280, height: 800 });
  expect(summary.colours, `${view}.png has ${summary.colours} colours`).toBeGreaterThan(50);
  return png;
}

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
    writeConfig(home, port, fake.url, `${QUIET}\n[gorillas]\ntimezone = "UTC"\n`);
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
      `openai/fake-model: ${spent.requests} request, ${spent.input_tokens} in / ${spent.output_tokens} out tokens`,
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
    await spawn("erin", "Keeps notes.");
    const sent = await daemon.request<{ bout_id: string }>("POST", "/api/v1/fighters/erin/message", {
      message: "remember the lighthouse",
    });
    expect(sent.status).toBe(200);
    const page = await open(`#/chat/${ids.erin}`);
    await page.locator(".message.user", { hasText: "remember the lighthouse" }).waitFor();
    await page.locator(".reply", { hasText: "echo: remember the lighthouse" }).waitFor();
    await page.getByLabel("Message to erin").fill("and the harbour");
    await page.getByLabel("Message to erin").press("Enter");
    await page.locator(".reply", { hasText: "echo: and the harbour" }).waitFor();
    const { bouts } = (
      await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/erin/bouts")
    ).body;
    expect(bouts.map((b) => b.id)).toEqual([sent.body.bout_id]);
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
});

describe.runIf(RUN)("the dashboard when the daemon takes signed requests only", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let browser: Browser;
  let watched: WatchedPage | undefined;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, `${QUIET}\n[auth]\nallow_unsigned_loopback = false\n`);
    writeDigestGorilla(home);
    daemon = await startDaemon(home, port);
    browser = await launch();
    // For the scoped keys' tests: a fighter with a conversation, and one a `chat` key does not name.
    for (const name of ["scribe", "other"]) {
      const spawned = await daemon.cli(["fighter", "spawn", "scout", "--name", name]);
      expect(spawned.code, spawned.stderr).toBe(0);
    }
    const told = await daemon.cli(["chat", "--fighter", "scribe", "note the tide"]);
    expect(told.code, told.stderr).toBe(0);
  });

  /** Adds a key with the real CLI (`spar key add --scope`); answers its private key's PEM. */
  const addKey = async (name: string, scope: string): Promise<string> => {
    const pair = generateKeyPairSync("ed25519");
    const file = join(home, `${name}.pub`);
    writeFileSync(file, pair.publicKey.export({ type: "spki", format: "pem" }));
    const added = await daemon.cli(["key", "add", name, file, "--scope", scope]);
    expect(added.code, added.stderr).toBe(0);
    return String(pair.privateKey.export({ type: "pkcs8", format: "pem" }));
  };
  /** A new tab at `hash`, signed in with the key once the page asks for one. */
  const signIn = async (hash: string, name: string, pem: string): Promise<Page> => {
    watched = await openPage(browser);
    const { page } = watched;
    await page.goto(`${daemon.url}/${hash}`);
    await page.getByRole("heading", { name: "Sign in with a key" }).waitFor();
    await page.getByLabel("Key name").fill(name);
    await page.getByLabel("Private key (PEM)").fill(pem);
    await page.getByRole("button", { name: "Use this key" }).click();
    await page.getByText(`Signed as ${name}`).waitFor();
    return page;
  };
  const navigation = (page: Page) => page.locator('nav[aria-label="Views"] a').allTextContents();

  afterEach(async () => {
    // The daemon's refusals of unsigned requests are logged by the browser as failed loads: those,
    // and only those, are expected here.
    const errors = (watched?.errors ?? []).filter(
      (e) => !/^console: Failed to load resource: the server responded with a status of 401/.test(e),
    );
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

  it("asks once for a key, then signs every request in the browser (WebCrypto Ed25519)", async () => {
    watched = await openPage(browser);
    const { page } = watched;
    await page.goto(`${daemon.url}/#/fighters`);
    await page.getByRole("heading", { name: "Sign in with a key" }).waitFor();
    expect(await page.locator(".key-prompt").textContent()).toContain(
      "unsigned request refused: this daemon accepts signed requests only",
    );
    // The data dir's placeholder reads as written, not as an HTML entity (issue 28 item 25).
    const prompt = (await page.locator(".key-prompt").textContent()) ?? "";
    expect(prompt).toContain("<data dir>/keys/cli.key");
    expect(prompt).not.toContain("&lt;");

    // A key the daemon does not know is refused with its reason, and asked for again.
    const privateKey = readFileSync(join(home, "keys", "cli.key"), "utf8");
    await page.getByLabel("Key name").fill("stranger");
    await page.getByLabel("Private key (PEM)").fill(privateKey);
    await page.getByRole("button", { name: "Use this key" }).click();
    await page.getByText('request signature refused: unknown key id "stranger"').waitFor();

    await page.getByLabel("Key name").fill("cli");
    await page.getByLabel("Private key (PEM)").fill(privateKey);
    await page.getByRole("button", { name: "Use this key" }).click();
    await page.locator('tr[data-fighter="spar"]').waitFor();
    await page.getByText("Signed as cli").waitFor();

    // Asked once: the next view's requests are signed with the same key. A POST with a body is
    // signed over its Content-Digest, and its reply streams back.
    await page.getByRole("link", { name: "Chat with spar" }).click();
    await page.getByLabel("Message to spar").fill("signed hello");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".reply", { hasText: "echo: signed hello" }).waitFor();
    // The request's log line is written once its stream has ended, a moment after the page shows it.
    await expect
      .poll(() => daemon.output())
      .toMatch(/method="POST" path="\/api\/v1\/fighters\/[^"]+\/message" status=200 [^\n]*key="cli"/);

    // Live events too: the socket opens with a one-use ticket asked for by a signed request.
    await page.getByRole("link", { name: "Events" }).click();
    await page.getByText("Live.", { exact: true }).waitFor();
    await expect
      .poll(() => daemon.output())
      .toMatch(/method="POST" path="\/api\/v1\/ws\/ticket" status=200 [^\n]*key="cli"/);
    const spawned = await daemon.cli(["fighter", "spawn", "scout", "--name", "signed-scout"]);
    expect(spawned.code, spawned.stderr).toBe(0);
    await page.locator('ol.feed li[data-kind="fighter.spawned"]', { hasText: "signed-scout" }).waitFor();
  });

  it("says exactly why it cannot sign on a page that is not a secure context", async () => {
    watched = await openPage(browser);
    const { page } = watched;
    await page.goto(`http://${PLAIN_HOST}:${daemon.port}/#/fighters`);
    await page.getByRole("heading", { name: "Sign in with a key" }).waitFor();
    await page
      .getByText(
        `This page cannot sign requests: this page is not a secure context (http://${PLAIN_HOST}:${daemon.port}): browsers give WebCrypto only to https pages and to http on localhost or 127.0.0.1`,
        { exact: false },
      )
      .waitFor();
    expect(await page.getByLabel("Private key (PEM)").count()).toBe(0);
  });

  it("shows a read key's scope and offers it no chat box, Chat link or gorilla action (issue 28 item 33)", async () => {
    const page = await signIn("#/fighters", "reader", await addKey("reader", "read"));
    await page.locator('tr[data-fighter="scribe"]').waitFor();
    expect(await page.locator("#key-scope").textContent()).toBe("scope read: look, not act");
    expect(await navigation(page)).toEqual(["Fighters", "Gorillas", "Troops", "Moves", "Events", "Channels"]);
    expect(await page.locator('tr[data-fighter="scribe"] a.button-link').count()).toBe(0);

    // The conversation is there to read, without the box to write in it.
    await page.goto(`${daemon.url}/#/chat/scribe`);
    await page.locator(".message.user", { hasText: "note the tide" }).waitFor();
    await page.locator(".reply", { hasText: "echo: note the tide" }).waitFor();
    expect(await page.locator("#chat-read-only").textContent()).toBe(
      'The key "reader" has scope read; it may read this conversation but not write in it: a chat needs scope operator or chat:scribe.',
    );
    expect(await page.locator("textarea").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Send" }).count()).toBe(0);

    await page.getByRole("link", { name: "Gorillas" }).click();
    const row = page.locator('tr[data-gorilla="digest"]');
    await row.locator(".badge", { hasText: "CAGED" }).waitFor();
    expect(await row.locator("button").count()).toBe(0);
    expect(await row.textContent()).toContain("needs scope operator");
  });

  it("offers a chat:<fighter> key its fighter's chat and events only, and chats there (issue 28 item 33)", async () => {
    const page = await signIn("#/", "scribe-chat", await addKey("scribe-chat", "chat:scribe"));
    // The bare address opens the chat, offering the key's own fighter only.
    await page.getByRole("heading", { name: "Chat" }).waitFor();
    expect(await page.locator("#key-scope").textContent()).toBe("scope chat:scribe: chat with scribe only");
    expect(await navigation(page)).toEqual(["Chat", "Events"]);
    expect(await page.locator("main li a").allTextContents()).toEqual(["scribe"]);

    await page.getByRole("link", { name: "scribe", exact: true }).click();
    await page.locator(".reply", { hasText: "echo: note the tide" }).waitFor();
    await page.getByLabel("Message to scribe").fill("and the moon");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".reply", { hasText: "echo: and the moon" }).waitFor();

    // Another fighter's chat and the lists are refused in the page, before any request is made.
    await page.goto(`${daemon.url}/#/chat/other`);
    await page
      .getByText(
        'The key "scribe-chat" has scope chat:scribe; a chat with other needs scope operator or chat:other.',
      )
      .waitFor();
    expect(await page.locator("textarea").count()).toBe(0);
    await page.goto(`${daemon.url}/#/fighters`);
    await page
      .getByText('The key "scribe-chat" has scope chat:scribe; this view needs scope read.')
      .waitFor();
    await page.goto(`${daemon.url}/#/events`);
    await page.getByText("Live.", { exact: true }).waitFor();
    await page.locator('ol.feed li[data-kind="message.completed"]', { hasText: "scribe" }).first().waitFor();
    // The socket carries scribe's events only: "other" was spawned, but not for this key's eyes.
    expect(await page.locator('ol.feed li[data-kind="fighter.spawned"]', { hasText: "other" }).count()).toBe(
      0,
    );
  });
});
