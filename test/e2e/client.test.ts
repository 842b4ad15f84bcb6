/**
 * `spar/client` as a third party's program meets it: imported by its package name from the built
 * package, signing every request with a key authorized by `spar key add`, against a real daemon that
 * accepts signed requests only. It spawns, messages, streams, lists bouts and messages, follows the
 * event stream across a restart of the daemon (resuming from the last event it saw), and kills.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type * as ClientModule from "../../lib/client/index.js";
import type { SparEvent } from "../../sdk/events.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const ROOT = resolve(import.meta.dirname, "..", "..");

describe("spar/client against a daemon that takes signed requests only", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  let consumer: string;
  let client: typeof ClientModule;
  let privateKey: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
    const pair = generateKeyPairSync("ed25519");
    privateKey = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const pub = join(home, "laptop.pub");
    writeFileSync(pub, pair.publicKey.export({ type: "spki", format: "pem" }).toString());
    const added = await daemon.cli(["key", "add", "laptop", pub]);
    expect(added.code, added.stderr).toBe(0);
    // A program outside the repository with spar installed, importing the client by its name.
    consumer = mkdtempSync(join(tmpdir(), "spar-client-consumer-"));
    mkdirSync(join(consumer, "node_modules"));
    symlinkSync(ROOT, join(consumer, "node_modules", "spar"), "dir");
    writeFileSync(join(consumer, "entry.mjs"), 'export * from "spar/client";\n');
    client = (await import(join(consumer, "entry.mjs"))) as typeof ClientModule;
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
    if (consumer) rmSync(consumer, { recursive: true, force: true });
  });

  const spar = () => client.createClient({ url: daemon.url, keyId: "laptop", privateKey });

  it("drives spawn → message → stream → bouts → messages → kill, typed and signed", async () => {
    const api = spar();
    expect(await api.health()).toMatchObject({ status: "ok" });
    const ada = await api.fighters.spawn({ template: "oracle", name: "ada" });
    expect(ada).toMatchObject({ name: "ada", status: "idle" });
    expect((await api.fighters.list()).map((f) => f.name)).toContain("ada");
    expect((await api.fighters.get("ada")).id).toBe(ada.id);

    fake.enqueue({ text: "first answer" });
    const first = await api.message(ada.id, "hello there", { bout: "new" });
    expect(first.response).toBe("first answer");

    fake.enqueue({ text: "streamed answer" });
    const events: ClientModule.ReplyEvent[] = [];
    for await (const event of api.stream(ada.id, "and again", { bout_id: first.bout_id })) events.push(event);
    const deltas = events.filter((e) => e.type === "delta").map((e) => (e.type === "delta" ? e.text : ""));
    expect(deltas.join("")).toBe("streamed answer");
    const last = events.at(-1);
    expect(last?.type).toBe("reply");
    if (last?.type === "reply") expect(last.result.bout_id).toBe(first.bout_id);

    const bouts = await api.bouts(ada.id);
    expect(bouts.map((b) => [b.id, b.origin])).toEqual([[first.bout_id, "user"]]);
    const messages = await api.messages(first.bout_id);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello there"],
      ["assistant", "first answer"],
      ["user", "and again"],
      ["assistant", "streamed answer"],
    ]);

    // The same key twice is one turn: the retry gets the first reply.
    fake.enqueue({ text: "once" });
    const once = await api.message(ada.id, "only once", { idempotencyKey: "client-test-1" });
    const again = await api.message(ada.id, "only once", { idempotencyKey: "client-test-1" });
    expect(again.turn_id).toBe(once.turn_id);

    await api.fighters.kill(ada.id);
    await expect(api.fighters.get(ada.id)).rejects.toMatchObject({ code: "FIGHTER_NOT_FOUND" });
  });

  it("refuses with the daemon's code: an unknown key, an unsigned call, a bad body", async () => {
    const stranger = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" });
    const unknown = client.createClient({
      url: daemon.url,
      keyId: "nobody",
      privateKey: stranger.toString(),
    });
    await expect(unknown.fighters.list()).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    await expect(client.createClient({ url: daemon.url }).fighters.list()).rejects.toMatchObject({
      code: "UNAUTHORIZED",
    });
    await expect(
      spar().request("POST", "/api/v1/fighters", { template: "oracle", bogus: 1 }),
    ).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    expect(() => client.createClient({ url: daemon.url, keyId: "laptop" })).toThrow(
      /both keyId and privateKey/,
    );
    const closed = client.createClient({ url: `http://127.0.0.1:${await freePort()}` });
    await expect(closed.health()).rejects.toMatchObject({ code: "DAEMON_UNREACHABLE" });
  });

  it("follows the event stream, and after the daemon restarts takes what it missed", async () => {
    const api = spar();
    const bo = await api.fighters.spawn({ template: "oracle", name: "bo" });
    const seen: SparEvent[] = [];
    const notices: string[] = [];
    const follower = api.events({
      kinds: ["message.completed"],
      fighter_id: bo.id,
      onNotice: (notice) => notices.push(notice.code),
    });
    const reading = (async () => {
      for await (const event of follower) {
        seen.push(event);
        if (seen.length === 3) break;
      }
    })();
    await follower.ready;
    fake.enqueue({ text: "before the restart" });
    await api.message(bo.id, "one");
    await waitFor(() => seen.length === 1);

    await daemon.stop();
    // Completed while no socket is open: the follower gets it from the daemon's history.
    daemon = await startDaemon(home, port);
    fake.enqueue({ text: "after the restart" }, { text: "and once more" });
    await api.message(bo.id, "two");
    await api.message(bo.id, "three");
    await reading;
    expect(seen.map((e) => e.kind)).toEqual(["message.completed", "message.completed", "message.completed"]);
    // bus-local keeps its history in memory: the restarted daemon numbers afresh, and says so.
    expect(notices).toContain("RESTARTED");
    expect(new Set(seen.map((e) => (e.kind === "message.completed" ? e.turn_id : ""))).size).toBe(3);
  });
});

async function waitFor(done: () => boolean): Promise<void> {
  const until = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
