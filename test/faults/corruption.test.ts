/**
 * Corruption and wrong keys at start, with the real daemon and the real encrypted file. Each case
 * damages a copy of one home with data (a flipped salt byte, a truncated database, a wrong
 * SPAR_MASTER_KEY or master.key, a flipped byte in a WAL frame followed by more commits) and checks
 * what an operator meets: the daemon refuses to start, with a message naming the file and the cause,
 * the port never answers, spar.db (and spar.db-wal) is byte for byte what it was (never a new empty
 * database), and `spar doctor` fails the same way. A torn WAL tail (damage in the last commit only,
 * what a power cut leaves) is still accepted, as SQLite accepts it.
 * A flipped page inside spar.db is test/e2e/store-corruption.test.ts's case (the daemon starts and
 * reports it), not repeated here.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  cpSync,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

const ENV = { OPENAI_API_KEY: "sk-test-secret-0000" };

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** XORs one byte of `path` at `offset`. */
function flipByte(path: string, offset: number): void {
  const fd = openSync(path, "r+");
  try {
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, offset);
    byte[0] = (byte[0] ?? 0) ^ 0x5a;
    writeSync(fd, byte, 0, 1, offset);
  } finally {
    closeSync(fd);
  }
}

/** Whether anything accepts a TCP connection on the port. */
function answers(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      done(true);
    });
    socket.once("error", () => done(false));
  });
}

interface Attempt {
  code: number | null;
  output: string;
  /** Whether the port answered at any moment while the attempt ran. */
  listened: boolean;
}

/** Runs `spar start` and waits for it to exit (or to listen, which a damaged home must never reach). */
function attemptStart(home: string, port: number, env: NodeJS.ProcessEnv = {}): Promise<Attempt> {
  return new Promise((done) => {
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(SPAR_|OPENAI_)/.test(k) && k !== "NODE_OPTIONS"),
    );
    const child = spawn(process.execPath, [SPAR_BIN, "start"], {
      env: { ...clean, ...ENV, SPAR_HOME: home, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    let listened = false;
    child.stdout.on("data", (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      output += d.toString();
    });
    const probe = setInterval(() => {
      void answers(port).then((up) => {
        listened ||= up;
      });
    }, 25);
    const limit = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("exit", (code) => {
      clearInterval(probe);
      clearTimeout(limit);
      void answers(port).then((up) => done({ code, output, listened: listened || up }));
    });
  });
}

interface DamageCase {
  name: string;
  /** The home to damage a copy of: `golden` (stopped cleanly, no WAL) or `wal` (killed with commits in its WAL). */
  from?: "golden" | "wal";
  damage(home: string): void;
  env?: NodeJS.ProcessEnv;
  /** What the start-up message and doctor's line must both say. */
  says: (home: string) => string[];
}

const CASES: DamageCase[] = [
  {
    name: "a flipped byte in the salt file",
    damage: (home) => flipByte(join(home, "spar.db.salt"), 7),
    // The salt carries no checksum: a changed one derives another key, which fails as a wrong one.
    says: (home) => [
      `cannot decrypt ${join(home, "spar.db")}`,
      join(home, "spar.db.salt"),
      "STORE_KEY_INVALID",
    ],
  },
  {
    name: "a salt file cut short",
    damage: (home) => truncateSync(join(home, "spar.db.salt"), 9),
    says: (home) => [`${join(home, "spar.db.salt")} holds 9 bytes, expected 16`, "STORE_KEY_INVALID"],
  },
  {
    name: "a wrong SPAR_MASTER_KEY",
    damage: () => {},
    env: { SPAR_MASTER_KEY: randomBytes(32).toString("hex") },
    says: (home) => [`cannot decrypt ${join(home, "spar.db")}`, "SPAR_MASTER_KEY", "STORE_KEY_INVALID"],
  },
  {
    name: "a wrong master.key",
    damage: (home) => writeFileSync(join(home, "master.key"), Buffer.alloc(32, 7), { mode: 0o600 }),
    says: (home) => [
      `cannot decrypt ${join(home, "spar.db")}`,
      join(home, "master.key"),
      "STORE_KEY_INVALID",
    ],
  },
  {
    name: "spar.db truncated to half a page",
    damage: (home) => truncateSync(join(home, "spar.db"), 2048),
    // Half of page 1 cannot be decrypted: to SQLCipher that is a wrong key or a damaged file alike.
    says: (home) => [`cannot decrypt ${join(home, "spar.db")}`, "A damaged salt file", "STORE_KEY_INVALID"],
  },
  {
    name: "spar.db truncated to half its pages",
    damage: (home) =>
      truncateSync(join(home, "spar.db"), Math.floor(statSync(join(home, "spar.db")).size / 8192) * 4096),
    says: (home) => [`the database ${join(home, "spar.db")} is damaged`, "STORE_CORRUPT"],
  },
  {
    name: "a flipped byte in the first WAL frame, with later commits",
    from: "wal",
    // The first frame's page, past the 32-byte WAL header and the 24-byte frame header.
    damage: (home) => flipByte(join(home, "spar.db-wal"), 32 + 24 + 200),
    says: (home) => [
      `its write-ahead log ${join(home, "spar.db-wal")} is damaged: frame 1`,
      "fails its checksum",
      "STORE_CORRUPT",
    ],
  },
  {
    name: "spar.db truncated to nothing",
    damage: (home) => truncateSync(join(home, "spar.db"), 0),
    says: (home) => [
      `the database ${join(home, "spar.db")} is damaged (it is empty: 0 bytes)`,
      "STORE_CORRUPT",
    ],
  },
];

/** Every message in the `spar` fighter's bouts, through the API. */
async function countMessages(d: Pick<TestDaemon, "request">): Promise<number> {
  const bouts = await d.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/spar/bouts");
  let n = 0;
  for (const b of bouts.body.bouts) {
    n += (await d.request<{ messages: unknown[] }>("GET", `/api/v1/bouts/${b.id}/messages`)).body.messages
      .length;
  }
  return n;
}

describe("corruption and wrong keys at start", () => {
  let fake: FakeOpenAI;
  let golden: string;
  /** golden plus two messages, killed with -9: its WAL holds the commits since the last checkpoint. */
  let walGolden: string;
  let counts: { checkpointed: number; acknowledged: number };
  let port: number;
  const homes: string[] = [];
  let detected = 0;
  let total = 0;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    golden = tempHome();
    port = await freePort();
    writeConfig(golden, port, fake.url, "\n[creed]\nreflect = false\n");
    const daemon = await startDaemon(golden, port);
    for (let i = 0; i < 3; i++) {
      expect(
        (await daemon.request("POST", "/api/v1/fighters/spar/message", { message: `note ${i}` })).status,
      ).toBe(200);
    }
    expect(await daemon.stop()).toBe(0);
    expect(existsSync(join(golden, "spar.db-wal"))).toBe(false);

    walGolden = tempHome();
    cpSync(golden, walGolden, { recursive: true });
    const killed = await startDaemon(walGolden, port);
    const checkpointed = await countMessages(killed);
    for (let i = 0; i < 2; i++) {
      expect(
        (await killed.request("POST", "/api/v1/fighters/spar/message", { message: `late ${i}` })).status,
      ).toBe(200);
    }
    counts = { checkpointed, acknowledged: await countMessages(killed) };
    killed.process.kill("SIGKILL");
    await new Promise((done) => killed.process.once("exit", done));
    expect(statSync(join(walGolden, "spar.db-wal")).size).toBeGreaterThan(32);
  }, 60_000);

  afterAll(async () => {
    await fake?.close();
    for (const home of [golden, walGolden, ...homes]) if (home) removeHome(home);
    console.log(`corruption: ${detected}/${total} cases detected`);
  });

  const copyOf = (from: string) => {
    const home = tempHome();
    homes.push(home);
    cpSync(from, home, { recursive: true });
    return home;
  };
  /** Size and hash of spar.db and, if there is one, spar.db-wal. */
  const fingerprint = (home: string) =>
    ["spar.db", "spar.db-wal"]
      .map((name) => join(home, name))
      .filter((path) => existsSync(path))
      .map((path) => ({ path, size: statSync(path).size, hash: sha256(path) }));

  for (const c of CASES) {
    it(`refuses to start on ${c.name}, naming the file and the cause, and doctor fails the same way`, async () => {
      total++;
      const home = copyOf(c.from === "wal" ? walGolden : golden);
      c.damage(home);
      const before = fingerprint(home);

      const attempt = await attemptStart(home, port, c.env);
      expect(attempt.listened).toBe(false);
      expect(attempt.code).not.toBe(0);
      for (const words of c.says(home)) expect(attempt.output).toContain(words);
      expect(attempt.output).not.toContain(ENV.OPENAI_API_KEY);
      // Never a new empty database over the old one: the files are as the damage left them.
      expect(fingerprint(home)).toEqual(before);

      const doctor = await runCli(home, ["doctor"], { ...ENV, ...c.env });
      expect(doctor.code).toBe(1);
      const line = doctor.stdout.split("\n").find((l) => l.includes("FAIL database:")) ?? "";
      for (const words of c.says(home).filter((w) => w !== "STORE_KEY_INVALID"))
        expect(line).toContain(words);
      expect(fingerprint(home)).toEqual(before);
      detected++;
    }, 60_000);
  }

  /**
   * A torn tail is not damage: a power cut can tear only the commit being written, the last one, and
   * SQLite's recovery drops it, as it must (https://sqlite.org/walformat.html, "WAL recovery"). The
   * daemon starts, nothing is half-applied, and only what the last commit held is missing.
   */
  const TORN: { name: string; tear(wal: string): void }[] = [
    { name: "its last frame cut in half", tear: (wal) => truncateSync(wal, statSync(wal).size - 2048) },
    {
      name: "a flipped byte in its last frame",
      tear: (wal) => flipByte(wal, statSync(wal).size - 100),
    },
  ];
  for (const t of TORN) {
    it(`accepts a WAL with ${t.name}, as SQLite does: the last commit is dropped, nothing else`, async () => {
      const home = copyOf(walGolden);
      t.tear(join(home, "spar.db-wal"));
      const again = await startDaemon(home, port);
      try {
        expect((await again.request("GET", "/api/v1/health")).status).toBe(200);
        const after = await countMessages(again);
        expect(after).toBeGreaterThanOrEqual(counts.checkpointed);
        expect(after).toBeLessThanOrEqual(counts.acknowledged);
        console.log(
          `corruption: a WAL with ${t.name} is accepted as a torn tail: ${counts.acknowledged - after} of ${counts.acknowledged} messages dropped with the last commit`,
        );
      } finally {
        await again.stop();
      }
    }, 60_000);
  }
});
