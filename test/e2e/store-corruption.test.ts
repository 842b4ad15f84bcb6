import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { damageTablePage } from "../helpers/store-damage.js";

const RECOVERY = "restore spar.db and spar.db.salt from a backup (the master key stays as it is)";

interface DoctorJson {
  ok: boolean;
  checks: { name: string; ok: boolean; detail: string }[];
}

/**
 * A database page damaged on disk, end to end: the real daemon finds it in the background, says so
 * on its health route and as STORE_CORRUPT on every call that meets it, and `spar doctor` tells the
 * operator how to recover, with the daemon running and with it stopped.
 */
describe("a damaged database", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  const env = { OPENAI_API_KEY: "sk-test-secret-0000" };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url);
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("is healthy before: health ok, signed commands work, doctor passes with and without the daemon", async () => {
    expect(await daemon.request("GET", "/api/v1/health")).toMatchObject({
      status: 200,
      body: { status: "ok" },
    });
    expect((await daemon.cli(["fighter", "list"])).code).toBe(0);
    const running = await daemon.cli(["doctor"]);
    expect(running.stdout).toContain("ok   database: the daemon reports no damage");
    expect(running.code).toBe(0);

    // A clean stop checkpoints the WAL into spar.db, so the page flipped below is the one read next.
    expect(await daemon.stop()).toBe(0);
    expect(existsSync(join(home, "spar.db-wal"))).toBe(false);
    const stopped = await runCli(home, ["doctor"], env);
    expect(stopped.stdout).toContain("ok   daemon: not running");
    expect(stopped.stdout).toContain(
      `ok   database: ${join(home, "spar.db")} opens and passes the quick integrity check`,
    );
    expect(stopped.code).toBe(0);
  });

  it("is reported unhealthy by the daemon once its background check has run", async () => {
    // The nonces table: every signed request writes to it, so every CLI command meets the damage.
    await damageTablePage(home, "nonces");
    daemon = await startDaemon(home, port);

    let health = await daemon.request<Record<string, unknown>>("GET", "/api/v1/health");
    for (let i = 0; i < 200 && health.status === 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      health = await daemon.request<Record<string, unknown>>("GET", "/api/v1/health");
    }
    expect(health.status).toBe(503);
    expect(health.body).toEqual({ status: "unhealthy", version: expect.any(String), store: "corrupt" });
    // Health is open to anyone: the kind of problem, never a path.
    expect(JSON.stringify(health.body)).not.toContain(home);
    // One error line in the daemon's log names the file.
    expect(daemon.output()).toContain(`error the database ${join(home, "spar.db")} is damaged`);
  });

  it("answers a signed command with STORE_CORRUPT naming the file and the way back, not a 500", async () => {
    const result = await daemon.cli(["fighter", "list"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`spar: the database ${join(home, "spar.db")} is damaged`);
    expect(result.stderr).toContain(RECOVERY);
    expect(result.stderr).toMatch(/\(STORE_CORRUPT\)\n$/);
    expect(result.stderr).not.toContain("INTERNAL");
  });

  it("makes spar doctor fail with how to recover while the daemon runs", async () => {
    const text = await daemon.cli(["doctor"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`FAIL database: the database ${join(home, "spar.db")} is damaged`);
    expect(text.stdout).toContain(RECOVERY);
    expect(text.stdout).not.toContain("not running");

    const json = JSON.parse((await daemon.cli(["doctor", "--json"])).stdout) as DoctorJson;
    expect(json.ok).toBe(false);
    expect(json.checks).toContainEqual({
      name: "daemon",
      ok: true,
      detail: expect.stringContaining("running at"),
    });
    expect(json.checks).toContainEqual({
      name: "database",
      ok: false,
      detail: expect.stringContaining(RECOVERY),
    });
  });

  it("makes spar doctor find the damage itself when the daemon is stopped", async () => {
    expect(await daemon.stop()).toBe(0);
    const text = await runCli(home, ["doctor"], env);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain("ok   daemon: not running");
    expect(text.stdout).toContain(`FAIL database: the database ${join(home, "spar.db")} is damaged`);
    expect(text.stdout).toContain(RECOVERY);
    // Doctor's look left nothing running and nothing behind.
    expect(existsSync(join(home, "spar.pid"))).toBe(false);
  });
});

/** Damage no call meets (yet): only the background check can tell, and doctor learns it from health. */
describe("a damaged page no call has read", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url);
    daemon = await startDaemon(home, port);
    expect(await daemon.stop()).toBe(0);
    await damageTablePage(home, "bout_summaries");
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("still serves what is intact, while health and spar doctor report the damage", async () => {
    let health = await daemon.request("GET", "/api/v1/health");
    for (let i = 0; i < 200 && health.status === 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      health = await daemon.request("GET", "/api/v1/health");
    }
    expect(health).toMatchObject({ status: 503, body: { status: "unhealthy", store: "corrupt" } });

    const list = await daemon.cli(["fighter", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("spar");

    const doctor = await daemon.cli(["doctor"]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain("ok   daemon: running at");
    expect(doctor.stdout).toContain(
      `FAIL database: the daemon reports its database ${join(home, "spar.db")} damaged`,
    );
    expect(doctor.stdout).toContain(RECOVERY);
  });
});
