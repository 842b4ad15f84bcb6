/**
 * The channel kit's records in the collections the channel plugins declare (namespace "channels"),
 * through `api.data` on every store plugin: what the Store's contract promised of them before they
 * left it (one bout per chat, a delivery claimed once, the chats that reached a fighter), retention
 * of deliveries, and a data dir whose channel records an older Spar kept in the Store's own tables,
 * found after the upgrade (the OpenAI users' bouts in the Arena's own collection).
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeServices } from "../../kernel/store-services.js";
import { createOpenAiBouts } from "../../plugins/arena-http/openai-bouts.js";
import type { FighterRow, Store } from "../../sdk/index.js";
import { queryValue } from "../../test/helpers/db.js";
import {
  cleanUp,
  legacyPostgres,
  legacySqlite,
  MASTER_SECRET,
  newFighter,
  pluginData,
  STORE_KINDS,
  tempHome,
} from "../../test/helpers/plugin-data.js";
import { SKIP_REASON, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { type ChannelRecords, createChannelRecords } from "./records.js";

afterAll(cleanUp);

const DAY_MS = 86_400_000;
const PLUGINS = join(import.meta.dirname, "..", "..", "plugins");
/** A bundled plugin's `api.data` over `store`. */
const dataOf = (store: Store, plugin: string, now?: () => number) =>
  pluginData(store, join(PLUGINS, plugin), now);

/** The records as a channel plugin has them: its `api.data`, the Ring's bouts over the same store. */
function recordsOver(store: Store, plugin = "channel-telegram", now?: () => number): ChannelRecords {
  return createChannelRecords(
    dataOf(store, plugin, now),
    storeServices(() => store),
  );
}

/** A new bout of `fighter`: its first turn, begun. */
async function newBout(store: Store, fighter: FighterRow): Promise<string> {
  const { bout } = await store.turns.begin({
    fighter_id: fighter.id,
    user: { role: "user", content: "hi" },
  });
  return bout.id;
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

describe.each(STORE_KINDS.map((s) => [s.name, s] as const))("channel records on %s", (_name, factory) => {
  let store: Store;
  let records: ChannelRecords;

  beforeAll(async () => {
    if (factory.skip) return;
    store = await factory.open(tempHome());
    records = recordsOver(store);
  }, 60_000);
  afterAll(async () => {
    await store?.close();
  });

  it.skipIf(factory.skip)("keeps one bout per platform, chat and fighter, replaced on set", async () => {
    const fighter = await newFighter(store);
    const other = await newFighter(store);
    const [first, second] = [await newBout(store, fighter), await newBout(store, fighter)];
    expect(await records.bouts.get("telegram", "42", fighter.id)).toBeUndefined();
    await records.bouts.set("telegram", "42", fighter.id, first);
    expect(await records.bouts.get("telegram", "42", fighter.id)).toBe(first);
    // Another chat, platform or fighter is another conversation.
    expect(await records.bouts.get("telegram", "43", fighter.id)).toBeUndefined();
    expect(await records.bouts.get("slack", "42", fighter.id)).toBeUndefined();
    expect(await records.bouts.get("telegram", "42", other.id)).toBeUndefined();
    await records.bouts.set("telegram", "42", fighter.id, second);
    expect(await records.bouts.get("telegram", "42", fighter.id)).toBe(second);
    // Every plugin of the kit sees the same records.
    expect(await recordsOver(store, "channel-slack").bouts.get("telegram", "42", fighter.id)).toBe(second);
  });

  it.skipIf(factory.skip)("keeps chats apart whatever their ids hold", async () => {
    const fighter = await newFighter(store);
    const bout = await newBout(store, fighter);
    // Ids that would run together in a key made by joining them.
    await records.bouts.set("telegram", 'a","b', fighter.id, bout);
    expect(await records.bouts.get("telegram", "a", fighter.id)).toBeUndefined();
    expect(await records.bouts.get("telegram", 'a","b', fighter.id)).toBe(bout);
    expect(await records.deliveries.claim("slack", "x:y", new Date().toISOString())).toBe(true);
    expect(await records.deliveries.claim("slack:x", "y", new Date().toISOString())).toBe(true);
  });

  it.skipIf(factory.skip)("refuses an unknown bout and empty keys", async () => {
    const fighter = await newFighter(store);
    await expectCode(records.bouts.set("telegram", "42", fighter.id, "no-such-bout"), "BOUT_NOT_FOUND");
    await expectCode(records.bouts.get("", "42", fighter.id), "VALIDATION_FAILED");
    await expectCode(records.bouts.get("telegram", "x".repeat(257), fighter.id), "VALIDATION_FAILED");
  });

  it.skipIf(factory.skip)("claims a delivery once per platform", async () => {
    const id = `update-${randomUUID()}`;
    const at = new Date().toISOString();
    expect(await records.deliveries.claim("telegram", id, at)).toBe(true);
    expect(await records.deliveries.claim("telegram", id, at)).toBe(false);
    // The same id on another platform is another delivery.
    expect(await records.deliveries.claim("slack", id, at)).toBe(true);
    await expectCode(records.deliveries.claim("telegram", "", at), "VALIDATION_FAILED");
  });

  it.skipIf(factory.skip)("forgets deliveries seen more than two days ago (the retention)", async () => {
    const now = Date.now();
    const [old, recent] = [`old-${randomUUID()}`, `recent-${randomUUID()}`];
    expect(await records.deliveries.claim("telegram", old, new Date(now - 3 * DAY_MS).toISOString())).toBe(
      true,
    );
    expect(await records.deliveries.claim("telegram", recent, new Date(now - DAY_MS).toISOString())).toBe(
      true,
    );
    // A plugin whose data is used for the first time sweeps at once (then hourly).
    const later = recordsOver(store, "channel-discord", () => now);
    expect(await later.deliveries.claim("telegram", old, new Date(now).toISOString())).toBe(true);
    expect(await later.deliveries.claim("telegram", recent, new Date(now).toISOString())).toBe(false);
  });

  it.skipIf(factory.skip)("claims a delivery for exactly one of many callers at once", async () => {
    const id = `race-${randomUUID()}`;
    const kit = ["channel-telegram", "channel-slack", "channel-discord"];
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        recordsOver(store, kit[i % kit.length]).deliveries.claim("discord", id, new Date().toISOString()),
      ),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
  });

  it.skipIf(factory.skip)("remembers which chats reached which fighter, per platform", async () => {
    const fighter = await newFighter(store);
    const other = await newFighter(store);
    const notify = recordsOver(store, "moves-channels");
    expect(await notify.chats.reached("telegram", "42", fighter.id)).toBe(false);
    await records.chats.record("telegram", "42", fighter.id, "2030-01-01T00:00:00.000Z");
    await records.chats.record("telegram", "42", fighter.id, "2030-01-02T00:00:00.000Z");
    expect(await notify.chats.reached("telegram", "42", fighter.id)).toBe(true);
    expect(await notify.chats.reached("telegram", "42", other.id)).toBe(false);
    expect(await notify.chats.reached("slack", "42", fighter.id)).toBe(false);
    expect(await notify.chats.reached("telegram", "43", fighter.id)).toBe(false);
    await expectCode(notify.chats.reached("telegram", "", fighter.id), "VALIDATION_FAILED");
    const doc = await dataOf(store, "moves-channels").chats?.get(
      JSON.stringify(["telegram", "42", fighter.id]),
    );
    expect(doc).toMatchObject({ first_at: "2030-01-01T00:00:00.000Z", last_at: "2030-01-02T00:00:00.000Z" });
  });
});

/** What an older Spar held: a Telegram chat's bout, an OpenAI user's, a delivery, a Slack chat. */
const AT = "2026-01-01T00:00:00.000Z";
const ADA = "id-ada";
const LEGACY = {
  bouts: [
    { id: "b-tg", origin: "channel:telegram:-10042" },
    { id: "b-ai", origin: "channel:openai:alice" },
  ],
  channel_bouts: [
    ["telegram", "-10042", ADA, "b-tg", AT],
    ["openai", "alice", ADA, "b-ai", AT],
  ],
  /** Seen an hour before the test: within the two days deliveries are kept. */
  channel_deliveries: [["telegram", "1001", new Date(Date.now() - 3_600_000).toISOString()]],
  channel_chats: [["slack", "C42", ADA, AT, AT]],
};
const INSERT = {
  channel_bouts: "INSERT INTO channel_bouts (platform, chat, fighter_id, bout_id, updated_at) VALUES",
  channel_deliveries: "INSERT INTO channel_deliveries (platform, delivery_id, seen_at) VALUES",
  channel_chats: "INSERT INTO channel_chats (platform, chat, fighter_id, first_at, last_at) VALUES",
};
const TABLES = ["channel_bouts", "channel_deliveries", "channel_chats"] as const;

/** The legacy records, found through the kit's records and the Arena's, as the plugins read them. */
async function expectMoved(store: Store): Promise<void> {
  const records = recordsOver(store);
  expect(await records.bouts.get("telegram", "-10042", ADA)).toBe("b-tg");
  expect(await records.bouts.get("openai", "alice", ADA)).toBeUndefined();
  expect(await records.deliveries.claim("telegram", "1001", new Date().toISOString())).toBe(false);
  expect(await records.chats.reached("slack", "C42", ADA)).toBe(true);
  const chat = JSON.stringify(["slack", "C42", ADA]);
  expect(await dataOf(store, "moves-channels").chats?.get(chat)).toEqual({
    id: chat,
    platform: "slack",
    chat: "C42",
    fighter_id: ADA,
    first_at: AT,
    last_at: AT,
  });
  // The Arena finds alice's bout and continues it.
  const chosen: unknown[] = [];
  await createOpenAiBouts(dataOf(store, "arena-http")).run(
    { fighterId: ADA, user: "alice" },
    async (options, started) => {
      chosen.push(options);
      started(options.bout_id ?? "");
    },
  );
  expect(chosen).toEqual([{ bout_id: "b-ai" }]);
}

describe("channel records an older Spar kept in the Store (store-sqlite, migration 17)", () => {
  it("are found in the kit's collections, OpenAI users' bouts in the Arena's, the old tables gone", async () => {
    const home = tempHome();
    const old = await legacySqlite(home, 17);
    old
      .prepare(
        "INSERT INTO fighters (id, name, manifest, created_at) VALUES (?, 'ada', '{\"name\":\"ada\"}', ?)",
      )
      .run(ADA, AT);
    const bout = old.prepare(
      "INSERT INTO bouts (id, fighter_id, created_at, updated_at, origin) VALUES (?, ?, ?, ?, ?)",
    );
    for (const b of LEGACY.bouts) bout.run(b.id, ADA, AT, AT, b.origin);
    for (const table of TABLES) {
      for (const row of LEGACY[table]) {
        old.prepare(`${INSERT[table]} (${row.map(() => "?").join(", ")})`).run(...row);
      }
    }
    old.close();

    const store = await STORE_KINDS[0]?.open(home);
    if (!store) throw new Error("no store-sqlite");
    try {
      await expectMoved(store);
    } finally {
      await store.close();
    }
    for (const table of TABLES) {
      const left = `SELECT count(*) FROM sqlite_master WHERE name = '${table}'`;
      expect(await queryValue(home, left, Buffer.from(MASTER_SECRET))).toBe(0);
    }
  });
});

describe.skipIf(!TEST_DATABASE_URL)(
  `channel records an older Spar kept in the Store (store-postgres, at open)${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    const factory = STORE_KINDS[1];

    it("are found in the kit's collections, OpenAI users' bouts in the Arena's, the old tables gone", async () => {
      const home = tempHome();
      const old = await legacyPostgres(home);
      await old.db.query(
        "INSERT INTO fighters (id, name_mac, name_sealed, manifest, created_at) VALUES ($1, $2, $3, $4, $5)",
        [
          ADA,
          old.cipher.mac("fighters.name", "ada"),
          old.cipher.seal("fighters.name_sealed", "ada"),
          old.cipher.seal("fighters.manifest", JSON.stringify({ name: "ada" })),
          AT,
        ],
      );
      for (const b of LEGACY.bouts) {
        await old.db.query(
          "INSERT INTO bouts (id, fighter_id, created_at, updated_at, origin) VALUES ($1, $2, $3, $4, $5)",
          [b.id, ADA, AT, AT, b.origin],
        );
      }
      for (const table of TABLES) {
        for (const row of LEGACY[table]) {
          await old.db.query(`${INSERT[table]} (${row.map((_, i) => `$${i + 1}`).join(", ")})`, row);
        }
      }
      await old.close();

      const store = await factory?.open(home);
      if (!store) throw new Error("no store-postgres");
      try {
        await expectMoved(store);
      } finally {
        await store.close();
      }
      const again = await legacyPostgres(home);
      try {
        const left = await again.db.query("SELECT to_regclass(name) AS t FROM unnest($1::text[]) AS name", [
          TABLES,
        ]);
        expect(left.rows).toEqual(TABLES.map(() => ({ t: null })));
      } finally {
        await again.close();
      }
    });
  },
);
