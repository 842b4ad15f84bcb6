import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AuditReport } from "../../cli/commands/security-audit.js";
import type { FighterRecord } from "../../sdk/types.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  type CliResult,
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) removeHome(home);
});

/** A data dir that `spar init` creates itself, as a user's would be. */
async function initializedHome(): Promise<string> {
  const parent = tempHome();
  homes.push(parent);
  const home = join(parent, "data");
  expect((await runCli(home, ["init"])).code).toBe(0);
  return home;
}

async function audit(home: string): Promise<{ result: CliResult; report: AuditReport }> {
  const result = await runCli(home, ["security", "audit", "--json"]);
  return { result, report: JSON.parse(result.stdout) as AuditReport };
}

/** The exit code must follow the findings: 1 exactly when one is high. */
function expectExitMatches({ result, report }: { result: CliResult; report: AuditReport }): void {
  const high = report.findings.some((f) => f.severity === "high");
  expect(result.code).toBe(high ? 1 : 0);
  expect(report.ok).toBe(!high);
}

describe("spar security audit", () => {
  it("passes after spar init (the shared-machine check depends on this machine)", async () => {
    const home = await initializedHome();
    const json = await audit(home);
    // How many people have accounts here is unknown, so that one check may go either way.
    expect(json.report.findings.filter((f) => f.id !== "unsigned_loopback")).toEqual([]);
    expect(json.report.passed.map((p) => p.check)).toEqual(
      expect.arrayContaining([
        "api_listen",
        "cors_origins",
        "file_permissions",
        "dotenv",
        "channel_allowlists",
      ]),
    );
    expect(json.report.skipped).toContainEqual({
      check: "full_access",
      reason: expect.stringContaining("daemon is not running"),
    });
    expectExitMatches(json);
    expect(json.result.code).toBe(0);

    const text = await runCli(home, ["security", "audit"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^0 high, [01] medium, 0 low; checks passed: api_listen, .*; skipped: provider_keys .*full_access/m,
    );
  });

  it("flags a configured channel without an allowlist, and passes it once one is set", async () => {
    const home = await initializedHome();
    const config = join(home, "config.toml");
    const table = (allowlist: string) => `\n[channels.telegram]\nallowlist = ${allowlist}\n`;
    const base = readFileSync(config, "utf8");
    writeFileSync(config, base + table("[]"));
    const open = await audit(home);
    expect(open.report.findings).toContainEqual(
      expect.objectContaining({ id: "channel_allowlists:telegram", severity: "high" }),
    );
    expectExitMatches(open);
    writeFileSync(config, base + table("[123456789]"));
    const closed = await audit(home);
    expect(closed.report.findings.some((f) => f.id.startsWith("channel_allowlists"))).toBe(false);
    expect(closed.report.passed.map((p) => p.check)).toContain("channel_allowlists");
  });

  it("fails with a high finding and the chmod fix when master.key is readable by others", async () => {
    const home = await initializedHome();
    const key = join(home, "master.key");
    chmodSync(key, 0o644);
    const text = await runCli(home, ["security", "audit"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`HIGH   ${key} has mode 0644: group and others can read it`);
    expect(text.stdout).toContain(`       fix: chmod 600 ${key}\n`);
    expect(text.stdout).toMatch(/^1 high, /m);

    const json = await audit(home);
    expect(json.report.findings).toContainEqual(
      expect.objectContaining({
        id: "file_permissions:master.key",
        severity: "high",
        fix: `chmod 600 ${key}`,
      }),
    );
    expectExitMatches(json);
  });

  it("fails when .env is readable by others, without printing what is in it", async () => {
    const home = await initializedHome();
    const dotenv = join(home, ".env");
    writeFileSync(dotenv, "OPENAI_API_KEY=sk-audit-canary-5521\n");
    chmodSync(dotenv, 0o644);
    const json = await audit(home);
    expect(json.report.findings).toContainEqual({
      id: "dotenv",
      severity: "high",
      message: expect.stringContaining(`${dotenv} has mode 0644`),
      fix: `chmod 600 ${dotenv}`,
    });
    expect(json.result.code).toBe(1);
    const text = await runCli(home, ["security", "audit"]);
    expect(`${json.result.stdout}${text.stdout}${text.stderr}`).not.toContain("sk-audit-canary");
  });

  it("fails when the API listens on every interface (reading the config only)", async () => {
    const home = await initializedHome();
    const port = await freePort();
    writeFileSync(join(home, "config.toml"), `api_listen = "0.0.0.0:${port}"\n`, { mode: 0o600 });
    const json = await audit(home);
    expect(json.report.findings).toContainEqual({
      id: "api_listen",
      severity: "high",
      message: `the API listens on 0.0.0.0:${port}, reachable from other machines; 1 authorized key(s) can sign requests (cli)`,
      fix: expect.stringContaining(`api_listen = "127.0.0.1:${port}"`),
    });
    expectExitMatches(json);
    expect(json.result.code).toBe(1);
  });

  it("refuses an unknown action, naming the actions", async () => {
    const result = await runCli(await initializedHome(), ["security", "scan"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'spar: unknown action "scan" for security; actions: audit (VALIDATION_FAILED)\n',
    );
  });
});

describe("spar security audit with the daemon running", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url);
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("flags each fighter but spar that holds full_access", async () => {
    const spawned = await daemon.request<FighterRecord>("POST", "/api/v1/fighters", {
      manifest: {
        name: "root-bot",
        description: "Too powerful",
        system_prompt: "You can do anything.",
        capabilities: [{ type: "full_access" }],
      },
    });
    expect(spawned.status).toBe(201);

    const result = await daemon.cli(["security", "audit", "--json"]);
    const report = JSON.parse(result.stdout) as AuditReport;
    expect(report.findings).toContainEqual(
      expect.objectContaining({
        id: "full_access:root-bot",
        severity: "medium",
        message: expect.stringContaining("fighter root-bot has full_access"),
      }),
    );
    expect(report.findings.filter((f) => f.id.startsWith("full_access:")).map((f) => f.id)).toEqual([
      "full_access:root-bot",
    ]);
    expect(report.skipped.map((s) => s.check)).not.toContain("full_access");
    expectExitMatches({ result, report });

    const text = await daemon.cli(["security", "audit"]);
    expect(text.stdout).toContain("MEDIUM fighter root-bot has full_access");
    expect(text.stdout).toContain("       fix: spar fighter kill root-bot");
    expect(text.stdout).not.toContain("sk-test-secret");
  });
});
