/**
 * `Store.backup` on the real encrypted store: the snapshot is encrypted with the same key (it opens
 * with the master secret and the salt, its bytes hold no plaintext), owner-only, consistent while
 * writes run, and refuses a destination it must not touch.
 */

import { createHash } from "node:crypto";
import {
  copyFileSync,
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
import type { FighterRow, Store } from "../../sdk/index.js";
import { readBackupManifest } from "../../sdk/kits/store.js";
import { DB_FILE, openSqliteStore, SALT_FILE } from "./store.js";

// The integrity check runs in a worker thread, which needs the built module (as corruption.test.ts).
const BUILT_WORKER = new URL("../../dist/plugins/store-sqlite/integrity-worker.js", import.meta.url);
const SECRET = Buffer.from("backup test secret, long enough");
const MARKER = "quokka-persimmon-5521";

const homes: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "spar-backup-"));
  homes.push(dir);
  return dir;
}

let home = "";
let store: Store;
const ada: FighterRow = {
  id: "id-ada",
  name: "ada",
  manifest: { name: "ada", description: "ada fights", system_prompt: "Be brief." },
  created_at: "2026-01-01T00:00:00.000Z",
};

beforeAll(async () => {
  home = tempDir();
  store = await openSqliteStore({ home, masterSecret: SECRET });
  await store.fighters.insert(ada);
});
afterAll(async () => {
  await store.close();
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
});

/** One whole turn in `bout_id` (a new bout without it): begin, an answer, finish: completed. Returns the bout. */
async function turn(content: string, bout_id?: string): Promise<string> {
  const { turn } = await store.turns.begin({ fighter_id: ada.id, bout_id, user: { role: "user", content } });
  await store.turns.finish(turn.id, {
    status: "completed",
    messages: [{ role: "assistant", content: `re: ${content}` }],
    usage: { input_tokens: 1, output_tokens: 1 },
    iterations: 1,
  });
  return turn.bout_id;
}

/** Opens a snapshot as a store of its own: a data dir with it as spar.db and the original salt. */
async function openSnapshot(snapshot: string, secret = SECRET): Promise<Store> {
  const copy = tempDir();
  copyFileSync(snapshot, join(copy, DB_FILE));
  copyFileSync(join(home, SALT_FILE), join(copy, SALT_FILE));
  return openSqliteStore({ home: copy, masterSecret: secret }, { integrityWorker: BUILT_WORKER });
}

describe("Store.backup", () => {
  it("writes an encrypted, owner-only snapshot that opens with the same key, while writes run", async () => {
    const boutId = await turn(`first ${MARKER}`);
    const dir = tempDir();
    const destination = join(dir, "snapshot.db");
    // Writes in flight on both sides of the call: the backup waits for their batch to commit.
    const writes = Array.from({ length: 20 }, (_, i) => turn(`concurrent ${i} ${MARKER}`, boutId));
    const result = await store.backup(destination);
    await Promise.all(writes);

    expect(result.schema_version).toBeGreaterThan(0);
    expect(result.bytes).toBe(statSync(destination).size);
    expect(statSync(destination).mode & 0o777).toBe(0o600);
    expect(readFileSync(destination).includes(MARKER)).toBe(false);
    expect(readFileSync(destination).subarray(0, 15).toString("latin1")).not.toBe("SQLite format 3");
    // Its manifest beside it, as spar restore reads it: the checksum, the schema, the salt.
    expect(readdirSync(dir).sort()).toEqual(["snapshot.db", "snapshot.db.manifest.json"]);
    expect(readBackupManifest(destination)).toMatchObject({
      format: "spar-backup",
      bytes: result.bytes,
      schema_version: result.schema_version,
      sha256: createHash("sha256").update(readFileSync(destination)).digest("hex"),
      salt: readFileSync(join(home, SALT_FILE)).toString("hex"),
    });
    expect(statSync(`${destination}.manifest.json`).mode & 0o777).toBe(0o600);

    const copy = await openSnapshot(destination);
    try {
      expect(await copy.integrity()).toMatchObject({ status: "ok", checked: true });
      expect((await copy.fighters.list()).map((f) => f.name)).toEqual(["ada"]);
      const messages = await copy.messages.list(boutId);
      expect(messages[0]?.content).toBe(`first ${MARKER}`);
      // Consistent: every message belongs to a turn the snapshot records, a completed turn has its
      // question and its answer, a running one (begun, not finished when the snapshot ran) its question.
      const turns = new Map((await copy.turns.list(boutId)).map((t) => [t.id, t]));
      for (const m of messages) expect(turns.has(m.turn_id ?? "")).toBe(true);
      for (const t of turns.values()) {
        const own = messages.filter((m) => m.turn_id === t.id).length;
        expect(own).toBe(t.status === "completed" ? 2 : 1);
      }
    } finally {
      await copy.close();
    }
  });

  it("does not open with another master secret", async () => {
    const destination = join(tempDir(), "snapshot.db");
    await store.backup(destination);
    await expect(openSnapshot(destination, Buffer.from("another secret entirely"))).rejects.toMatchObject({
      code: "STORE_KEY_INVALID",
    });
  });

  it("refuses a destination that exists, a relative path and a missing folder", async () => {
    const dir = tempDir();
    const taken = join(dir, "taken.db");
    writeFileSync(taken, "keep me");
    await expect(store.backup(taken)).rejects.toMatchObject({ code: "CONFLICT" });
    expect(readFileSync(taken, "utf8")).toBe("keep me");
    // A manifest already there is not overwritten either, and no snapshot is written without one.
    writeFileSync(join(dir, "other.db.manifest.json"), "keep me too");
    await expect(store.backup(join(dir, "other.db"))).rejects.toMatchObject({ code: "CONFLICT" });
    expect(readFileSync(join(dir, "other.db.manifest.json"), "utf8")).toBe("keep me too");
    rmSync(join(dir, "other.db.manifest.json"));
    await expect(store.backup("relative.db")).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    await expect(store.backup(join(dir, "missing", "x.db"))).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    expect(readdirSync(dir)).toEqual(["taken.db"]);
  });
});
