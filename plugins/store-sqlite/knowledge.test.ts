import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../kernel/sdk.js";
import { openSqliteStore } from "./store.js";

describe("store-sqlite knowledge", () => {
  let home = "";
  let store: Store;
  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), "spar-knowledge-"));
    store = await openSqliteStore({ home, masterSecret: Buffer.from("knowledge") });
    for (const name of ["ada", "bea"]) {
      store.fighters.insert({
        id: name,
        name,
        manifest: { name, description: name, system_prompt: "Be brief." },
        created_at: "2026-01-01T00:00:00.000Z",
      });
    }
  });
  afterAll(() => {
    store.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("merges entities by name and type in any case, keeping the first spelling", () => {
    const entities = [
      { name: "Lovelace", type: "Person" },
      { name: "lovelace", type: "PERSON" },
      { name: "Lovelace", type: "ship" },
    ];
    expect(store.knowledge.add("ada", entities, [])).toEqual({
      entities_added: 2,
      entities_merged: 1,
      relations_added: 0,
    });
    expect(store.knowledge.query("ada", ["lovelace"], 10)).toEqual([
      { name: "Lovelace", type: "Person", relations: [] },
      { name: "Lovelace", type: "ship", relations: [] },
    ]);
    // Another fighter's graph is its own.
    expect(store.knowledge.add("bea", [{ name: "LOVELACE", type: "person" }], [])).toMatchObject({
      entities_added: 1,
    });
  });

  it("creates missing endpoints as things, ignores duplicate relations, resolves names to the oldest", () => {
    const relations = [
      { from: "lovelace", to: "Babbage", type: "knows" },
      { from: "LOVELACE", to: "babbage", type: "KNOWS" },
      { from: "Engine", to: "Lovelace", type: "programmed by" },
    ];
    expect(store.knowledge.add("ada", [{ name: "LOVELACE", type: "person" }], relations)).toEqual({
      entities_added: 2,
      entities_merged: 1,
      relations_added: 2,
    });
    // Both directions, endpoints by their stored spelling; "Lovelace" meant the person, created first.
    expect(store.knowledge.query("ada", ["lovelace", "person"], 1)).toEqual([
      {
        name: "Lovelace",
        type: "Person",
        relations: [
          { from: "Lovelace", to: "Babbage", type: "knows" },
          { from: "Engine", to: "Lovelace", type: "programmed by" },
        ],
      },
    ]);
    expect(store.knowledge.query("ada", ["babbage"], 5)).toEqual([
      { name: "Babbage", type: "thing", relations: [{ from: "Lovelace", to: "Babbage", type: "knows" }] },
    ]);
  });

  it("ranks by words matched then name; no words means the newest entities", () => {
    const names = (words: string[], limit = 10) =>
      store.knowledge.query("ada", words, limit).map((e) => e.name);
    expect(names(["thing"])).toEqual(["Babbage", "Engine"]);
    expect(names(["ship", "lovelace"])).toEqual(["Lovelace", "Lovelace"]);
    expect(store.knowledge.query("ada", ["ship", "lovelace"], 1)[0]?.type).toBe("ship");
    expect(names([], 2)).toEqual(["Engine", "Babbage"]);
    expect(names(["nothing-here"])).toEqual([]);
    expect(names(["thing"], 0)).toEqual([]);
    expect(store.knowledge.query("bea", ["babbage"], 5)).toEqual([]);
    expect(() => store.knowledge.add("nobody", [], [])).toThrow(
      expect.objectContaining({ code: "FIGHTER_NOT_FOUND" }),
    );
  });
});
