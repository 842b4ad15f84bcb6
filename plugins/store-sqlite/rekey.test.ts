/**
 * Store.rekey and the open after an interrupted rotation, on the real encrypted file: the kill -9
 * proof is test/e2e/rekey.test.ts; here each state a rotation can leave is set up exactly.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Logger } from "../../kernel/sdk.js";
import { writeNextMasterSecret } from "../../lib/home.js";
import { openSqliteStore } from "./store.js";

const BUILT_WORKER = new URL("../../dist/plugins/store-sqlite/integrity-worker.js", import.meta.url);
const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

/** A home with master.key, a database made with it and one fighter in it. */
async function homeWithData(): Promise<{ home: string; old: Buffer }> {
  const home = mkdtempSync(join(tmpdir(), "spar-rekey-"));
  homes.push(home);
  const old = randomBytes(32);
  writeFileSync(join(home, "master.key"), old, { mode: 0o600 });
  const store = await openSqliteStore({ home, masterSecret: old });
  await store.fighters.insert({
    id: "id-keeper",
    name: "keeper",
    manifest: { name: "keeper", description: "keeps", system_prompt: "Be brief." },
    created_at: "2026-01-01T00:00:00.000Z",
  });
  await store.close();
  return { home, old };
}

function collecting(into: string[]): Logger {
  return { info: () => undefined, warn: (m: string) => void into.push(m), error: () => undefined };
}

async function names(home: string, secret: Buffer, log?: Logger): Promise<string[]> {
  const store = await openSqliteStore({ home, masterSecret: secret }, { log, integrityWorker: BUILT_WORKER });
  try {
    return (await store.fighters.list()).map((f) => f.name);
  } finally {
    await store.close();
  }
}

describe("Store.rekey", () => {
  it("re-encrypts in place: the new secret opens the data, the old one is STORE_KEY_INVALID", async () => {
    const { home, old } = await homeWithData();
    const next = randomBytes(32);
    const store = await openSqliteStore({ home, masterSecret: old });
    await store.rekey(next);
    // Still usable after the rekey, and durable on its own (DELETE mode, FULL syncs).
    expect((await store.fighters.list()).map((f) => f.name)).toEqual(["keeper"]);
    await store.close();
    expect(await names(home, next)).toEqual(["keeper"]);
    await expect(openSqliteStore({ home, masterSecret: old })).rejects.toMatchObject({
      code: "STORE_KEY_INVALID",
    });
  });

  it("rolls back a rotation that never re-encrypted: master.key opens, master.key.next goes", async () => {
    const { home, old } = await homeWithData();
    writeNextMasterSecret(home, randomBytes(32));
    const warnings: string[] = [];
    expect(await names(home, old, collecting(warnings))).toEqual(["keeper"]);
    expect(existsSync(join(home, "master.key.next"))).toBe(false);
    expect(readFileSync(join(home, "master.key")).equals(old)).toBe(true);
    expect(warnings).toEqual([
      `a master key rotation (spar rekey) in ${home} was interrupted before the database was re-encrypted; ` +
        "it was rolled back: master.key is unchanged and master.key.next was removed",
    ]);
  });

  it("completes a rotation that re-encrypted: master.key.next opens and becomes master.key", async () => {
    const { home, old } = await homeWithData();
    const next = randomBytes(32);
    // As spar rekey does it: open (which settles any older rotation), write .next, rekey.
    const store = await openSqliteStore({ home, masterSecret: old });
    writeNextMasterSecret(home, next);
    await store.rekey(next);
    await store.close();
    const warnings: string[] = [];
    // The caller hands the old master.key, as the daemon would after a kill at this point.
    expect(await names(home, old, collecting(warnings))).toEqual(["keeper"]);
    expect(readFileSync(join(home, "master.key")).equals(next)).toBe(true);
    expect(["master.key.next", "master.key.old"].filter((f) => existsSync(join(home, f)))).toEqual([]);
    expect(warnings).toEqual([
      `a master key rotation (spar rekey) in ${home} had re-encrypted the database but not finished; ` +
        "it is now complete: master.key holds the new secret",
    ]);
  });

  it("leaves the files alone and says nothing when no rotation is pending", async () => {
    const { home, old } = await homeWithData();
    const warnings: string[] = [];
    expect(await names(home, old, collecting(warnings))).toEqual(["keeper"]);
    await expect(openSqliteStore({ home, masterSecret: randomBytes(32) })).rejects.toMatchObject({
      code: "STORE_KEY_INVALID",
    });
    expect(warnings).toEqual([]);
    expect(readFileSync(join(home, "master.key")).equals(old)).toBe(true);
  });
});
