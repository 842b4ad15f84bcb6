/**
 * The dashboard (plugins/dashboard-web) in Debian's chromium against a daemon that takes signed
 * requests only: the page asks once for a key and signs every request in the browser (WebCrypto
 * Ed25519), its live feed included, or says exactly why it cannot; a `read` key and a
 * `chat:<fighter>` key, added with the real CLI, are offered only what their scope allows (issue 28
 * item 33), and a `read` key sees the approvals waiting without the buttons to answer them. The
 * views themselves: dashboard.test.ts and dashboard-approvals.test.ts. Any console error but the
 * daemon's 401s fails the test.
 */
import { generateKeyPairSync } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
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
import { launch, PLAIN_HOST, QUIET, RUN, writeDigestGorilla } from "../helpers/dashboard.js";

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
    expect(await navigation(page)).toEqual([
      "Fighters",
      "Approvals",
      "Gorillas",
      "Schedules",
      "Troops",
      "Moves",
      "Events",
      "Channels",
      "Usage",
    ]);
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

  it("shows a read key the calls waiting for an answer, without the buttons to answer them (issue 30)", async () => {
    const spawned = await daemon.cli(["fighter", "spawn", "coder", "--name", "builder"]);
    expect(spawned.code, spawned.stderr).toBe(0);
    fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: { argv: ["true"] } }] });
    // The CLI signs with the data dir's admin key and waits for the turn, which waits for an answer.
    const chat = daemon.cli(["chat", "--fighter", "builder", "run true"]);
    const page = await signIn("#/approvals", "approvals-reader", await addKey("approvals-reader", "read"));
    const card = page.locator("article.approval");
    await card.waitFor();
    expect(await card.locator("h3").textContent()).toBe("shell_exec for builder");
    expect(await card.locator("code.subject").textContent()).toBe("true");
    expect(await card.locator("button").count()).toBe(0);
    expect(await card.locator("input").count()).toBe(0);
    expect(await card.textContent()).toContain(
      'The key "approvals-reader" has scope read; answering needs scope operator or admin.',
    );
    await page.locator('nav a[href="#/approvals"]', { hasText: "1 waiting" }).waitFor();

    // Answered elsewhere (the CLI): it leaves the page, live.
    const id = await card.getAttribute("data-approval");
    const denied = await daemon.cli(["approvals", "deny", String(id)]);
    expect(denied.code, denied.stderr).toBe(0);
    await card.waitFor({ state: "detached" });
    await page.getByText("No call is waiting.").waitFor();
    const done = await chat;
    expect(done.code, done.stderr).toBe(0);
    const row = page.locator(`table.approvals-history tr[data-approval="${id}"]`);
    await row.locator(".badge", { hasText: "denied" }).waitFor();
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
