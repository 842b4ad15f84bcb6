import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../sdk/index.js";
import { openSqliteStore } from "./store.js";

// Merging, relations and per-fighter graphs are the contract suite's; these are this store's choices:
// the spelling kept, endpoints it creates, which entity a name means, and the order of answers.
describe("store-sqlite knowledge", () => {
  let home = "";
  let store: Store;
  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), "spar-knowledge-"));
    store = await openSqliteStore({ home, masterSecret: Buffer.from("knowledge") });
    await store.fighters.insert({
      id: "ada",
      name: "ada",
      manifest: { name: "ada", description: "ada", system_prompt: "Be brief." },
      created_at: "2026-01-01T00:00:00.000Z",
    });
  });
  afterAll(async () => {
    await store.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("keeps the first spelling of a merged entity", async () => {
    const entities = [
      { name: "Lovelace", type: "Person" },
      { name: "lovelace", type: "PERSON" },
      { name: "Lovelace", type: "ship" },
    ];
    await store.knowledge.add("ada", entities, []);
    expect(await store.knowledge.query("ada", ["lovelace"], 10)).toEqual([
      { name: "Lovelace", type: "Person", relations: [] },
      { name: "Lovelace", type: "ship", relations: [] },
    ]);
  });

  it("creates missing endpoints as things, ignores duplicate relations, resolves names to the oldest", async () => {
    const relations = [
      { from: "lovelace", to: "Babbage", type: "knows" },
      { from: "LOVELACE", to: "babbage", type: "KNOWS" },
      { from: "Engine", to: "Lovelace", type: "programmed by" },
    ];
    expect(await store.knowledge.add("ada", [{ name: "LOVELACE", type: "person" }], relations)).toEqual({
      entities_added: 2,
      entities_merged: 1,
      relations_added: 2,
    });
    // Both directions, endpoints by their stored spelling; "Lovelace" meant the person, created first.
    expect(await store.knowledge.query("ada", ["lovelace", "person"], 1)).toEqual([
      {
        name: "Lovelace",
        type: "Person",
        relations: [
          { from: "Lovelace", to: "Babbage", type: "knows" },
          { from: "Engine", to: "Lovelace", type: "programmed by" },
        ],
      },
    ]);
    expect(await store.knowledge.query("ada", ["babbage"], 5)).toEqual([
      { name: "Babbage", type: "thing", relations: [{ from: "Lovelace", to: "Babbage", type: "knows" }] },
    ]);
  });

  it("ranks by words matched then name; no words means the newest entities", async () => {
    const names = async (words: string[], limit = 10) =>
      (await store.knowledge.query("ada", words, limit)).map((e) => e.name);
    expect(await names(["thing"])).toEqual(["Babbage", "Engine"]);
    expect(await names(["ship", "lovelace"])).toEqual(["Lovelace", "Lovelace"]);
    expect((await store.knowledge.query("ada", ["ship", "lovelace"], 1))[0]?.type).toBe("ship");
    expect(await names([], 2)).toEqual(["Engine", "Babbage"]);
    expect(await names(["nothing-here"])).toEqual([]);
    expect(await names(["thing"], 0)).toEqual([]);
  });
});
