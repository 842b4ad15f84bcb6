/**
 * What this store does with turns beyond the contract suite (test/contract/store.test.ts): what its
 * schema refuses, and how rows come back. Run on the synchronous data layer over an unencrypted
 * connection; encryption is store.test.ts's business, durability durability.test.ts's.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage, FighterRow, TurnEnd } from "../../sdk/index.js";
import { migrate } from "./migrations.js";
import { createSqliteStore } from "./queries.js";
import { openRetained } from "./retain.js";
import type { StoreData } from "./sync-store.js";

let home = "";
let db: Database.Database;
let data: StoreData;
let ada: FighterRow;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "spar-turns-"));
  const path = join(home, "spar.db");
  db = openRetained(path, {});
  // As store.ts sets the connection up.
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON");
  migrate(db, path);
  data = createSqliteStore(db);
  ada = {
    id: randomUUID(),
    name: "ada",
    manifest: { name: "ada", description: "", system_prompt: "" },
    created_at: "2026-01-01T00:00:00.000Z",
  };
  data.fighters.insert(ada);
});
afterAll(() => {
  data.close();
  rmSync(home, { recursive: true, force: true });
});

const said = (content: string): ChatMessage => ({ role: "assistant", content });
const bad = { role: "narrator", content: "not a role" } as unknown as ChatMessage;
const begin = (content: string, extra: { idempotency?: { key: string; request_hash: string } } = {}) =>
  data.turns.begin({ fighter_id: ada.id, user: { role: "user", content }, ...extra });
const ending = (end: Partial<TurnEnd> = {}): TurnEnd => ({
  status: "completed",
  messages: [],
  usage: { input_tokens: 0, output_tokens: 0 },
  iterations: 1,
  ...end,
});

describe("store-sqlite turns: all or nothing", () => {
  it("a step with a message the schema refuses stores none of it", () => {
    const { turn, bout } = begin("one");
    const before = data.bouts.get(bout.id);
    expect(() => data.turns.append(turn.id, [said("two"), bad])).toThrow(/CHECK/);
    expect(data.bouts.get(bout.id)).toEqual(before);
    expect(data.messages.list(bout.id).map((m) => m.content)).toEqual(["one"]);
    expect(data.turns.append(turn.id, [said("two")])[0]?.seq).toBe(2);
  });

  it("an end with a message the schema refuses leaves the turn running, unbilled and without a reply", () => {
    const key = randomUUID();
    const { turn, bout } = begin("bill me", { idempotency: { key, request_hash: "h" } });
    const end = ending({
      messages: [said("fine"), bad],
      usage: { input_tokens: 5, output_tokens: 5 },
      reply: { ok: true, result: "fine" },
    });
    expect(() => data.turns.finish(turn.id, end)).toThrow(/CHECK/);
    expect(data.turns.get(turn.id)).toMatchObject({ status: "running" });
    expect(data.messages.list(bout.id)).toHaveLength(1);
    expect(data.usage.summary(ada.id)).toEqual([]);
    expect(data.idempotency.get(key)?.reply).toBeUndefined();
  });
});

describe("store-sqlite turns: message rows", () => {
  it("keeps optional fields only when they carry something", () => {
    const { turn } = begin("tools");
    const stored = data.turns.append(turn.id, [
      { role: "assistant", content: "none", tool_calls: [] },
      { role: "tool", tool_call_id: "c1", name: "t", content: "fine", is_error: false },
    ]);
    const [listedCall, listedResult] = data.messages.list(turn.bout_id).slice(1);
    for (const message of [stored[0], listedCall]) expect(message).not.toHaveProperty("tool_calls");
    for (const message of [stored[1], listedResult]) expect(message).not.toHaveProperty("is_error");
    expect(listedCall).not.toHaveProperty("compacted");
  });
});
