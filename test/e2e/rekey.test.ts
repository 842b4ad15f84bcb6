/**
 * `spar rekey` end to end with the real CLI and the real encrypted file: the data survives, the old
 * secret stops working, and `kill -9` at any moment of a rotation leaves a database that the next
 * open (the daemon's store open) reads with master.key or finishes rotating by itself.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMasterSecret } from "../../lib/home.js";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
import type { Logger } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  runCli,
  SPAR_BIN,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const FIGHTERS = ["alpha", "bravo"];
const MESSAGES_EACH = 2;
/** Kills in the short run; SPAR_REKEY_KILLS raises it for the fault suite's long run. */
const KILLS = Number(process.env.SPAR_REKEY_KILLS ?? 20);

interface Contents {
  fighters: string[];
  messages: number;
}

describe("spar rekey", () => {
  let fake: FakeOpenAI;
  let base: string;
  let port: number;
  const homes: string[] = [];
  let expected: Contents;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    base = tempHome();
    homes.push(base);
    port = await freePort();
    writeConfig(base, port, fake.url);
    const daemon = await startDaemon(base, port);
    try {
      for (const name of FIGHTERS) {
        const made = await daemon.request("POST", "/api/v1/fighters", {
          manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities: [] },
        });
        expect(made.status).toBe(201);
        for (let i = 0; i < MESSAGES_EACH; i++) {
          expect(
            (await daemon.request("POST", `/api/v1/fighters/${name}/message`, { message: `hi ${i}` })).status,
          ).toBe(200);
        }
      }
      expected = await contentsOverHttp(daemon);
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
    expect(expected.messages).toBe(FIGHTERS.length * MESSAGES_EACH * 2);
  });

  afterAll(async () => {
    await fake?.close();
    for (const home of homes) removeHome(home);
  });

  /** A copy of the prepared home, with a port of its own: `startDaemon` takes the port from the config. */
  async function copyOfBase(): Promise<{ home: string; port: number }> {
    const home = tempHome();
    homes.push(home);
    cpSync(base, home, { recursive: true });
    const port = await freePort();
    writeConfig(home, port, fake.url);
    return { home, port };
  }

  it("refuses without --yes, and while a daemon runs", async () => {
    const { home, port } = await copyOfBase();
    const unconfirmed = await runCli(home, ["rekey"]);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain("Run again with --yes to go ahead");
    expect(unconfirmed.stderr).toContain("(VALIDATION_FAILED)");

    const fromEnv = await runCli(home, ["rekey", "--yes"], { SPAR_MASTER_KEY: "x".repeat(40) });
    expect(fromEnv.stderr).toContain(
      "the master secret comes from SPAR_MASTER_KEY, which spar rekey cannot change",
    );
    expect(fromEnv.code).toBe(1);

    const daemon = await startDaemon(home, port);
    try {
      const running = await runCli(home, ["rekey", "--yes"]);
      expect(running.code).toBe(1);
      expect(running.stderr).toContain(
        `is running on ${home}; stop it first (spar stop), then run spar rekey`,
      );
      expect(running.stderr).toContain("(CONFLICT)");
    } finally {
      await daemon.stop();
    }
  });

  it("re-encrypts under a new master.key: the daemon starts with the data, the old secret no longer opens it", async () => {
    const { home, port } = await copyOfBase();
    const before = readFileSync(join(home, "master.key"));
    const result = await runCli(home, ["rekey", "--yes"]);
    expect(result.stderr).not.toContain("rekey");
    // Rekey applies the plugins, the Arena among them: no deprecation warning from fastify's options.
    expect(result.stderr).not.toContain("FSTDEP");
    expect(result.stdout).toContain("Re-encrypted the database under a new master secret");
    expect(result.code).toBe(0);
    const after = readFileSync(join(home, "master.key"));
    expect(after.length).toBe(32);
    expect(after.equals(before)).toBe(false);
    expect(
      ["master.key.next", "master.key.old", "spar.db-journal"].filter((f) => existsSync(join(home, f))),
    ).toEqual([]);

    const daemon = await startDaemon(home, port);
    try {
      expect(daemon.output()).not.toContain("FSTDEP");
      expect(await contentsOverHttp(daemon)).toEqual(expected);
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
    await expect(openSqliteStore({ home, masterSecret: before })).rejects.toMatchObject({
      code: "STORE_KEY_INVALID",
    });
  });

  it("keeps the old secret as master.key.old-<time>, and spar restore --master-key-file brings back a backup made before the rekey", async () => {
    const { home, port } = await copyOfBase();
    const backups = tempHome();
    homes.push(backups);
    const snapshot = join(backups, "before-rekey.db");
    const made = await runCli(home, ["backup", snapshot]);
    expect(made.code, made.stderr).toBe(0);
    const original = readFileSync(join(home, "master.key"));

    const rekeyed = await runCli(home, ["rekey", "--yes"]);
    expect(rekeyed.code, rekeyed.stderr).toBe(0);
    const kept = /The old secret is kept in (\S+) \(mode 0600\)/.exec(rekeyed.stdout)?.[1] ?? "";
    expect(kept).toMatch(new RegExp(`^${home}/master\\.key\\.old-\\d{8}-\\d{6}$`));
    expect(readFileSync(kept).equals(original)).toBe(true);
    expect(statSync(kept).mode & 0o777).toBe(0o600);
    expect(rekeyed.stdout).toContain(`--master-key-file ${kept}`);
    const current = readFileSync(join(home, "master.key"));
    expect(current.equals(original)).toBe(false);

    // The database is lost; only the backup made under the old secret is left.
    for (const file of ["spar.db", "spar.db-wal", "spar.db-shm"]) rmSync(join(home, file), { force: true });
    const plain = await runCli(home, ["restore", snapshot, "--json"]);
    expect(plain.code).toBe(1);
    const refused = (JSON.parse(plain.stdout) as { error: { code: string; message: string } }).error;
    expect(refused.code).toBe("STORE_KEY_INVALID");
    expect(refused.message).toContain("--master-key-file");
    expect(existsSync(join(home, "spar.db"))).toBe(false);

    const restored = await runCli(home, ["restore", snapshot, "--master-key-file", kept]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain(
      `It opened with ${kept} and was re-encrypted under the current master secret`,
    );
    // The current master.key stays; the restored database opens with it.
    expect(readFileSync(join(home, "master.key")).equals(current)).toBe(true);
    const daemon = await startDaemon(home, port);
    try {
      expect(await contentsOverHttp(daemon)).toEqual(expected);
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
  });

  it(`survives kill -9 at ${KILLS} points of a rotation: master.key or the interrupted rotation always opens it`, async () => {
    const fullRun = await timeOneRekey((await copyOfBase()).home);
    const phases = new Map<string, number>();
    const warnings: string[] = [];
    let last = { home: "", port: 0 };
    for (let i = 0; i < KILLS; i++) {
      last = await copyOfBase();
      const { home } = last;
      const original = readFileSync(join(home, "master.key"));
      const child = spawnRekey(home);
      // A quarter anywhere in the run (and a little past it); a quarter a moment after the new secret
      // is written; a quarter inside the re-encryption (its journal is the second one: the first is
      // the switch out of WAL); a quarter once that journal is gone again (committed). Most of a run is
      // starting Node and deriving keys, so without aiming few kills would land inside the rekey.
      const journal = join(home, "spar.db-journal");
      if (i % 4 === 0) await sleep(Math.round(Math.random() * fullRun * 1.1));
      else if (i % 4 === 1) await appears(join(home, "master.key.next"), child, Math.random() * 40);
      else await journalSeen(journal, child, 2, i % 4 === 3);
      await kill9(child);

      const left = {
        next: existsSync(join(home, "master.key.next")),
        old: existsSync(join(home, "master.key.old")),
        journal: existsSync(join(home, "spar.db-journal")),
      };
      const log = collecting(warnings);
      const secret = readMasterSecret(home);
      const store = await openSqliteStore(
        { home, masterSecret: secret },
        { log, integrityWorker: BUILT_WORKER },
      );
      secret.fill(0);
      try {
        expect(await contentsOfStore(store)).toEqual(expected);
        expect(await store.integrity()).toMatchObject({ status: "ok", checked: true });
      } finally {
        await store.close();
      }
      const rotated = !readFileSync(join(home, "master.key")).equals(original);
      expect(existsSync(join(home, "master.key.next"))).toBe(false);
      expect(existsSync(join(home, "master.key.old"))).toBe(false);
      const phase = phaseOf(left, rotated);
      phases.set(phase, (phases.get(phase) ?? 0) + 1);
    }
    // The last home once more through the real daemon: it starts, and the data is there.
    const daemon = await startDaemon(last.home, last.port);
    try {
      expect(await contentsOverHttp(daemon)).toEqual(expected);
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
    const figures = [...phases].map(([phase, n]) => `${phase}: ${n}`).join(", ");
    console.log(
      `rekey kill -9: ${KILLS} kills survived, 0 unreadable (uninterrupted run ${fullRun} ms); ${figures}`,
    );
    expect([...phases.values()].reduce((a, b) => a + b, 0)).toBe(KILLS);
    expect(
      warnings.every((w) => /a master key rotation \(spar rekey\) in .* (complete|rolled back)/.test(w)),
    ).toBe(true);
  }, 600_000);
});

const BUILT_WORKER = new URL("../../dist/plugins/store-sqlite/integrity-worker.js", import.meta.url);

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Waits until `path` exists (or the child ended), then `extra` ms more. */
async function appears(path: string, child: ChildProcess, extra: number): Promise<void> {
  while (!existsSync(path) && child.exitCode === null) await new Promise((done) => setImmediate(done));
  if (extra > 0) await sleep(extra);
}

/** Waits for the `nth` time `path` appears (and, with `gone`, until it is gone again), or the child's end. */
async function journalSeen(path: string, child: ChildProcess, nth: number, gone: boolean): Promise<void> {
  let seen = 0;
  let present = false;
  while (child.exitCode === null) {
    const now = existsSync(path);
    if (now && !present) seen++;
    if (seen === nth && (!gone || !now)) return;
    present = now;
    await new Promise((done) => setImmediate(done));
  }
}

function spawnRekeyEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SPAR_HOME: home };
  for (const name of Object.keys(env)) if (name.startsWith("SPAR_") && name !== "SPAR_HOME") delete env[name];
  return env;
}

function spawnRekey(home: string): ChildProcess {
  return spawn(process.execPath, [SPAR_BIN, "rekey", "--yes"], { env: spawnRekeyEnv(home), stdio: "ignore" });
}

async function timeOneRekey(home: string): Promise<number> {
  const started = Date.now();
  const child = spawn(process.execPath, [SPAR_BIN, "rekey", "--yes"], {
    env: spawnRekeyEnv(home),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  // The signal and stderr, when it fails: a native crash shows nothing else.
  const [code, signal] = await new Promise<[number | null, string | null]>((done) =>
    child.once("exit", (c, s) => done([c, s])),
  );
  expect(code, `signal ${signal}; stderr: ${stderr}`).toBe(0);
  return Date.now() - started;
}

async function kill9(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return; // it finished first
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGKILL");
  await exited;
}

/** Where the kill landed, from the files it left and whether the rotation ended up done. */
function phaseOf(left: { next: boolean; old: boolean; journal: boolean }, rotated: boolean): string {
  if (left.journal) return "mid re-encryption (hot journal, rolled back)";
  if (left.next && rotated) return "re-encrypted, master.key not yet swapped (completed)";
  if (left.next) return "new secret written, not yet re-encrypted (rolled back)";
  if (left.old) return "swapped, old secret not yet deleted (completed)";
  return rotated ? "after the rotation" : "before the rotation began";
}

function collecting(into: string[]): Logger {
  return {
    info: () => undefined,
    warn: (message: string) => void into.push(message),
    error: () => undefined,
  };
}

async function contentsOverHttp(daemon: TestDaemon): Promise<Contents> {
  const { body } = await daemon.request<{ fighters: { name: string }[] }>("GET", "/api/v1/fighters");
  const fighters = body.fighters.map((f) => f.name).filter((name) => FIGHTERS.includes(name));
  let messages = 0;
  for (const name of fighters) {
    const bouts = await daemon.request<{ bouts: { id: string }[] }>("GET", `/api/v1/fighters/${name}/bouts`);
    for (const bout of bouts.body.bouts) {
      const listed = await daemon.request<{ messages: unknown[] }>(
        "GET",
        `/api/v1/bouts/${bout.id}/messages`,
      );
      messages += listed.body.messages.length;
    }
  }
  return { fighters: fighters.sort(), messages };
}

async function contentsOfStore(store: Awaited<ReturnType<typeof openSqliteStore>>): Promise<Contents> {
  const fighters = (await store.fighters.list()).filter((f) => FIGHTERS.includes(f.name));
  let messages = 0;
  for (const fighter of fighters) {
    for (const bout of await store.bouts.list(fighter.id))
      messages += (await store.messages.list(bout.id)).length;
  }
  return { fighters: fighters.map((f) => f.name).sort(), messages };
}
