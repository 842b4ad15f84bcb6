/**
 * The knowledge graph through `api.data`, on every store plugin: what the store contract asked of
 * `Store.knowledge` before the plugin owned it, and its choices (the spelling kept, the endpoints it
 * creates, which entity a name means, the order of answers).
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
import { createKnowledgeGraph, type KgEntity, type KgRelation, type KnowledgeGraph } from "./graph.js";

const DIR = import.meta.dirname;

afterAll(cleanUp);

const sorted = (entities: (KgEntity & { relations: KgRelation[] })[]) =>
  [...entities].sort((a, b) => `${a.name}/${a.type}`.localeCompare(`${b.name}/${b.type}`));

for (const kind of STORE_KINDS) {
  describe.skipIf(kind.skip)(`moves-knowledge on ${kind.name}${kind.skip ? ` (${kind.skip})` : ""}`, () => {
    const home = tempHome();
    let store: Store;
    let graph: KnowledgeGraph;
    beforeAll(async () => {
      store = await kind.open(home);
      graph = createKnowledgeGraph(pluginData(store, DIR), storeFighters(store));
    });
    afterAll(async () => {
      await store?.close();
    });

    it("merges entities by name and type in any case; each fighter has its own graph", async () => {
      const [xi, yu] = [await newFighter(store), await newFighter(store)];
      const entities = [
        { name: "Lovelace", type: "Person" },
        { name: "lovelace", type: "PERSON" },
        { name: "Lovelace", type: "ship" },
      ];
      expect(await graph.add(xi.id, entities, [])).toEqual({
        entities_added: 2,
        entities_merged: 1,
        relations_added: 0,
      });
      expect(await graph.add(xi.id, [{ name: "LOVELACE", type: "person" }], [])).toEqual({
        entities_added: 0,
        entities_merged: 1,
        relations_added: 0,
      });
      // The first spelling stays.
      expect(await graph.query(xi.id, ["lovelace"], 10)).toEqual([
        { name: "Lovelace", type: "Person", relations: [] },
        { name: "Lovelace", type: "ship", relations: [] },
      ]);

      expect(await graph.query(yu.id, ["lovelace"], 10)).toEqual([]);
      expect(await graph.add(yu.id, [{ name: "Lovelace", type: "Person" }], [])).toMatchObject({
        entities_added: 1,
      });
    });

    it("folds only ASCII letters for identity, as before: Café and CAFÉ stay two", async () => {
      const eve = await newFighter(store);
      expect(
        await graph.add(
          eve.id,
          [
            { name: "Café", type: "place" },
            { name: "CAFÉ", type: "place" },
            { name: "café", type: "PLACE" },
          ],
          [],
        ),
      ).toEqual({ entities_added: 2, entities_merged: 1, relations_added: 0 });
    });

    it("refuses a fighter that is not live (FIGHTER_NOT_FOUND), writing nothing", async () => {
      const ghost = randomUUID();
      await expect(graph.add(ghost, [{ name: "x", type: "y" }], [])).rejects.toMatchObject({
        code: "FIGHTER_NOT_FOUND",
      });
      expect(await graph.query(ghost, [], 10)).toEqual([]);
    });

    it("adds relations once, and returns each entity with every relation it takes part in", async () => {
      const zed = await newFighter(store);
      const knows = { from: "Ada", to: "Babbage", type: "knows" };
      const programmed = { from: "Engine", to: "Ada", type: "programmed by" };
      const entities = [
        { name: "Ada", type: "person" },
        { name: "Babbage", type: "person" },
        { name: "Engine", type: "machine" },
      ];
      expect(await graph.add(zed.id, entities, [knows, programmed])).toEqual({
        entities_added: 3,
        entities_merged: 0,
        relations_added: 2,
      });
      // The same relation again, its names and type in another case: nothing new.
      expect(await graph.add(zed.id, [], [{ from: "ada", to: "BABBAGE", type: "Knows" }])).toEqual({
        entities_added: 0,
        entities_merged: 0,
        relations_added: 0,
      });

      expect(sorted(await graph.query(zed.id, ["ada"], 10))).toEqual(
        sorted([{ name: "Ada", type: "person", relations: [knows, programmed] }]),
      );
      expect(sorted(await graph.query(zed.id, ["machine"], 10))).toEqual([
        { name: "Engine", type: "machine", relations: [programmed] },
      ]);
    });

    it("creates missing endpoints as things, ignores duplicate relations, resolves names to the oldest", async () => {
      const ada = await newFighter(store);
      await graph.add(
        ada.id,
        [
          { name: "Lovelace", type: "Person" },
          { name: "Lovelace", type: "ship" },
        ],
        [],
      );
      const relations = [
        { from: "lovelace", to: "Babbage", type: "knows" },
        { from: "LOVELACE", to: "babbage", type: "KNOWS" },
        { from: "Engine", to: "Lovelace", type: "programmed by" },
      ];
      expect(await graph.add(ada.id, [{ name: "LOVELACE", type: "person" }], relations)).toEqual({
        entities_added: 2,
        entities_merged: 1,
        relations_added: 2,
      });
      // Both directions, endpoints by their stored spelling; "Lovelace" meant the person, created first.
      expect(await graph.query(ada.id, ["lovelace", "person"], 1)).toEqual([
        {
          name: "Lovelace",
          type: "Person",
          relations: [
            { from: "Lovelace", to: "Babbage", type: "knows" },
            { from: "Engine", to: "Lovelace", type: "programmed by" },
          ],
        },
      ]);
      expect(await graph.query(ada.id, ["babbage"], 5)).toEqual([
        { name: "Babbage", type: "thing", relations: [{ from: "Lovelace", to: "Babbage", type: "knows" }] },
      ]);

      // Ranked by words matched then name; no words means the newest entities.
      const names = async (words: string[], limit = 10) =>
        (await graph.query(ada.id, words, limit)).map((e) => e.name);
      expect(await names(["thing"])).toEqual(["Babbage", "Engine"]);
      expect(await names(["ship", "lovelace"])).toEqual(["Lovelace", "Lovelace"]);
      expect((await graph.query(ada.id, ["ship", "lovelace"], 1))[0]?.type).toBe("ship");
      expect(await names([], 2)).toEqual(["Engine", "Babbage"]);
      expect(await names(["nothing-here"])).toEqual([]);
      expect(await names(["thing"], 0)).toEqual([]);
    });

    it("a relation from an entity to itself is listed once", async () => {
      const narcissus = await newFighter(store);
      const self = { from: "Narcissus", to: "narcissus", type: "admires" };
      expect(await graph.add(narcissus.id, [], [self])).toEqual({
        entities_added: 1,
        entities_merged: 0,
        relations_added: 1,
      });
      expect(await graph.query(narcissus.id, ["narcissus"], 5)).toEqual([
        {
          name: "Narcissus",
          type: "thing",
          relations: [{ from: "Narcissus", to: "Narcissus", type: "admires" }],
        },
      ]);
    });

    it("answers the entities matching the most words first, at most `limit` of them", async () => {
      const amy = await newFighter(store);
      await graph.add(
        amy.id,
        [
          { name: "Paris", type: "city" },
          { name: "Lyon", type: "city" },
          { name: "Paris Hilton", type: "person" },
        ],
        [],
      );
      expect((await graph.query(amy.id, ["paris", "city"], 1)).map((e) => e.name)).toEqual(["Paris"]);
      expect(await graph.query(amy.id, ["city"], 5)).toHaveLength(2);
      expect(await graph.query(amy.id, ["city"], 1)).toHaveLength(1);
      expect(await graph.query(amy.id, ["tokyo"], 5)).toEqual([]);
    });

    it("keeps the graph when concurrent adds name the same new entities and relations", async () => {
      const kim = await newFighter(store);
      const link = { from: "Kim", to: "Seoul", type: "lives in" };
      const counts = await Promise.all(
        [0, 1, 2].map(() => graph.add(kim.id, [{ name: "Kim", type: "person" }], [link])),
      );
      expect(counts.reduce((n, c) => n + c.relations_added, 0)).toBe(1);
      expect(await graph.query(kim.id, ["seoul"], 5)).toEqual([
        { name: "Seoul", type: "thing", relations: [link] },
      ]);
    });

    it("keeps the graph across a close and reopen", async () => {
      const gus = await newFighter(store);
      await graph.add(gus.id, [{ name: "tea", type: "drink" }], [{ from: "tea", to: "cup", type: "in" }]);
      const before = await graph.query(gus.id, ["tea"], 10);
      await store.close();
      store = await kind.open(home);
      graph = createKnowledgeGraph(pluginData(store, DIR), storeFighters(store));
      expect(await graph.query(gus.id, ["tea"], 10)).toEqual(before);
      expect(before).toEqual([
        { name: "tea", type: "drink", relations: [{ from: "tea", to: "cup", type: "in" }] },
      ]);
    });
  });
}
