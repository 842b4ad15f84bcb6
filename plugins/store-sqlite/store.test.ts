import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3-multiple-ciphers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage, FighterRow, Store } from "../../kernel/sdk.js";
import { deriveKey, rawKeyLiteral } from "./key.js";
import { MIGRATIONS, type Migration, migrate } from "./migrations.js";
import { DB_FILE, openSqliteStore, SALT_FILE } from "./store.js";

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

const turn: ChatMessage[] = [
  { role: "user", content: `remember ${MARKER}` },
  {
    role: "assistant",
    content: "",
    tool_calls: [{ id: "call-1", name: "remember", arguments: { text: MARKER } }],
  },
  { role: "tool", tool_call_id: "call-1", name: "remember", content: "failed", is_error: true },
  { role: "tool", tool_call_id: "call-1", name: "remember", content: "ok", is_error: false },
  { role: "assistant", content: "Done.", tool_calls: [] },
];

describe("store-sqlite lifecycle", () => {
  const home = tempHome();
  const ada = fighter("ada");
  const bob = fighter("bob");
  let boutId = "";

  it("creates spar.db and a 16-byte 0600 salt, and writes fighters, bouts, messages, memories", async () => {
    const store = await open(home);
    store.fighters.insert(ada);
    store.fighters.insert(bob);
    const bout = store.bouts.create(ada.id);
    boutId = bout.id;
    const stored = store.messages.append(bout.id, turn);
    store.memories.put(ada.id, "secret", MARKER);

    expect(stored.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(stored.map(({ id, bout_id, seq, created_at, ...message }) => message)).toEqual([
      turn[0],
      turn[1],
      turn[2],
      { role: "tool", tool_call_id: "call-1", name: "remember", content: "ok" },
      { role: "assistant", content: "Done." },
    ]);
    // The WAL is live while the store is open: neither file may hold the plaintext.
    expect(dbBytes(home).includes(MARKER)).toBe(false);
    store.close();
    store.close();

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
    expect(bytes.includes("fighters")).toBe(false);
  });

  it("refuses a different master secret with STORE_KEY_INVALID and leaves the files as they were", async () => {
    const before = sha256(join(home, DB_FILE));
    const files = readdirSync(home).sort();
    await expectCode(open(home, OTHER_SECRET), "STORE_KEY_INVALID", /master\.key.*SPAR_MASTER_KEY/s);
    expect(sha256(join(home, DB_FILE))).toBe(before);
    expect(readdirSync(home).sort()).toEqual(files);
  });

  it("reads everything back after a reopen with the right secret", async () => {
    const store = await open(home);
    try {
      expect(store.fighters.list()).toEqual([ada, bob]);
      expect(store.fighters.getByName("bob")).toEqual(bob);
      const bout = store.bouts.get(boutId);
      expect(bout).toMatchObject({ id: boutId, fighter_id: ada.id, message_count: 5 });
      expect(store.bouts.latest(ada.id)).toEqual(bout);
      const messages = store.messages.list(boutId);
      expect(messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(messages[1]).toMatchObject(turn[1] as object);
      expect(store.memories.search(ada.id, MARKER, 5)).toMatchObject([{ key: "secret", value: MARKER }]);
      // Appending after a reopen continues the sequence.
      expect(store.messages.append(boutId, [{ role: "user", content: "again" }])[0]?.seq).toBe(6);
    } finally {
      store.close();
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

  it("a database whose recorded migration checksum differs from the code's (STORE_FAILED)", async () => {
    const home = tempHome();
    (await open(home)).close();
    // Tamper with the right key, as someone editing the schema by hand would.
    const salt = readFileSync(join(home, SALT_FILE));
    const literal = rawKeyLiteral(await deriveKey(Buffer.from(SECRET), salt));
    const db = new Database(join(home, DB_FILE), { fileMustExist: true });
    db.pragma("cipher = 'sqlcipher'");
    db.pragma("legacy = 4");
    db.key(literal);
    db.prepare("UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1").run();
    db.close();

    await expectCode(open(home), "STORE_FAILED", /migration 1 \(fighters-bouts-messages-memories\)/);
  });
});

describe("migrate", () => {
  const plainDb = () => new Database(":memory:");

  it("records each migration with its checksum and applies nothing twice", () => {
    const db = plainDb();
    expect(migrate(db, "mem")).toEqual([1]);
    expect(migrate(db, "mem")).toEqual([]);
    const row = db.prepare("SELECT version, name, checksum FROM schema_migrations").get();
    expect(row).toMatchObject({ version: 1, name: MIGRATIONS[0]?.name });
    expect((row as { checksum: string }).checksum).toMatch(/^[0-9a-f]{64}$/);
    db.close();
  });

  it("refuses a database written by a newer Spar", () => {
    const db = plainDb();
    const newer: Migration[] = [
      ...MIGRATIONS,
      { version: 2, name: "future", sql: "CREATE TABLE future (x)" },
    ];
    migrate(db, "mem", newer);
    expect(() => migrate(db, "mem")).toThrow(/written by a newer Spar/);
    db.close();
  });

  it("applies pending migrations all or nothing", () => {
    const db = plainDb();
    const broken: Migration[] = [...MIGRATIONS, { version: 2, name: "broken", sql: "CREATE TABLE nope (" }];
    expect(() => migrate(db, "mem", broken)).toThrow();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'fighters'").get()).toBeUndefined();
    db.close();
  });
});

describe("store-sqlite operations", () => {
  let store: Store;
  beforeAll(async () => {
    store = await open(tempHome());
  });
  afterAll(() => store.close());

  it("lists live fighters in creation order; killed ones leave, their bouts and messages stay", () => {
    const [cy, di] = [fighter("cy"), fighter("di")];
    // Inserted out of order: list() sorts by created_at, not by insertion.
    store.fighters.insert(di);
    store.fighters.insert(cy);
    expect(store.fighters.list().map((f) => f.name)).toEqual(["cy", "di"]);
    const bout = store.bouts.create(cy.id);
    store.messages.append(bout.id, [{ role: "user", content: "hello" }]);

    expect(store.fighters.kill(cy.id)).toBe(true);
    expect(store.fighters.kill(cy.id)).toBe(false);
    expect(store.fighters.kill("nobody")).toBe(false);
    expect(store.fighters.list().map((f) => f.name)).toEqual(["di"]);
    expect(store.fighters.getByName("cy")).toBeUndefined();
    expect(store.fighters.get(cy.id)).toBeUndefined();
    expect(store.bouts.list(cy.id)).toMatchObject([{ id: bout.id, message_count: 1 }]);
    expect(store.messages.list(bout.id)).toMatchObject([{ role: "user", content: "hello" }]);
    expect(() => store.bouts.create(cy.id)).toThrow(expect.objectContaining({ code: "FIGHTER_NOT_FOUND" }));

    // A killed fighter's name is free again; a live one's is not.
    store.fighters.insert({ ...fighter("cy"), id: "id-cy-2" });
    expect(() => store.fighters.insert({ ...fighter("cy"), id: "id-cy-3" })).toThrow(
      expect.objectContaining({ code: "CONFLICT" }),
    );
  });

  it("orders bouts by last update: latest is the one last appended to", () => {
    const eve = fighter("eve");
    store.fighters.insert(eve);
    const first = store.bouts.create(eve.id);
    const second = store.bouts.create(eve.id);
    expect(store.bouts.latest(eve.id)?.id).toBe(second.id);
    store.messages.append(first.id, [{ role: "user", content: "back to the first" }]);
    expect(store.bouts.latest(eve.id)).toMatchObject({ id: first.id, message_count: 1 });
    expect(store.bouts.list(eve.id).map((b) => b.id)).toEqual([first.id, second.id]);
    expect(store.bouts.latest("nobody")).toBeUndefined();
    expect(() => store.messages.append("no-such-bout", [])).toThrow(
      expect.objectContaining({ code: "BOUT_NOT_FOUND" }),
    );
  });

  it("appends a batch atomically: one bad message leaves the bout unchanged", () => {
    const fay = fighter("fay");
    store.fighters.insert(fay);
    const bout = store.bouts.create(fay.id);
    store.messages.append(bout.id, [{ role: "user", content: "one" }]);
    const before = store.bouts.get(bout.id);
    const bad = { role: "narrator", content: "not a role" } as unknown as ChatMessage;

    expect(() => store.messages.append(bout.id, [{ role: "user", content: "two" }, bad])).toThrow(/CHECK/);
    expect(store.bouts.get(bout.id)).toEqual(before);
    expect(store.messages.list(bout.id).map((m) => m.content)).toEqual(["one"]);
    expect(store.messages.append(bout.id, [{ role: "user", content: "two" }])[0]?.seq).toBe(2);
  });

  it("ranks memories by matching query words, ties newest first", () => {
    const gus = fighter("gus");
    const other = fighter("hal");
    store.fighters.insert(gus);
    store.fighters.insert(other);
    const coffee = store.memories.put(gus.id, "coffee", "Likes espresso in the morning");
    store.memories.put(gus.id, "tea", "Drinks green tea at night");
    store.memories.put(gus.id, "schedule", "Morning run, then coffee");
    store.memories.put(gus.id, "pets", "A cat called Espresso");
    store.memories.put(other.id, "coffee", "Never drinks coffee");
    const keys = (query: string, limit = 10) => store.memories.search(gus.id, query, limit).map((m) => m.key);

    expect(keys("COFFEE in the morning")).toEqual(["schedule", "coffee"]);
    expect(keys("espresso morning")).toEqual(["coffee", "pets", "schedule"]);
    expect(keys("espresso morning", 1)).toEqual(["coffee"]);
    expect(keys("what is the")).toEqual(["pets", "schedule", "tea", "coffee"]);
    expect(keys("", 2)).toEqual(["pets", "schedule"]);
    expect(keys("bicycle")).toEqual([]);
    expect(keys("coffee", 0)).toEqual([]);

    // put upserts by key: same id, new value, and it counts as the newest.
    const updated = store.memories.put(gus.id, "coffee", "Switched to decaf");
    expect(updated).toMatchObject({
      id: coffee.id,
      value: "Switched to decaf",
      created_at: coffee.created_at,
    });
    expect(keys("")).toEqual(["coffee", "pets", "schedule", "tea"]);
  });
});
