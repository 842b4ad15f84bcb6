import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GorillaRunRecord } from "../../lib/gorillas/records.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A reply long enough that the Creed reflects on it after an ordinary turn. */
const LONG = `Here is what I found. ${"The findings are consistent across every source I checked. ".repeat(12)}`;

/**
 * With the Creed's reflection on (the default), an ordinary turn makes a second model call after its
 * reply; a gorilla's cycle makes none after its run ends, so its budget counts every call it causes.
 */
describe("a gorilla's cycle makes no model call once its run has ended", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[creed]\nreflect_min_chars = 50\n");
    mkdirSync(join(home, "gorillas", "quiet"), { recursive: true });
    writeFileSync(
      join(home, "gorillas", "quiet", "GORILLA.toml"),
      [
        'name = "quiet"',
        'description = "A test gorilla."',
        'schedule = "0 0 1 1 *"',
        'moves = ["memory_store"]',
        'system_prompt = "You are quiet."',
        'task = "Report what you found in detail."',
        "",
      ].join("\n"),
    );
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("reflects after an ordinary turn, and not after a gorilla's cycle", async () => {
    fake.setDefault(() => ({ text: LONG }));
    const ordinary = await daemon.request("POST", "/api/v1/fighters/spar/message", {
      message: "Tell me what you found.",
    });
    expect(ordinary.status).toBe(200);
    await sleep(1000);
    expect(fake.requests.length).toBe(2);

    fake.reset();
    fake.setDefault(() => ({ text: LONG }));
    const started = await daemon.cli(["gorilla", "run", "quiet", "--json"]);
    expect(started.code, started.stdout + started.stderr).toBe(0);
    const { id } = JSON.parse(started.stdout) as GorillaRunRecord;
    let run: GorillaRunRecord | undefined;
    for (let i = 0; i < 100 && (!run || run.outcome === "running"); i++) {
      await sleep(100);
      run = (await daemon.request<GorillaRunRecord>("GET", `/api/v1/gorillas/quiet/runs/${id}`)).body;
    }
    expect(run?.outcome).toBe("ok");
    await sleep(1000);
    expect(fake.requests.length).toBe(1);
  });
});
