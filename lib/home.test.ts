import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isSparError } from "../sdk/errors.js";
import { inspectMasterSecret, readMasterSecret, withDotEnv } from "./home.js";

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

function home(files: Record<string, string | Buffer> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "spar-home-"));
  homes.push(dir);
  for (const [name, data] of Object.entries(files)) writeFileSync(join(dir, name), data, { mode: 0o600 });
  return dir;
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (isSparError(err, "STORE_KEY_INVALID")) return err.message;
    throw err;
  }
  throw new Error("expected STORE_KEY_INVALID");
}

const HEX = randomBytes(32).toString("hex");

describe("readMasterSecret", () => {
  it("refuses a weak secret for a new database, naming the source and the fix", () => {
    const fresh = home({ "master.key": "" });
    expect(refusal(() => readMasterSecret(fresh, {}))).toBe(
      `refusing to create a database with a weak master secret: ${join(fresh, "master.key")} carries 0 bytes, ` +
        "fewer than the 32 it needs (32 random bytes, or 64 hex or 44 base64 characters). " +
        `Fix: delete ${join(fresh, "master.key")} and run spar init, which writes 32 random bytes`,
    );
    const message = refusal(() => readMasterSecret(home(), { SPAR_MASTER_KEY: "a" }));
    expect(message).toMatch(
      /^refusing to create a database with a weak master secret: SPAR_MASTER_KEY carries 1 byte/,
    );
    expect(message).toContain("openssl rand -hex 32");
  });

  it("returns the bytes as read, unchanged, for the key derivation", () => {
    expect(readMasterSecret(home(), { SPAR_MASTER_KEY: HEX })).toEqual(Buffer.from(HEX, "utf8"));
    const file = Buffer.from(`${HEX}\n`);
    expect(readMasterSecret(home({ "master.key": file }), {})).toEqual(file);
  });

  it("still opens a database an older Spar created with a weak secret", () => {
    const older = home({ "master.key": "k", "spar.db": "…" });
    expect(readMasterSecret(older, {})).toEqual(Buffer.from("k"));
    expect(inspectMasterSecret(older, {})).toEqual({
      source: join(older, "master.key"),
      strength: { encoding: "raw", bytes: 1, repeated: true },
      database_exists: true,
    });
  });

  it("prefers SPAR_MASTER_KEY to the file, in the check as in the key", () => {
    const both = home({ "master.key": "short" });
    expect(readMasterSecret(both, { SPAR_MASTER_KEY: HEX })).toEqual(Buffer.from(HEX));
    expect(inspectMasterSecret(both, { SPAR_MASTER_KEY: HEX })).toMatchObject({
      source: "SPAR_MASTER_KEY",
      strength: { encoding: "hex", bytes: 32 },
    });
    expect(inspectMasterSecret(home(), {})).toBeUndefined();
  });
});

describe("withDotEnv", () => {
  it("puts .env beneath the environment in a new object, and leaves process.env alone", () => {
    const dir = home({ ".env": "DOTENV_ONLY_KEY=from-dotenv\nSHARED_NAME=from-dotenv\n" });
    const env = withDotEnv(dir, { SHARED_NAME: "from-env", UNSET: undefined });
    expect(env).toEqual({ DOTENV_ONLY_KEY: "from-dotenv", SHARED_NAME: "from-env" });
    expect(Object.isFrozen(env)).toBe(true);
    expect(withDotEnv(dir).DOTENV_ONLY_KEY).toBe("from-dotenv");
    expect(process.env.DOTENV_ONLY_KEY).toBeUndefined();
  });

  it("is the environment alone without a .env", () => {
    expect(withDotEnv(home(), { A: "1" })).toEqual({ A: "1" });
  });
});
