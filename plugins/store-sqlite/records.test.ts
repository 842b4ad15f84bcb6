import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage, CreedDocument, FighterRow, Store } from "../../kernel/sdk.js";
import { openSqliteStore } from "./store.js";

// Everything but memories and knowledge, on one store (each open costs an Argon2id run).
let home = "";
let store: Store;
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "spar-records-"));
  store = await openSqliteStore({ home, masterSecret: Buffer.from("records") });
});
afterAll(() => {
  store.close();
  rmSync(home, { recursive: true, force: true });
});

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

describe("store-sqlite records", () => {
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

  it("compacts up to a seq in one go: marks messages, upserts the summary, counts only new marks", () => {
    const gil = fighter("gil");
    store.fighters.insert(gil);
    const bout = store.bouts.create(gil.id);
    const other = store.bouts.create(gil.id);
    const appended = store.messages.append(
      bout.id,
      ["m1", "m2", "m3", "m4", "m5"].map((content): ChatMessage => ({ role: "user", content })),
    );
    expect(appended.some((m) => "compacted" in m)).toBe(false);
    const flags = () => store.messages.list(bout.id).map((m) => ("compacted" in m ? m.compacted : "absent"));

    expect(store.messages.compact(bout.id, 3, "first three")).toBe(3);
    expect(flags()).toEqual([true, true, true, "absent", "absent"]);
    expect(store.summaries.get(bout.id)).toEqual({
      bout_id: bout.id,
      summary: "first three",
      through_seq: 3,
      updated_at: expect.any(String),
    });

    // Truncation marks without a summary: the earlier one stays as it was.
    expect(store.messages.compact(bout.id, 4, undefined)).toBe(1);
    expect(flags()).toEqual([true, true, true, true, "absent"]);
    expect(store.summaries.get(bout.id)).toMatchObject({ summary: "first three", through_seq: 3 });

    expect(store.messages.compact(bout.id, 4, "first four")).toBe(0);
    expect(store.summaries.get(bout.id)).toMatchObject({ summary: "first four", through_seq: 4 });
    expect(store.messages.list(other.id)).toEqual([]);
    expect(store.summaries.get(other.id)).toBeUndefined();
    expect(store.bouts.get(bout.id)?.message_count).toBe(5);
    expect(() => store.messages.compact("no-such-bout", 1, "x")).toThrow(
      expect.objectContaining({ code: "BOUT_NOT_FOUND" }),
    );
  });
});

describe("store-sqlite creeds and relationships", () => {
  it("round-trips a creed and replaces it on put", () => {
    const creed: CreedDocument = {
      identity: "A careful fighter",
      traits: ["patient"],
      directives: ["cite sources"],
      observations: [
        { text: "user prefers French", confidence: 0.8, seen: 3, last_seen: "2026-01-02T00:00:00Z" },
      ],
      counters: { bouts: 2, conversations: 1, messages: 9 },
      updated_at: "2026-01-02T00:00:00Z",
    };
    expect(store.creeds.get("kit")).toBeUndefined();
    store.creeds.put("kit", creed);
    expect(store.creeds.get("kit")).toEqual(creed);
    store.creeds.put("kit", { ...creed, traits: [] });
    expect(store.creeds.get("kit")).toEqual({ ...creed, traits: [] });
  });

  it("counts exchanges per other side, latest contact first, keeping the newest note", () => {
    store.relationships.record("kit", { with: "lou", kind: "fighter" }, "met", "2026-01-01T00:00:00Z");
    store.relationships.record("kit", { with: "telegram:42", kind: "user" }, "hi", "2026-01-02T00:00:00Z");
    store.relationships.record("kit", { with: "lou", kind: "fighter" }, "again", "2026-01-03T00:00:00Z");
    expect(store.relationships.list("kit")).toEqual([
      { with: "lou", kind: "fighter", exchanges: 2, last_contact: "2026-01-03T00:00:00Z", note: "again" },
      { with: "telegram:42", kind: "user", exchanges: 1, last_contact: "2026-01-02T00:00:00Z", note: "hi" },
    ]);
    expect(store.relationships.list("lou")).toEqual([]);
  });
});

describe("store-sqlite usage", () => {
  it("records one row per message and sums them per provider and model", () => {
    const ed = fighter("ed");
    store.fighters.insert(ed);
    const at = new Date(clock).toISOString();
    store.usage.record(ed.id, { provider: "openai", model: "m1", input_tokens: 10, output_tokens: 2 }, at);
    store.usage.record(ed.id, { provider: "openai", model: "m1", input_tokens: 5, output_tokens: 1 }, at);
    store.usage.record(ed.id, { provider: "ollama", model: "m2", input_tokens: 7, output_tokens: 3 }, at);
    expect(store.usage.summary(ed.id)).toEqual([
      { provider: "ollama", model: "m2", requests: 1, input_tokens: 7, output_tokens: 3 },
      { provider: "openai", model: "m1", requests: 2, input_tokens: 15, output_tokens: 3 },
    ]);
    expect(store.usage.summary("nobody")).toEqual([]);
  });
});

describe("store-sqlite nonces", () => {
  it("accepts a nonce once per key until it expires", () => {
    expect(store.nonces.claim("cli", "n1", 1000, 100)).toBe(true);
    expect(store.nonces.claim("cli", "n1", 1000, 200)).toBe(false);
    expect(store.nonces.claim("other", "n1", 1000, 200)).toBe(true);
    // Once expired it is forgotten: a signature that old is refused by its created time anyway.
    expect(store.nonces.claim("cli", "n1", 2000, 1001)).toBe(true);
  });
});
