/**
 * The identity plugin's data through `api.data`, on every store plugin: Creeds and relationships in
 * its own collections, as the plugin host would hand them to it (its manifest's declaration over the
 * store's CollectionStore). Each store runs the same suite; PostgreSQL's is skipped without a server.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FighterRow, Store } from "../../sdk/index.js";
import { cleanUp, pluginData, STORE_KINDS, tempHome } from "../../test/helpers/plugin-data.js";
import { type CreedDocument, countSender, createIdentityRecords, type IdentityRecords } from "./records.js";

/** The plugin's records over an opened store, as `api.data` gives them to the plugin. */
function identityRecords(store: Store): IdentityRecords {
  return createIdentityRecords(pluginData(store, import.meta.dirname));
}

afterAll(cleanUp);

const day = (days: number): string =>
  new Date(Date.parse("2026-03-01T00:00:00.000Z") + days * 86_400_000).toISOString();

function creed(identity: string): CreedDocument {
  return {
    identity,
    traits: ["patient", "curious"],
    directives: ["cite sources"],
    observations: [{ text: "user prefers French", confidence: 0.8, seen: 3, last_seen: day(1) }],
    counters: { bouts: 2, conversations: 1, messages: 9 },
    updated_at: day(1),
  };
}

let serial = 0;
function fighterRow(): FighterRow {
  serial += 1;
  const name = `fighter-${serial}-${randomUUID().slice(0, 6)}`;
  return {
    id: randomUUID(),
    name,
    manifest: { name, description: `${name} fights`, system_prompt: "Be brief." },
    created_at: new Date().toISOString(),
  };
}

for (const factory of STORE_KINDS) {
  const title = `identity-creed data: ${factory.name}${factory.skip ? ` (${factory.skip})` : ""}`;
  if (factory.skip) console.warn(title);
  describe.skipIf(factory.skip !== undefined)(title, () => {
    const home = tempHome();
    let store: Store;
    let records: IdentityRecords;
    beforeAll(async () => {
      store = await factory.open(home);
      records = identityRecords(store);
    });
    afterAll(async () => {
      await store?.close();
    });

    it("round-trips a creed by fighter name, replaces it, and keeps it past a kill", async () => {
      const wes = fighterRow();
      await store.fighters.insert(wes);
      expect(await records.creeds.get(wes.name)).toBeUndefined();
      await records.creeds.put(wes.name, creed("A careful fighter"));
      expect(await records.creeds.get(wes.name)).toEqual(creed("A careful fighter"));

      const grown = {
        ...creed("A wiser fighter"),
        traits: [],
        counters: { bouts: 3, conversations: 2, messages: 12 },
      };
      await records.creeds.put(wes.name, grown);
      expect(await records.creeds.get(wes.name)).toEqual(grown);

      await store.fighters.kill(wes.id);
      expect(await records.creeds.get(wes.name)).toEqual(grown);
      await store.fighters.insert({ ...fighterRow(), name: wes.name });
      expect(await records.creeds.get(wes.name)).toEqual(grown);
      expect(await records.creeds.get(`${wes.name}-twin`)).toBeUndefined();
    });

    it("counts exchanges per other side, keeps the newest note, lists the latest contact first", async () => {
      const me = fighterRow().name;
      await records.relationships.record(me, { with: "lou", kind: "fighter" }, "met", day(1));
      await records.relationships.record(me, { with: "telegram:42", kind: "user" }, "hi", day(2));
      await records.relationships.record(me, { with: "lou", kind: "fighter" }, "again", day(3));
      expect(await records.relationships.list(me)).toEqual([
        { with: "lou", kind: "fighter", exchanges: 2, last_contact: day(3), note: "again" },
        { with: "telegram:42", kind: "user", exchanges: 1, last_contact: day(2), note: "hi" },
      ]);
      expect((await records.relationships.list(me, 1)).map((r) => r.with)).toEqual(["lou"]);
      expect(await records.relationships.list("lou")).toEqual([]);
    });

    it("keeps each fighter's relationships apart, whatever the other side's name holds", async () => {
      const [a, b] = [fighterRow().name, fighterRow().name];
      await records.relationships.record(a, { with: "x/y", kind: "user" }, "slash in the other side", day(1));
      await records.relationships.record(`${a}-2`, { with: "y", kind: "user" }, "a longer name", day(2));
      await records.relationships.record(b, { with: a, kind: "fighter" }, "b knows a", day(3));
      expect((await records.relationships.list(a)).map((r) => r.with)).toEqual(["x/y"]);
      expect((await records.relationships.list(b)).map((r) => r.with)).toEqual([a]);
    });

    it("counts every exchange recorded at once, the first ones included", async () => {
      const me = fighterRow().name;
      await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          records.relationships.record(me, { with: "busy", kind: "fighter" }, `n${i}`, day(i)),
        ),
      );
      const [only] = await records.relationships.list(me);
      expect(only).toMatchObject({ with: "busy", exchanges: 6 });
    });

    it("counts a turn's sender: a fighter on both sides, a channel's user without the message", async () => {
      const [alice, bob] = [fighterRow(), fighterRow()];
      const content = "hello   bob,\nhow are you?";
      await countSender(
        records,
        { fighter: bob, sender: { kind: "fighter", name: alice.name, content } },
        day(1),
      );
      await countSender(
        records,
        { fighter: bob, sender: { kind: "user", user: "telegram:42", platform: "telegram" } },
        day(2),
      );
      await countSender(records, { fighter: bob }, day(3));
      expect(await records.relationships.list(alice.name)).toEqual([
        {
          with: bob.name,
          kind: "fighter",
          exchanges: 1,
          last_contact: day(1),
          note: "last sent: hello bob, how are you?",
        },
      ]);
      expect(await records.relationships.list(bob.name)).toEqual([
        {
          with: "telegram:42",
          kind: "user",
          exchanges: 1,
          last_contact: day(2),
          note: "talks to you on telegram",
        },
        {
          with: alice.name,
          kind: "fighter",
          exchanges: 1,
          last_contact: day(1),
          note: "last heard: hello bob, how are you?",
        },
      ]);
    });

    it("keeps both after the store is closed and opened again", async () => {
      const gus = fighterRow().name;
      await records.creeds.put(gus, creed("Tea lover"));
      await records.relationships.record(gus, { with: "telegram:7", kind: "user" }, "asked", day(1));
      await store.close();
      store = await factory.open(home);
      records = identityRecords(store);
      expect(await records.creeds.get(gus)).toEqual(creed("Tea lover"));
      expect(await records.relationships.list(gus)).toEqual([
        { with: "telegram:7", kind: "user", exchanges: 1, last_contact: day(1), note: "asked" },
      ]);
    });
  });
}
