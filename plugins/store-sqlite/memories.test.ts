import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../sdk/index.js";
import { openSqliteStore } from "./store.js";

describe("store-sqlite memories", () => {
  let home = "";
  let store: Store;
  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), "spar-memories-"));
    store = await openSqliteStore({ home, masterSecret: Buffer.from("memories") });
    for (const name of ["gus", "hal"]) {
      await store.fighters.insert({
        id: name,
        name,
        manifest: { name, description: name, system_prompt: "Be brief." },
        created_at: "2026-03-01T00:00:00.000Z",
      });
    }
  });
  afterAll(async () => {
    await store.close();
    rmSync(home, { recursive: true, force: true });
  });

  // Which memories are candidates is the contract suite's; their order and the word rules are this store's.
  it("finds candidates by words matched, then most recently scored; all of them for no words", async () => {
    await store.memories.put("gus", "coffee", "Likes espresso in the morning");
    await store.memories.put("gus", "tea", "Drinks green tea at night");
    await store.memories.put("gus", "schedule", "Morning run, then coffee");
    await store.memories.put("gus", "pets", "A cat called Espresso");
    await store.memories.put("gus", "city", "Lives above a CAFÉ in Lyon");
    await store.memories.put("hal", "coffee", "Never drinks coffee");
    const found = async (...words: string[]) =>
      (await store.memories.candidates("gus", words)).map((m) => `${m.key}:${m.matches}`);

    expect(await found("coffee", "morning")).toEqual(["schedule:2", "coffee:2"]);
    expect(await found("espresso", "morning")).toEqual(["coffee:2", "pets:1", "schedule:1"]);
    expect(await found()).toEqual(["city:0", "pets:0", "schedule:0", "tea:0", "coffee:0"]);
    expect(await found("bicycle")).toEqual([]);
    // Unicode case folds like the kernel's words; a word repeated counts once; casing is ignored.
    expect(await found("café")).toEqual(["city:1"]);
    expect(await found("COFFEE", "coffee")).toEqual(["schedule:1", "coffee:1"]);
    // Words beyond the eighth are not searched.
    expect(await found("a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "tea")).toEqual([]);
    expect(await store.memories.candidates("nobody", [])).toEqual([]);
  });
});
