/**
 * The WAL check against real logs written by the encrypted connection (SQLCipher pages, plain frame
 * headers): a clean log, a torn tail (the last frame cut or flipped) and no log are fine; a flipped
 * byte with whole commits after it, and a broken header with frames after it, are damage.
 */
import {
  closeSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { keyConnection } from "./cipher.js";
import { openRetained } from "./retain.js";
import { inspectWal } from "./wal-check.js";

const dir = mkdtempSync(join(tmpdir(), "spar-wal-check-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A database with `commits` commits, all still in its WAL (no checkpoint); the connection is left open. */
function databaseWithWal(name: string, commits: number): string {
  const path = join(dir, name);
  const db = openRetained(path, {});
  keyConnection(db, Buffer.from(`x'${"ab".repeat(32)}'`));
  db.exec(
    "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)",
  );
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  for (let i = 0; i < commits; i++) insert.run(`row ${i} ${"x".repeat(300)}`);
  return path;
}

function flip(path: string, offset: number): void {
  const fd = openSync(path, "r+");
  const byte = Buffer.alloc(1);
  readSync(fd, byte, 0, 1, offset);
  byte[0] = (byte[0] ?? 0) ^ 0x5a;
  writeSync(fd, byte, 0, 1, offset);
  closeSync(fd);
}

const FRAME = 24 + 4096;

describe("inspectWal", () => {
  it("finds nothing wrong without a log, or in a clean one", () => {
    expect(inspectWal(join(dir, "absent.db"))).toEqual({ status: "ok" });
    expect(inspectWal(databaseWithWal("clean.db", 5))).toEqual({ status: "ok" });
  });

  it("reports a flipped byte followed by whole commits, naming the log and the frame", () => {
    const path = databaseWithWal("flipped.db", 5);
    flip(`${path}-wal`, 32 + FRAME + 24 + 100); // the second frame's page
    const verdict = inspectWal(path);
    expect(verdict.status).toBe("damaged");
    expect(verdict.status === "damaged" && verdict.reason).toContain(`${path}-wal is damaged: frame 2 (page`);
  });

  it("accepts a torn tail: the last frame cut short, or flipped", () => {
    const cut = databaseWithWal("cut.db", 5);
    truncateSync(`${cut}-wal`, statSync(`${cut}-wal`).size - 1000);
    expect(inspectWal(cut)).toEqual({ status: "ok" });
    const torn = databaseWithWal("torn.db", 5);
    flip(`${torn}-wal`, statSync(`${torn}-wal`).size - 10);
    expect(inspectWal(torn)).toEqual({ status: "ok" });
  });

  it("reports a broken header with frames after it, and accepts a header torn on its own", () => {
    const path = databaseWithWal("header.db", 3);
    flip(`${path}-wal`, 17); // salt-1: the header's checksum no longer matches
    const verdict = inspectWal(path);
    expect(verdict.status === "damaged" && verdict.reason).toContain("the log's header fails its check");
    const bare = databaseWithWal("bare.db", 3);
    truncateSync(`${bare}-wal`, 32);
    flip(`${bare}-wal`, 17);
    expect(inspectWal(bare)).toEqual({ status: "ok" });
  });
});
