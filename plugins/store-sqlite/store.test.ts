import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3-multiple-ciphers";
import { afterAll, describe, expect, it } from "vitest";
import type { FighterRow, Store } from "../../sdk/index.js";
import { pluginData, storeFighters } from "../../test/helpers/plugin-data.js";
import { type CreedDocument, createIdentityRecords } from "../identity-creed/records.js";
import { createKnowledgeGraph } from "../moves-knowledge/graph.js";
import { createMemories } from "../moves-memory/memories.js";
import { DB_FILE, openSqliteStore, SALT_FILE } from "./store.js";

const PLUGINS = join(import.meta.dirname, "..");

// Every open derives an Argon2id key (~300 ms), so the suites below share opens where they can.
const SECRET = "correct horse battery staple";
const OTHER_SECRET = "incorrect donkey";
const MARKER = "zebra-marmalade-7731";

const homes: string[] = [];
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-store-"));
  homes.push(home);
  return home;
}
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function open(home: string, secret = SECRET): Promise<Store> {
  return openSqliteStore({ home, masterSecret: Buffer.from(secret) });
}

let clock = Date.parse("2026-01-01T00:00:00Z");
function fighter(name: string): FighterRow {
  clock += 1000;
  return {
    id: `id-${name}`,
    name,
    manifest: { name, description: `${name} fights`, system_prompt: "Be brief." },
    created_at: new Date(clock).toISOString(),
  };
}

function creed(identity: string): CreedDocument {
  return {
    identity,
    traits: ["curious"],
    directives: ["be brief"],
    observations: [{ text: "likes tea", confidence: 0.5, seen: 2, last_seen: "2026-01-02T00:00:00.000Z" }],
    counters: { bouts: 1, conversations: 2, messages: 3 },
    updated_at: "2026-01-02T00:00:00.000Z",
  };
}

/** identity-creed's records (a plugin's collections) over the store, as its `api.data` holds them. */
function identity(store: Store) {
  return createIdentityRecords(pluginData(store, join(PLUGINS, "identity-creed")));
}

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** The bytes of the database and its WAL, whichever exist. */
function dbBytes(home: string): Buffer {
  const files = [DB_FILE, `${DB_FILE}-wal`].map((f) => join(home, f)).filter((p) => existsSync(p));
  return Buffer.concat(files.map((p) => readFileSync(p)));
}

async function expectCode(promise: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toMatchObject({ name: "SparError", code });
  if (message) expect((err as Error).message).toMatch(message);
}

describe("store-sqlite lifecycle", () => {
  const home = tempHome();
  const ada = fighter("ada");
  const bob = fighter("bob");
  let boutId = "";

  it("creates spar.db and a 16-byte 0600 salt, and writes to every table", async () => {
    const store = await open(home);
    await store.fighters.insert(ada);
    await store.fighters.insert(bob);
    const { turn, bout } = await store.turns.begin({
      fighter_id: ada.id,
      user: { role: "user", content: `remember ${MARKER}` },
      idempotency: { key: `key-${MARKER}`, request_hash: MARKER },
    });
    boutId = bout.id;
    await store.turns.append(turn.id, [
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "call-1", name: "remember", arguments: { text: MARKER } }],
      },
    ]);
    await store.turns.finish(turn.id, {
      status: "completed",
      messages: [
        { role: "tool", tool_call_id: "call-1", name: "remember", content: "ok" },
        { role: "assistant", content: `Done: ${MARKER}` },
      ],
      usage: { input_tokens: 3, output_tokens: 2 },
      iterations: 2,
      model: MARKER,
      reply: { ok: true, result: { text: `Done: ${MARKER}` } },
    });
    await store.usage.record({
      fighter_id: ada.id,
      bout_id: bout.id,
      turn_id: turn.id,
      origin: "user",
      provider: "openai",
      model: MARKER,
      at: new Date().toISOString(),
      input_tokens: 3,
      output_tokens: 2,
      cached_tokens: 0,
      cache_write_tokens: 0,
      cost_micros: 2,
      currency: "USD",
    });
    // Plugins' collections are in the same encrypted file.
    await createMemories(pluginData(store, join(PLUGINS, "moves-memory")), storeFighters(store)).put(
      ada.id,
      "secret",
      MARKER,
    );
    await store.messages.compact(bout.id, 1, `summary of ${MARKER}`);
    await identity(store).creeds.put("ada", creed(MARKER));
    await identity(store).relationships.record(
      "ada",
      { with: "bob", kind: "fighter" },
      MARKER,
      "2026-01-03T00:00:00.000Z",
    );
    await createKnowledgeGraph(pluginData(store, join(PLUGINS, "moves-knowledge")), storeFighters(store)).add(
      ada.id,
      [{ name: MARKER, type: "word" }],
      [{ from: MARKER, to: "bob", type: "said" }],
    );

    // The WAL is live while the store is open: neither file may hold the plaintext.
    expect(dbBytes(home).includes(MARKER)).toBe(false);
    await store.close();
    await store.close();

    const salt = join(home, SALT_FILE);
    expect(readFileSync(salt)).toHaveLength(16);
    if (process.platform !== "win32") {
      expect(statSync(salt).mode & 0o777).toBe(0o600);
      expect(statSync(join(home, DB_FILE)).mode & 0o777).toBe(0o600);
    }
  });

  it("leaves no plaintext on disk after close", () => {
    const bytes = dbBytes(home);
    expect(bytes.length).toBeGreaterThan(0);
    expect(bytes.includes(MARKER)).toBe(false);
    for (const table of ["fighters", "collection_rows", "bout_summaries", "turns", "idempotency"]) {
      expect(bytes.includes(table)).toBe(false);
    }
  });

  it("refuses a different master secret with STORE_KEY_INVALID and leaves the files as they were", async () => {
    const before = sha256(join(home, DB_FILE));
    const files = readdirSync(home).sort();
    await expectCode(open(home, OTHER_SECRET), "STORE_KEY_INVALID", /master\.key.*SPAR_MASTER_KEY/s);
    expect(sha256(join(home, DB_FILE))).toBe(before);
    expect(readdirSync(home).sort()).toEqual(files);
  });

  // What survives a reopen is the contract suite's business; here, that the refused key harmed nothing.
  it("still opens with the right secret afterwards, its data intact", async () => {
    const store = await open(home);
    try {
      expect(await store.fighters.list()).toEqual([ada, bob]);
      expect((await store.messages.list(boutId)).map((m) => m.content)).toContain(`Done: ${MARKER}`);
      expect(await identity(store).creeds.get("ada")).toEqual(creed(MARKER));
    } finally {
      await store.close();
    }
  });
});

describe("store-sqlite refuses to open", () => {
  it("an existing database whose salt is missing, without touching it", async () => {
    const home = tempHome();
    writeFileSync(join(home, DB_FILE), "not empty");
    await expectCode(open(home), "STORE_KEY_INVALID", /salt/);
    expect(readFileSync(join(home, DB_FILE), "utf8")).toBe("not empty");
    expect(existsSync(join(home, SALT_FILE))).toBe(false);
  });

  it("a plaintext SQLite database (STORE_FAILED) and garbage (STORE_KEY_INVALID), unchanged", async () => {
    const plain = tempHome();
    const garbage = tempHome();
    const plainDb = new Database(join(plain, DB_FILE));
    plainDb.exec("CREATE TABLE t (x TEXT)");
    plainDb.close();
    writeFileSync(join(garbage, DB_FILE), Buffer.alloc(8192, 7));
    for (const home of [plain, garbage]) writeFileSync(join(home, SALT_FILE), Buffer.alloc(16, 1));
    const before = [sha256(join(plain, DB_FILE)), sha256(join(garbage, DB_FILE))];

    await Promise.all([
      expectCode(open(plain), "STORE_FAILED", /unencrypted/),
      expectCode(open(garbage), "STORE_KEY_INVALID"),
    ]);
    expect([sha256(join(plain, DB_FILE)), sha256(join(garbage, DB_FILE))]).toEqual(before);
  });
});
