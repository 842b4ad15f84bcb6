/**
 * WebSocket tickets on a daemon that takes signed requests only: an unsigned upgrade is refused, a
 * ticket asked for with a signed request opens one socket (the key's) within its minute, and a used,
 * unknown or unsigned-issued ticket opens nothing. One key asking for tickets in a loop cannot flush
 * another key's.
 */
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { raw, signed } from "../helpers/http.js";

/** Opens a socket: its first frame's type once open, or the HTTP status of the refused upgrade. */
function open(url: string): Promise<{ status?: number; frame?: { type: string } }> {
  return new Promise((done) => {
    const ws = new WebSocket(url);
    ws.once("unexpected-response", (_req, res) => done({ status: res.statusCode }));
    ws.once("open", () => ws.send(JSON.stringify({ type: "subscribe", kinds: ["fighter.spawned"] })));
    ws.once("message", (data) => {
      done({ frame: JSON.parse(String(data)) as { type: string } });
      ws.close();
    });
  });
}

describe("WebSocket tickets", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let ws: string;

  /** POST /api/v1/ws/ticket, signed with the CLI's key. */
  async function ticket(): Promise<{ ticket: string; expires_in_s: number }> {
    const signed = await daemon.cli(["sign", "POST", "/api/v1/ws/ticket", "--json"]);
    expect(signed.code, signed.stderr).toBe(0);
    const { url, headers } = JSON.parse(signed.stdout) as { url: string; headers: Record<string, string> };
    const res = await fetch(url, { method: "POST", headers });
    expect(res.status).toBe(200);
    return (await res.json()) as { ticket: string; expires_in_s: number };
  }

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // Room for one key's thousand ticket requests under the rate limit.
    writeConfig(
      home,
      port,
      fake.url,
      "\n[auth]\nallow_unsigned_loopback = false\n\n[api]\nrate_limit_per_minute = 2000\n",
    );
    daemon = await startDaemon(home, port);
    ws = `ws://127.0.0.1:${port}/api/v1/ws`;
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("refuses an unsigned upgrade and an unsigned request for a ticket", async () => {
    expect(await open(ws)).toEqual({ status: 401 });
    expect((await daemon.request("POST", "/api/v1/ws/ticket")).status).toBe(401);
  });

  it("opens one socket per ticket, and only with a ticket it issued", async () => {
    const { ticket: first, expires_in_s } = await ticket();
    expect(expires_in_s).toBe(60);
    expect(await open(`${ws}?ticket=${first}`)).toEqual({
      frame: expect.objectContaining({ type: "subscribed" }),
    });
    expect(await open(`${ws}?ticket=${first}`)).toEqual({ status: 401 });
    expect(await open(`${ws}?ticket=${"A".repeat(43)}`)).toEqual({ status: 401 });
  });

  it("keeps a key's ticket while another key asks for a thousand and more", async () => {
    const { ticket: held } = await ticket();
    const pair = generateKeyPairSync("ed25519");
    const file = join(home, "flood.pub");
    writeFileSync(file, pair.publicKey.export({ type: "spki", format: "pem" }));
    const added = await daemon.cli(["key", "add", "flood", file]);
    expect(added.code, added.stderr).toBe(0);
    const flood: { id: string; privateKey: KeyObject } = { id: "flood", privateKey: pair.privateKey };
    let issued = 0;
    for (let batch = 0; batch < 21; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          raw(
            daemon.port,
            "POST",
            "/api/v1/ws/ticket",
            signed(daemon.port, "POST", "/api/v1/ws/ticket", flood),
          ),
        ),
      );
      issued += answers.filter((a) => a.status === 200).length;
    }
    expect(issued).toBe(1050);
    expect(await open(`${ws}?ticket=${held}`)).toEqual({
      frame: expect.objectContaining({ type: "subscribed" }),
    });
  });
});
