import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AuditReport } from "../../cli/commands/security-audit.js";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
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

/** Weak master secrets, through the real CLI: refused for a new database, flagged beside an old one. */
describe("a weak master secret", () => {
  let fake: FakeOpenAI;
  const homes: string[] = [];
  const daemons: TestDaemon[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterEach(async () => {
    for (const daemon of daemons.splice(0)) await daemon.stop();
    for (const home of homes.splice(0)) removeHome(home);
  });
  afterAll(async () => {
    await fake?.close();
  });

  async function freshHome(): Promise<{ home: string; port: number }> {
    const home = tempHome();
    homes.push(home);
    const port = await freePort();
    writeConfig(home, port, fake.url);
    return { home, port };
  }

  const dbFiles = (home: string) => readdirSync(home).filter((f) => f.startsWith("spar.db"));

  it("refuses an empty master.key on a fresh home and creates no database", async () => {
    const { home } = await freshHome();
    writeFileSync(join(home, "master.key"), "", { mode: 0o600 });
    const result = await runCli(home, ["start"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `spar: refusing to create a database with a weak master secret: ${join(home, "master.key")} carries 0 bytes, ` +
        "fewer than the 32 it needs",
    );
    expect(result.stderr).toContain(`Fix: delete ${join(home, "master.key")} and run spar init`);
    expect(result.stderr).toMatch(/\(STORE_KEY_INVALID\)\n$/);
    expect(dbFiles(home)).toEqual([]);
    expect(existsSync(join(home, "spar.pid"))).toBe(false);
  });

  it("refuses SPAR_MASTER_KEY=a the same way", async () => {
    const { home } = await freshHome();
    const result = await runCli(home, ["start"], { SPAR_MASTER_KEY: "a" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "refusing to create a database with a weak master secret: SPAR_MASTER_KEY carries 1 byte",
    );
    expect(result.stderr).toContain("openssl rand -hex 32");
    expect(result.stderr).not.toMatch(/SPAR_MASTER_KEY=a\b/);
    expect(dbFiles(home)).toEqual([]);
  });

  it("accepts 64 hex characters in SPAR_MASTER_KEY, and doctor and audit pass it", async () => {
    const { home, port } = await freshHome();
    const hex = randomBytes(32).toString("hex");
    const daemon = await startDaemon(home, port, { SPAR_MASTER_KEY: hex });
    daemons.push(daemon);
    expect(daemon.output()).not.toContain("weak master secret");
    expect(await daemon.request("GET", "/api/v1/health")).toMatchObject({ status: 200 });
    expect(existsSync(join(home, "spar.db"))).toBe(true);
    expect(existsSync(join(home, "master.key"))).toBe(false);

    const doctor = await daemon.cli(["doctor"]);
    expect(doctor.stdout).toContain("ok   master key: from SPAR_MASTER_KEY");
    const audit = JSON.parse((await daemon.cli(["security", "audit", "--json"])).stdout) as AuditReport;
    expect(audit.passed).toContainEqual({
      check: "master_secret",
      detail: "SPAR_MASTER_KEY carries 32 bytes (hex-decoded)",
    });
  });

  it("keeps a database an older Spar made with a weak secret open, with a warning, a doctor FAIL and a high finding", async () => {
    const { home, port } = await freshHome();
    expect((await runCli(home, ["init"])).code).toBe(0);
    // What an older Spar allowed: a short key file, and a database made with it (the store plugin
    // itself, as that Spar opened it, without today's check).
    writeFileSync(join(home, "master.key"), "hunter2, weak", { mode: 0o600 });
    const older = await openSqliteStore({ home, masterSecret: Buffer.from("hunter2, weak") });
    older.close();

    const daemon = await startDaemon(home, port);
    daemons.push(daemon);
    expect(daemon.output()).toMatch(
      new RegExp(`warn weak master secret: ${join(home, "master.key")} carries 13 bytes, fewer than the 32`),
    );
    const list = await daemon.cli(["fighter", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("spar");

    const doctor = await daemon.cli(["doctor"]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain(`FAIL master key: ${join(home, "master.key")} carries 13 bytes`);
    expect(doctor.stdout).toContain("Fix: stop the daemon (spar stop) and run spar rekey --yes");

    const text = await daemon.cli(["security", "audit"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      `HIGH   the master secret (${join(home, "master.key")}) carries 13 bytes, fewer than the 32 it needs`,
    );
    expect(text.stdout).toContain("the database was created with it");
    expect(text.stdout).toContain("spar rekey --yes, which writes a new random master.key and re-encrypts");
    const json = await daemon.cli(["security", "audit", "--json"]);
    const report = JSON.parse(json.stdout) as AuditReport;
    expect(report.findings).toContainEqual(
      expect.objectContaining({
        id: "master_secret",
        severity: "high",
        fix: expect.stringContaining("spar rekey --yes"),
      }),
    );
    // Lengths only: the secret itself appears nowhere.
    for (const out of [doctor, text, json, list]) expect(out.stdout + out.stderr).not.toContain("hunter2");
    expect(daemon.output()).not.toContain("hunter2");
  });
});
