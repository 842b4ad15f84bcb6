import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../kernel/sdk.js";
import { openSqliteStore } from "./store.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-03-01T00:00:00.000Z");
const at = (days: number) => new Date(T0 + days * DAY).toISOString();

describe("store-sqlite memories", () => {
  let home = "";
  let store: Store;
  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), "spar-memories-"));
    store = await openSqliteStore({ home, masterSecret: Buffer.from("memories") });
    for (const name of ["gus", "hal", "ivy"]) {
      store.fighters.insert({
        id: name,
        name,
        manifest: { name, description: name, system_prompt: "Be brief." },
        created_at: at(0),
      });
    }
  });
  afterAll(() => {
    store.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("finds candidates by words matched, then most recently scored; all of them for no words", () => {
    store.memories.put("gus", "coffee", "Likes espresso in the morning");
    store.memories.put("gus", "tea", "Drinks green tea at night");
    store.memories.put("gus", "schedule", "Morning run, then coffee");
    store.memories.put("gus", "pets", "A cat called Espresso");
    store.memories.put("gus", "city", "Lives above a CAFÉ in Lyon");
    store.memories.put("hal", "coffee", "Never drinks coffee");
    const found = (...words: string[]) =>
      store.memories.candidates("gus", words).map((m) => `${m.key}:${m.matches}`);

    expect(found("coffee", "morning")).toEqual(["schedule:2", "coffee:2"]);
    expect(found("espresso", "morning")).toEqual(["coffee:2", "pets:1", "schedule:1"]);
    expect(found()).toEqual(["city:0", "pets:0", "schedule:0", "tea:0", "coffee:0"]);
    expect(found("bicycle")).toEqual([]);
    // Unicode case folds like the kernel's words; a word repeated counts once; casing is ignored.
    expect(found("café")).toEqual(["city:1"]);
    expect(found("COFFEE", "coffee")).toEqual(["schedule:1", "coffee:1"]);
    // Words beyond the eighth are not searched.
    expect(found("a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "tea")).toEqual([]);
    expect(store.memories.candidates("nobody", [])).toEqual([]);
  });

  it("put upserts by key: same id and created_at, new value, score back to 1", () => {
    const first = store.memories.put("ivy", "plan", "Paris");
    store.memories.rescore([{ id: first.id, score0: 3 }], at(-1));
    const second = store.memories.put("ivy", "plan", "Rome");
    expect(second).toEqual({
      ...first,
      value: "Rome",
      score0: 1,
      scored_at: expect.any(String),
    });
    expect(second.scored_at > at(-1)).toBe(true);
    expect(() => store.memories.put("nobody", "k", "v")).toThrow(
      expect.objectContaining({ code: "FIGHTER_NOT_FOUND" }),
    );
  });

  it("rescores in one go and decays score0 by e^(-rate·days), restarting the clock at `at`", () => {
    const a = store.memories.put("hal", "a", "alpha");
    const b = store.memories.put("hal", "b", "beta");
    const gus = store.memories.candidates("gus", ["tea"])[0];
    store.memories.rescore(
      [
        { id: a.id, score0: 2 },
        { id: b.id, score0: 1 },
      ],
      at(0),
    );
    store.memories.rescore([{ id: b.id, score0: 4 }], at(3));
    store.memories.decay("hal", 0.5, at(2));
    const byKey = new Map(store.memories.candidates("hal", []).map((m) => [m.key, m]));

    expect(byKey.get("a")?.score0).toBeCloseTo(2 * Math.exp(-1), 12);
    expect(byKey.get("a")?.scored_at).toBe(at(2));
    // Scored after `at`: left alone rather than raised.
    expect(byKey.get("b")).toMatchObject({ score0: 4, scored_at: at(3) });
    // Another fighter's memories do not decay.
    expect(store.memories.candidates("gus", ["tea"])[0]).toEqual(gus);
  });
});
