/**
 * Backup and restore with the real CLI and daemon: `spar backup` while the daemon runs and messages
 * are being sent (the snapshot is consistent, encrypted, checksummed), wipe, `spar restore`, start:
 * everything is back. And the refusals: a running daemon, a flipped byte, another home's snapshot
 * (another master key); and an offline backup.
 */
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deriveKey, rawKeyLiteral } from "../../plugins/store-sqlite/key.js";
import { openRetained } from "../../plugins/store-sqlite/retain.js";
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

const MARKER = "wombat-tangerine-9047";
const env = { OPENAI_API_KEY: "sk-test-secret-0000" };

interface Manifest {
  format: string;
  version: string;
  schema_version: number;
  created_at: string;
  bytes: number;
  sha256: string;
  salt: string;
}

/** The code of a `--json` failure (stdout is `{"error":{"code","message"}}`). */
function failure(result: CliResult): { code: string; message: string } {
  expect(result.code, result.stderr).not.toBe(0);
  return (JSON.parse(result.stdout) as { error: { code: string; message: string } }).error;
}

/**
 * Opens a snapshot directly, read-only, keyed from `home`'s master.key and the manifest's salt, and
 * returns what a consistency check needs: the integrity check's answer, messages without a recorded
 * turn, completed turns missing their question or answer, and the user messages.
 */
async function inspect(snapshot: string, home: string) {
  const manifest = JSON.parse(readFileSync(`${snapshot}.manifest.json`, "utf8")) as Manifest;
  const key = await deriveKey(readFileSync(join(home, "master.key")), Buffer.from(manifest.salt, "hex"));
  const db = openRetained(snapshot, { readonly: true, fileMustExist: true });
  try {
    db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
    db.key(rawKeyLiteral(key));
    const value = (sql: string) => db.prepare(sql).pluck().get();
    return {
      integrity: value("PRAGMA integrity_check"),
      orphans: value(
        "SELECT count(*) FROM messages m WHERE m.turn_id IS NULL OR NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = m.turn_id)",
      ),
      // A completed turn has its question and at least one answer; a running one at least its question.
      incomplete: value(
        `SELECT count(*) FROM turns t WHERE
           NOT EXISTS (SELECT 1 FROM messages m WHERE m.turn_id = t.id AND m.role = 'user')
           OR (t.status = 'completed' AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.turn_id = t.id AND m.role = 'assistant'))`,
      ),
      questions: db.prepare("SELECT content FROM messages WHERE role = 'user'").pluck().all() as string[],
      schema: value("SELECT max(version) FROM schema_migrations"),
    };
  } finally {
    db.close();
  }
}

describe("spar backup and spar restore", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  let backups: string;
  const snapshot = () => join(backups, "online.db");
  const sent: string[] = [];

  const say = async (fighter: string, text: string) => {
    const res = await daemon.request("POST", `/api/v1/fighters/${fighter}/message`, { message: text });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    sent.push(text);
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    backups = mkdtempSync(join(tmpdir(), "spar-backups-"));
    port = await freePort();
    writeConfig(home, port, fake.url, "\n[creed]\nreflect = false\n");
    daemon = await startDaemon(home, port);
    for (const name of ["ada", "bo", "cy"]) {
      const res = await daemon.request("POST", "/api/v1/fighters", {
        manifest: { name, description: name, system_prompt: `You are ${name}.` },
      });
      expect(res.status).toBe(201);
    }
    for (const name of ["ada", "bo", "cy"]) await say(name, `hello ${name} ${MARKER}`);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
    rmSync(backups, { recursive: true, force: true });
  });

  it("takes a consistent, encrypted snapshot while the daemon runs and messages are being sent", async () => {
    let backingUp = true;
    let firstAnswer: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => {
      firstAnswer = resolve;
    });
    // Each fighter talks without pause until the backup is done: turns begin and end throughout it.
    const talk = async (name: string) => {
      for (let i = 0; backingUp; i++) {
        await say(name, `during ${name} ${i} ${MARKER}`);
        firstAnswer();
      }
    };
    const talking = Promise.all(["ada", "bo", "cy"].map(talk));
    await answered;
    const before = sent.length;
    const result = await daemon.cli(["backup", snapshot(), "--json"]);
    const during = sent.length - before;
    backingUp = false;
    await talking;
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const printed = JSON.parse(result.stdout) as Manifest & { online: boolean; manifest: string };
    expect(printed.online).toBe(true);

    const manifest = JSON.parse(readFileSync(`${snapshot()}.manifest.json`, "utf8")) as Manifest;
    expect(manifest).toMatchObject({ format: "spar-backup", bytes: statSync(snapshot()).size });
    expect(manifest.schema_version).toBeGreaterThan(0);
    expect(Date.parse(manifest.created_at)).not.toBeNaN();
    expect(statSync(snapshot()).mode & 0o777).toBe(0o600);
    expect(readFileSync(snapshot()).includes(MARKER)).toBe(false);
    expect(readdirSync(backups).sort()).toEqual(["online.db", "online.db.manifest.json"]);

    const seen = await inspect(snapshot(), home);
    expect(seen).toMatchObject({
      integrity: "ok",
      orphans: 0,
      incomplete: 0,
      schema: manifest.schema_version,
    });
    for (const name of ["ada", "bo", "cy"]) expect(seen.questions).toContain(`hello ${name} ${MARKER}`);
    const caught = seen.questions.filter((q) => q.startsWith("during ")).length;
    console.log(
      `backup-restore: ${during} messages acknowledged while spar backup ran; the snapshot holds ${caught} ` +
        `"during" questions, ${seen.questions.length} in all, every one in a recorded turn`,
    );
  });

  it("tells the operator to keep the master key separately", async () => {
    const result = await daemon.cli(["backup", join(backups, "second.db")]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(join(home, "master.key"));
    expect(result.stdout).toContain("SPAR_MASTER_KEY");
    expect(result.stdout).toMatch(/separately/);
    // An existing destination is never overwritten.
    expect(failure(await daemon.cli(["backup", join(backups, "second.db"), "--json"])).code).toBe("CONFLICT");
  });

  it("refuses to restore while the daemon runs", async () => {
    const refused = failure(await daemon.cli(["restore", snapshot(), "--yes", "--json"]));
    expect(refused.code).toBe("CONFLICT");
    expect(refused.message).toContain("spar stop");
  });

  it("restores after a wipe: the fighters and messages are back", async () => {
    const inSnapshot = (await inspect(snapshot(), home)).questions;
    expect(await daemon.stop()).toBe(0);
    for (const file of ["spar.db", "spar.db-wal", "spar.db-shm"]) rmSync(join(home, file), { force: true });

    const restored = await runCli(home, ["restore", snapshot(), "--json"], env);
    expect(restored.code, restored.stderr + restored.stdout).toBe(0);
    expect(restored.stderr).not.toContain("FSTDEP");
    // Nothing to move aside but the salt left by the wipe.
    expect(JSON.parse(restored.stdout)).toMatchObject({ database: join(home, "spar.db") });

    daemon = await startDaemon(home, port);
    const fighters = (await daemon.request<{ fighters: { name: string }[] }>("GET", "/api/v1/fighters")).body;
    expect(fighters.fighters.map((f) => f.name)).toEqual(expect.arrayContaining(["ada", "bo", "cy"]));
    const questions: string[] = [];
    for (const name of ["ada", "bo", "cy"]) {
      const bouts = (
        await daemon.request<{ bouts: { id: string }[] }>("GET", `/api/v1/fighters/${name}/bouts`)
      ).body;
      for (const bout of bouts.bouts) {
        const res = await daemon.request<{ messages: { role: string; content: string }[] }>(
          "GET",
          `/api/v1/bouts/${bout.id}/messages`,
        );
        questions.push(...res.body.messages.filter((m) => m.role === "user").map((m) => m.content));
      }
    }
    expect(questions.sort()).toEqual([...inSnapshot].sort());
    expect(questions).toContain(`hello ada ${MARKER}`);
    // The restored database works: a new message goes through.
    await say("ada", "after the restore");
  });

  it("moves the current database aside when restoring over it, and asks for --yes", async () => {
    expect(await daemon.stop()).toBe(0);
    const unconfirmed = failure(await runCli(home, ["restore", snapshot(), "--json"], env));
    expect(unconfirmed.code).toBe("VALIDATION_FAILED");
    expect(unconfirmed.message).toContain("--yes");

    const restored = await runCli(home, ["restore", snapshot(), "--yes"], env);
    expect(restored.code, restored.stderr).toBe(0);
    const aside = readdirSync(home).filter((f) => f.startsWith("spar.db.before-restore-"));
    expect(aside.some((f) => /^spar\.db\.before-restore-\d{8}-\d{6}$/.test(f))).toBe(true);
    expect(aside.some((f) => f.endsWith(".salt"))).toBe(true);
    expect(restored.stdout).toContain("spar.db.before-restore-");
    daemon = await startDaemon(home, port);
  });

  it("refuses a snapshot with a flipped byte: the checksum names the file", async () => {
    const tampered = join(backups, "tampered.db");
    copyFileSync(snapshot(), tampered);
    copyFileSync(`${snapshot()}.manifest.json`, `${tampered}.manifest.json`);
    const bytes = readFileSync(tampered);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = (bytes[at] as number) ^ 0xff;
    writeFileSync(tampered, bytes);
    expect(await daemon.stop()).toBe(0);
    const files = readdirSync(home).sort();
    const refused = failure(await runCli(home, ["restore", tampered, "--yes", "--json"], env));
    expect(refused.code).toBe("STORE_CORRUPT");
    expect(refused.message).toContain(tampered);
    expect(readdirSync(home).sort()).toEqual(files); // nothing moved
  });

  it("refuses a snapshot whose schema is newer than this Spar's", async () => {
    const newer = join(backups, "newer.db");
    copyFileSync(snapshot(), newer);
    const manifest = JSON.parse(readFileSync(`${snapshot()}.manifest.json`, "utf8")) as Manifest;
    // As a later Spar would leave it: one more migration recorded. Re-checksummed, so only the schema is wrong.
    const key = await deriveKey(readFileSync(join(home, "master.key")), Buffer.from(manifest.salt, "hex"));
    const db = openRetained(newer, { fileMustExist: true });
    try {
      db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
      db.key(rawKeyLiteral(key));
      db.prepare(
        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (999, 'future', 'x', 'now')",
      ).run();
    } finally {
      db.close();
    }
    const sha256 = createHash("sha256").update(readFileSync(newer)).digest("hex");
    writeFileSync(`${newer}.manifest.json`, JSON.stringify({ ...manifest, sha256, schema_version: 999 }));
    const files = readdirSync(home).sort();
    const refused = failure(await runCli(home, ["restore", newer, "--yes", "--json"], env));
    expect(refused.code).toBe("STORE_FAILED");
    expect(refused.message).toContain(newer);
    expect(refused.message).toContain("newer Spar");
    expect(readdirSync(home).sort()).toEqual(files);
  });

  it("refuses a manifest that is missing or invalid", async () => {
    const bare = join(backups, "bare.db");
    copyFileSync(snapshot(), bare);
    expect(failure(await runCli(home, ["restore", bare, "--yes", "--json"], env)).code).toBe(
      "VALIDATION_FAILED",
    );
    writeFileSync(`${bare}.manifest.json`, "{not json");
    expect(failure(await runCli(home, ["restore", bare, "--yes", "--json"], env)).code).toBe(
      "VALIDATION_FAILED",
    );
  });

  it("backs up offline, and refuses another home's snapshot (another master key) with STORE_KEY_INVALID", async () => {
    const other = tempHome();
    try {
      const otherPort = await freePort();
      writeConfig(other, otherPort, fake.url, "\n[creed]\nreflect = false\n");
      const otherDaemon = await startDaemon(other, otherPort);
      expect(await otherDaemon.stop()).toBe(0);

      const offline = join(backups, "other.db");
      const made = await runCli(other, ["backup", offline, "--json"], env);
      expect(made.code, made.stderr + made.stdout).toBe(0);
      expect(JSON.parse(made.stdout)).toMatchObject({ online: false });
      expect((await inspect(offline, other)).integrity).toBe("ok");

      const before = readFileSync(join(home, "spar.db"));
      const refused = failure(await runCli(home, ["restore", offline, "--yes", "--json"], env));
      expect(refused.code).toBe("STORE_KEY_INVALID");
      expect(refused.message).toContain("another master key");
      expect(readFileSync(join(home, "spar.db")).equals(before)).toBe(true);
      expect(existsSync(join(home, "spar.db.salt"))).toBe(true);
      expect(readdirSync(home).filter((f) => f.startsWith(".restore-check-"))).toEqual([]);
    } finally {
      removeHome(other);
    }
    daemon = await startDaemon(home, port);
  });

  it("restores a backup made by POST /api/v1/store/backup: the route writes the manifest too", async () => {
    const routeMade = join(backups, "route.db");
    const made = await daemon.request<{ path: string; manifest: string; bytes: number }>(
      "POST",
      "/api/v1/store/backup",
      { path: routeMade },
    );
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({ path: routeMade, manifest: `${routeMade}.manifest.json` });
    const manifest = JSON.parse(readFileSync(`${routeMade}.manifest.json`, "utf8")) as Manifest;
    expect(manifest).toMatchObject({ format: "spar-backup", bytes: statSync(routeMade).size });
    expect(manifest.sha256).toBe(createHash("sha256").update(readFileSync(routeMade)).digest("hex"));
    expect(statSync(`${routeMade}.manifest.json`).mode & 0o777).toBe(0o600);
    // Said after the backup: the restore takes it away again.
    await say("bo", `after the route backup ${MARKER}`);
    expect(await daemon.stop()).toBe(0);

    const restored = await runCli(home, ["restore", routeMade, "--yes", "--json"], env);
    expect(restored.code, restored.stderr + restored.stdout).toBe(0);
    daemon = await startDaemon(home, port);
    const bouts = (await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/bo/bouts"))
      .body;
    const questions: string[] = [];
    for (const bout of bouts.bouts) {
      const res = await daemon.request<{ messages: { role: string; content: string }[] }>(
        "GET",
        `/api/v1/bouts/${bout.id}/messages`,
      );
      questions.push(...res.body.messages.filter((m) => m.role === "user").map((m) => m.content));
    }
    expect(questions).toContain(`hello bo ${MARKER}`);
    expect(questions).not.toContain(`after the route backup ${MARKER}`);
  });
});
