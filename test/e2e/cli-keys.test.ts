import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  type CliResult,
  freePort,
  removeHome,
  SPAR_BIN,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/** The real CLI with `input` on its standard input, as `… | spar key add <name> -` runs it. */
function cliWithStdin(home: string, args: string[], input: string): Promise<CliResult> {
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      [SPAR_BIN, ...args],
      { env: { PATH: process.env.PATH, SPAR_HOME: home }, timeout: 60_000 },
      (err, stdout, stderr) => done({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(input);
  });
}

const publicPem = () =>
  generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }).toString();

describe("spar key, with unsigned loopback allowed (the default)", () => {
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

  it("reads the public key from standard input with -", async () => {
    const added = await cliWithStdin(home, ["key", "add", "laptop", "-"], publicPem());
    expect(added).toMatchObject({ code: 0, stderr: "" });
    expect(added.stdout).toMatch(/^Authorized laptop \(SHA256:/);
    const empty = await cliWithStdin(home, ["key", "add", "empty", "-"], "");
    expect(empty.stderr).toBe("spar: no public key on standard input (VALIDATION_FAILED)\n");
  });

  it("refuses the same public key under a second name, naming the first", async () => {
    const pem = publicPem();
    expect((await cliWithStdin(home, ["key", "add", "phone", "-"], pem)).code).toBe(0);
    const again = await cliWithStdin(home, ["key", "add", "phone-2", "-"], pem);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      'spar: this public key is already authorized as "phone"; to give it another name, remove "phone" first (CONFLICT)\n',
    );
    const cliAgain = await daemon.cli(["key", "add", "mine", join(home, "keys", "cli.pub")]);
    expect(cliAgain.stderr).toMatch(/already authorized as "cli".*\(CONFLICT\)/);
  });

  it("refuses to remove the CLI's own key without --force, saying what it breaks and how to undo it", async () => {
    const refused = await daemon.cli(["key", "remove", "cli"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('"cli" is the key this CLI signs its requests with');
    expect(refused.stderr).toContain("spar key remove cli --force");
    expect(refused.stderr).toContain(`undo with: spar key add cli ${join(home, "keys", "cli.pub")}`);
    expect(refused.stderr).toMatch(/\(CONFLICT\)\n$/);
    expect(existsSync(join(home, "keys", "authorized", "cli.pub"))).toBe(true);
  });

  it("keeps working after --force by falling back to unsigned requests, saying so once", async () => {
    const removed = await daemon.cli(["key", "remove", "cli", "--force"]);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain(`Undo with: spar key add cli ${join(home, "keys", "cli.pub")}`);

    const status = await daemon.cli(["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/is running/);
    const notice = `the daemon does not know the CLI's key "cli", so requests go unsigned`;
    expect(status.stderr.split(notice).length - 1).toBe(1);
    expect(status.stderr).toContain(`spar key add cli ${join(home, "keys", "cli.pub")}`);
    fake.reset();
    const chat = await daemon.cli(["chat", "still here?"]);
    expect(chat.stdout).toBe("echo: still here?\n");

    const restored = await daemon.cli(["key", "add", "cli", join(home, "keys", "cli.pub")]);
    expect(restored.code).toBe(0);
    const after = await daemon.cli(["status"]);
    expect(after).toMatchObject({ code: 0, stderr: "" });
  });
});

describe("spar key, on a daemon that accepts signed requests only", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("says how to authorize the CLI's key again when the daemon no longer knows it", async () => {
    expect((await daemon.cli(["key", "remove", "cli", "--force"])).code).toBe(0);
    const status = await daemon.cli(["status"]);
    expect(status.code).toBe(1);
    expect(status.stderr).toBe(
      `spar: the daemon at ${daemon.url} does not know the CLI's key "cli" (unknown key id), and it accepts ` +
        `no unsigned requests from here; authorize it again with: spar key add cli ${join(home, "keys", "cli.pub")} ` +
        "(UNAUTHORIZED)\n",
    );
    const json = await daemon.cli(["status", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: "UNAUTHORIZED" } });

    expect((await daemon.cli(["key", "add", "cli", join(home, "keys", "cli.pub")])).code).toBe(0);
    expect((await daemon.cli(["status"])).code).toBe(0);
    expect(readFileSync(join(home, "keys", "authorized", "cli.pub"), "utf8")).toMatch(/BEGIN PUBLIC KEY/);
  });
});
