/**
 * The memories through `api.data`, on every store plugin: what the store contract asked of
 * `Store.memories` before the plugin owned them, and the word rules of its candidates (the store's
 * full-text index: words, prefixes and word forms, ranked by BM25).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../sdk/index.js";
import {
  cleanUp,
  newFighter,
  pluginData,
  STORE_KINDS,
  storeFighters,
  tempHome,
} from "../../test/helpers/plugin-data.js";
import { createMemories, type Memories } from "./memories.js";

const DIR = import.meta.dirname;
const day = (n: number) => new Date(Date.parse("2026-01-01T00:00:00.000Z") + n * 86_400_000).toISOString();

afterAll(cleanUp);

for (const kind of STORE_KINDS) {
  describe.skipIf(kind.skip)(`moves-memory on ${kind.name}${kind.skip ? ` (${kind.skip})` : ""}`, () => {
    const home = tempHome();
    let store: Store;
    let memories: Memories;
    beforeAll(async () => {
      store = await kind.open(home);
      memories = createMemories(pluginData(store, DIR), storeFighters(store));
    });
    afterAll(async () => {
      await store?.close();
    });

    const byKey = async (fighterId: string) =>
      new Map((await memories.recent(fighterId, 1000)).map((m) => [m.key, m]));

    it("put stores a memory at score 1 and replaces it by key, restarting its score", async () => {
      const rue = await newFighter(store);
      const first = await memories.put(rue.id, "plan", "Paris");
      expect(first).toMatchObject({ fighter_id: rue.id, key: "plan", value: "Paris", score0: 1 });
      await memories.rescore([{ id: first.id, score0: 3 }], day(0));

      const second = await memories.put(rue.id, "plan", "Rome");
      expect(second).toMatchObject({ id: first.id, key: "plan", value: "Rome", score0: 1 });
      expect(second.created_at).toBe(first.created_at);
      expect(Date.parse(second.scored_at)).toBeGreaterThan(Date.parse(day(0)));
      expect(await memories.recent(rue.id, 10)).toEqual([second]);
    });

    it("refuses a fighter that is not live (FIGHTER_NOT_FOUND), writing nothing", async () => {
      const ghost = randomUUID();
      await expect(memories.put(ghost, "k", "v")).rejects.toMatchObject({ code: "FIGHTER_NOT_FOUND" });
      const gone = await newFighter(store);
      await store.fighters.kill(gone.id);
      await expect(memories.put(gone.id, "k", "v")).rejects.toMatchObject({ code: "FIGHTER_NOT_FOUND" });
      expect(await memories.recent(ghost, 10)).toEqual([]);
      expect(await memories.recent(gone.id, 10)).toEqual([]);
    });

    it("finds by words in key or value, any case, prefixes and word forms, best match first", async () => {
      const [sam, tom] = [await newFighter(store), await newFighter(store)];
      await memories.put(sam.id, "coffee", "Likes Espresso in the morning");
      await memories.put(sam.id, "tea", "Drinks green tea at night");
      await memories.put(sam.id, "schedule", "Morning run, then coffee");
      await memories.put(sam.id, "pets", "A cat called Pixel");
      await memories.put(tom.id, "coffee", "Never drinks coffee");
      const found = async (query: string) => (await memories.byWords(sam.id, query)).map((m) => m.key);

      expect((await found("coffee morning")).sort()).toEqual(["coffee", "schedule"]);
      expect(await found("ESPRESSO")).toEqual(["coffee"]);
      expect(await found("night bicycle")).toEqual(["tea"]);
      expect(await found("bicycle")).toEqual([]);
      // A prefix and another form of the word.
      expect(await found("espre")).toEqual(["coffee"]);
      expect(await found("drinking")).toEqual(["tea"]);
      // The key is searched too; the rare word outranks the common one.
      expect((await found("pets coffee"))[0]).toBe("pets");
      // Nothing but query operators and punctuation: no words, no error.
      expect(await found('" * NEAR( ) AND OR NOT - : ^')).toEqual([]);
      expect(await memories.byWords(randomUUID(), "coffee")).toEqual([]);
    });

    it("lists a fighter's memories most recently scored first", async () => {
      const gus = await newFighter(store);
      await memories.put(gus.id, "coffee", "Likes espresso in the morning");
      await memories.put(gus.id, "tea", "Drinks green tea at night");
      await memories.put(gus.id, "city", "Lives above a CAFÉ in Lyon");
      expect((await memories.recent(gus.id, 10)).map((m) => m.key)).toEqual(["city", "tea", "coffee"]);
      expect((await memories.byWords(gus.id, "café")).map((m) => m.key)).toEqual(["city"]);
      expect(await memories.recent(gus.id, 2)).toHaveLength(2);
    });

    it("rescores: score0 and scored_at are set per memory, and left alone for other fighters", async () => {
      const [uma, vic] = [await newFighter(store), await newFighter(store)];
      const a = await memories.put(uma.id, "a", "alpha");
      const b = await memories.put(uma.id, "b", "beta");
      const c = await memories.put(vic.id, "c", "gamma");
      await memories.rescore(
        [
          { id: a.id, score0: 2 },
          { id: c.id, score0: 2 },
        ],
        day(0),
      );
      await memories.rescore([{ id: b.id, score0: 4 }], day(3));
      await memories.rescore([{ id: randomUUID(), score0: 9 }], day(4));

      const held = await byKey(uma.id);
      expect(held.get("a")?.score0).toBe(2);
      expect(Date.parse(held.get("a")?.scored_at ?? "")).toBe(Date.parse(day(0)));
      expect(held.get("b")?.score0).toBe(4);
      expect(Date.parse(held.get("b")?.scored_at ?? "")).toBe(Date.parse(day(3)));
      const other = (await byKey(vic.id)).get("c");
      expect(other?.score0).toBe(2);
      expect(Date.parse(other?.scored_at ?? "")).toBe(Date.parse(day(0)));
      // Most recently scored first.
      expect([...held.keys()]).toEqual(["b", "a"]);
    });

    it("keeps one memory per key when two stores race to write it", async () => {
      const zoe = await newFighter(store);
      const written = await Promise.all(
        ["one", "two", "three"].map((value) => memories.put(zoe.id, "same", value)),
      );
      const held = await memories.recent(zoe.id, 10);
      expect(held).toHaveLength(1);
      expect(new Set(written.map((m) => m.id))).toEqual(new Set([held[0]?.id]));
    });

    it("keeps every memory across a close and reopen", async () => {
      const ivy = await newFighter(store);
      await memories.put(ivy.id, "drink", "tea");
      const before = await memories.recent(ivy.id, 10);
      await store.close();
      store = await kind.open(home);
      memories = createMemories(pluginData(store, DIR), storeFighters(store));
      expect(await memories.recent(ivy.id, 10)).toEqual(before);
    });
  });
}
