import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { freePort, removeHome, runCli, startDaemon, tempHome, writeConfig } from "../helpers/daemon.js";

const hash = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** A lost master key: advice that works, and `spar init --fresh`, which keeps the old database. */
describe("spar init --fresh", () => {
  let fake: FakeOpenAI;
  const homes: string[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });

  afterAll(async () => {
    await fake?.close();
    for (const home of homes) removeHome(home);
  });

  async function homeWithDatabase(): Promise<{ home: string; port: number }> {
    const home = tempHome();
    homes.push(home);
    const port = await freePort();
    writeConfig(home, port, fake.url);
    const daemon = await startDaemon(home, port);
    expect((await daemon.cli(["chat", "remember me"])).code).toBe(0);
    expect(await daemon.stop()).toBe(0);
    return { home, port };
  }

  it("says how to recover from a lost master key, and --fresh moves the database aside, deleting nothing", async () => {
    const { home, port } = await homeWithDatabase();
    rmSync(join(home, "master.key"));
    // As a daemon that did not stop cleanly leaves them: they belong to the database and move with it.
    for (const journal of ["spar.db-wal", "spar.db-shm"]) {
      if (!existsSync(join(home, journal))) writeFileSync(join(home, journal), `${journal} bytes`);
    }
    const files = readdirSync(home).filter((f) => f.startsWith("spar.db"));
    expect(files.sort()).toEqual(["spar.db", "spar.db-shm", "spar.db-wal", "spar.db.salt"]);
    const before = Object.fromEntries(files.map((f) => [f, hash(join(home, f))]));

    const start = await runCli(home, ["start"]);
    expect(start.code).toBe(1);
    expect(start.stderr).toContain(`no master key: ${join(home, "master.key")} is missing`);
    expect(start.stderr).toContain("put the original master.key back");
    expect(start.stderr).toContain("or start afresh with: spar init --fresh");
    expect(start.stderr).toMatch(/\(STORE_KEY_INVALID\)\n$/);
    expect(start.stderr).not.toContain('Run "spar init"');
    // Plain init still leaves a database without its key alone.
    expect((await runCli(home, ["init"])).code).toBe(0);
    expect(existsSync(join(home, "master.key"))).toBe(false);

    const fresh = await runCli(home, ["init", "--fresh", "--json"]);
    expect(fresh.code).toBe(0);
    const result = JSON.parse(fresh.stdout) as { moved: { from: string; to: string }[]; created: string[] };
    expect(result.created).toContain("master.key");
    expect(result.moved.map((m) => m.from).sort()).toEqual(files.sort());
    for (const { from, to } of result.moved) {
      expect(to).toMatch(/^spar\.db\.unreadable-\d{8}-\d{6}(-wal|-shm|\.salt)?$/);
      expect(to.slice("spar.db.unreadable-00000000-000000".length)).toBe(from.slice("spar.db".length));
      expect(hash(join(home, to))).toBe(before[from]);
    }
    expect(existsSync(join(home, "spar.db"))).toBe(false);

    const daemon = await startDaemon(home, port);
    try {
      expect((await daemon.cli(["chat", "hello again"])).stdout).toBe("echo: hello again\n");
      // A running daemon: --fresh refuses and moves nothing.
      const running = await daemon.cli(["init", "--fresh"]);
      expect(running.code).toBe(1);
      expect(running.stderr).toMatch(
        /a Spar daemon \(pid \d+\) is running on .*stop it first.*\(CONFLICT\)\n$/,
      );
      expect(existsSync(join(home, "spar.db"))).toBe(true);
    } finally {
      await daemon.stop();
    }
  });

  it("leaves a database that opens alone", async () => {
    const { home } = await homeWithDatabase();
    const before = hash(join(home, "spar.db"));
    const refused = await runCli(home, ["init", "--fresh"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("opens with the current master secret and passes its integrity check");
    expect(refused.stderr).toMatch(/\(CONFLICT\)\n$/);
    expect(hash(join(home, "spar.db"))).toBe(before);
    expect(readdirSync(home).filter((f) => f.includes("unreadable"))).toEqual([]);
  });

  it("keeps a healthy database when a channel is configured (token in .env or missing), and still moves one the key cannot open", async () => {
    const { home } = await homeWithDatabase();
    // A configured channel whose secrets live only in <data dir>/.env, as spar channel setup leaves them.
    appendFileSync(
      join(home, "config.toml"),
      '\n[channels.telegram]\napi_root = "http://127.0.0.1:9"\nallowlist = [424242]\n',
    );
    writeFileSync(
      join(home, ".env"),
      `TELEGRAM_BOT_TOKEN=123456:${"A".repeat(35)}\nTELEGRAM_WEBHOOK_SECRET=${"s".repeat(32)}\n`,
      { mode: 0o600 },
    );
    const before = hash(join(home, "spar.db"));
    const kept = await runCli(home, ["init", "--fresh"]);
    expect(kept.stderr).toContain("opens with the current master secret and passes its integrity check");
    expect(kept.code).toBe(1);
    expect(hash(join(home, "spar.db"))).toBe(before);
    expect(readdirSync(home).filter((f) => f.includes("unreadable"))).toEqual([]);

    // Without the token the channel would refuse to apply; that is no verdict on the database.
    rmSync(join(home, ".env"));
    const still = await runCli(home, ["init", "--fresh"]);
    expect(still.stderr).toContain("opens with the current master secret and passes its integrity check");
    expect(still.code).toBe(1);
    expect(hash(join(home, "spar.db"))).toBe(before);
    expect(readdirSync(home).filter((f) => f.includes("unreadable"))).toEqual([]);

    // Another secret: the database really cannot be decrypted, so it moves aside, channel or not.
    writeFileSync(join(home, "master.key"), `${randomBytes(32).toString("base64url")}\n`, { mode: 0o600 });
    const moved = await runCli(home, ["init", "--fresh", "--json"]);
    expect(moved.code).toBe(0);
    const result = JSON.parse(moved.stdout) as { moved: { from: string; to: string }[] };
    expect(result.moved.map((m) => m.from)).toContain("spar.db");
    expect(existsSync(join(home, "spar.db"))).toBe(false);
  });
});
