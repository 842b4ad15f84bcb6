/**
 * The schedules in moves-schedule's own collection, through `api.data` on every store plugin: what
 * the Store's contract promised of them before they left it (soonest first, runs recorded, removal
 * of one's own only, FIGHTER_NOT_FOUND), the per-fighter cap, and a data dir whose schedules an
 * older Spar kept in the Store's own table, found after the upgrade.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  storeFighters,
  tempHome,
} from "../../test/helpers/plugin-data.js";
import { SKIP_REASON, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { createSchedules, MAX_PER_FIGHTER, type ScheduleRecord, type Schedules } from "./schedules.js";

afterAll(cleanUp);

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const day = (n: number) => new Date(T0 + n * 86_400_000).toISOString();

/** moves-schedule's schedules over `store`: its `api.data`, and live fighters as the Ring finds them. */
function schedulesOver(store: Store): Schedules {
  return createSchedules(pluginData(store, import.meta.dirname), { fighters: storeFighters(store) });
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

const schedule = (
  fighter: FighterRow,
  next: string,
  extra: Partial<ScheduleRecord> = {},
): ScheduleRecord => ({
  id: randomUUID(),
  fighter_id: fighter.id,
  message: `wake up at ${next}`,
  next_run_at: next,
  created_at: day(0),
  ...extra,
});

describe.each(STORE_KINDS.map((s) => [s.name, s] as const))("schedules on %s", (_name, factory) => {
  let store: Store;
  let schedules: Schedules;
  const home = tempHome();

  beforeAll(async () => {
    if (factory.skip) return;
    store = await factory.open(home);
    schedules = schedulesOver(store);
  }, 60_000);
  afterAll(async () => {
    await store?.close();
  });

  it.skipIf(factory.skip)("adds, lists soonest first per fighter, records runs, and removes", async () => {
    const [ada, bo] = [await newFighter(store), await newFighter(store)];
    const later = schedule(ada, day(3), { cron: "0 9 * * *", timezone: "Europe/Paris" });
    const sooner = schedule(ada, day(1));
    const theirs = schedule(bo, day(2));
    for (const s of [later, sooner, theirs]) await schedules.add(s);

    expect(await schedules.list(ada.id)).toEqual([sooner, later]);
    const everyone = (await schedules.list()).map((s) => s.id);
    expect(everyone.indexOf(sooner.id)).toBeLessThan(everyone.indexOf(theirs.id));
    expect(everyone.indexOf(theirs.id)).toBeLessThan(everyone.indexOf(later.id));
    expect(await schedules.get(theirs.id)).toEqual(theirs);

    await schedules.ran(later.id, { at: day(3), status: "completed", next_run_at: day(4) });
    expect((await schedules.list(ada.id)).find((s) => s.id === later.id)).toEqual({
      ...later,
      next_run_at: day(4),
      last_run_at: day(3),
      last_status: "completed",
    });
    // A run with no next time ends the schedule.
    await schedules.ran(sooner.id, { at: day(1), status: "completed" });
    expect((await schedules.list(ada.id)).map((s) => s.id)).toEqual([later.id]);

    expect(await schedules.remove(theirs.id, ada.id)).toBe(false); // not ada's
    expect(await schedules.remove(theirs.id, bo.id)).toBe(true);
    expect(await schedules.remove(theirs.id)).toBe(false);
    expect(await schedules.list(bo.id)).toEqual([]);
  });

  it.skipIf(factory.skip)("keeps schedules due at one time in the order they were added", async () => {
    const cy = await newFighter(store);
    const at = day(-400); // before every other test's: the soonest of all
    const added = [schedule(cy, at), schedule(cy, at), schedule(cy, at)];
    for (const s of added) await schedules.add(s);
    expect((await schedules.list(cy.id)).map((s) => s.id)).toEqual(added.map((s) => s.id));
    expect((await schedules.soonest())?.id).toBe(added[0]?.id);
    const due = (await schedules.due(day(-399))).map((s) => s.id);
    expect(due).toEqual(added.map((s) => s.id));
    for (const s of added) await schedules.remove(s.id);
  });

  it.skipIf(factory.skip)(
    "refuses a schedule for an unknown or killed fighter (FIGHTER_NOT_FOUND)",
    async () => {
      const cy = await newFighter(store);
      await store.fighters.kill(cy.id);
      await expectCode(schedules.add(schedule(cy, day(1))), "FIGHTER_NOT_FOUND");
      await expectCode(
        schedules.add({ ...schedule(cy, day(1)), fighter_id: randomUUID() }),
        "FIGHTER_NOT_FOUND",
      );
    },
  );

  it.skipIf(factory.skip)(
    `holds at most ${MAX_PER_FIGHTER} schedules a fighter (CONFLICT), however many are added at once`,
    async () => {
      const dee = await newFighter(store);
      const first = Array.from({ length: MAX_PER_FIGHTER - 2 }, (_, i) => schedule(dee, day(10 + i)));
      for (const s of first) await schedules.add(s);
      const racing = Array.from({ length: 4 }, () => schedules.add(schedule(dee, day(500))));
      const settled = await Promise.allSettled(racing);
      expect(settled.filter((r) => r.status === "fulfilled")).toHaveLength(2);
      for (const r of settled) {
        if (r.status === "rejected") expect(r.reason).toMatchObject({ code: "CONFLICT" });
      }
      expect(await schedules.list(dee.id)).toHaveLength(MAX_PER_FIGHTER);
    },
    60_000,
  );

  it.skipIf(factory.skip)("keeps every schedule when the store is closed and opened again", async () => {
    const again = tempHome();
    let first: Store | undefined = await factory.open(again);
    const eve = await newFighter(first);
    const kept = schedule(eve, day(2), { cron: "0 16 * * *" });
    await schedulesOver(first).add(kept);
    await schedulesOver(first).ran(kept.id, { at: day(1), status: "PROVIDER_ERROR", next_run_at: day(2) });
    await first.close();
    first = undefined;
    const reopened = await factory.open(again);
    try {
      expect(await schedulesOver(reopened).list(eve.id)).toEqual([
        { ...kept, last_run_at: day(1), last_status: "PROVIDER_ERROR" },
      ]);
    } finally {
      await reopened.close();
    }
  });
});

/** What an older Spar held: ada's three schedules, in the order it added them. */
const LEGACY_FIGHTER = { id: "id-ada", name: "ada" };
const LEGACY: ScheduleRecord[] = [
  {
    id: "s-cron",
    fighter_id: LEGACY_FIGHTER.id,
    message: "tea",
    cron: "0 16 * * *",
    timezone: "Europe/Paris",
    next_run_at: day(2),
    created_at: day(0),
    last_run_at: day(1),
    last_status: "completed",
  },
  { id: "s-once", fighter_id: LEGACY_FIGHTER.id, message: "wake", next_run_at: day(1), created_at: day(0) },
  { id: "s-tie", fighter_id: LEGACY_FIGHTER.id, message: "also", next_run_at: day(1), created_at: day(0) },
];
const COLUMNS = "id, fighter_id, message, cron, timezone, next_run_at, created_at, last_run_at, last_status";
const asRow = (r: ScheduleRecord) => ({
  cron: null,
  timezone: null,
  last_run_at: null,
  last_status: null,
  ...r,
});

/** The legacy schedules, found through the collection in their order, and still the plugin's to change. */
async function expectMoved(store: Store): Promise<void> {
  const schedules = schedulesOver(store);
  expect(await schedules.list(LEGACY_FIGHTER.id)).toEqual([LEGACY[1], LEGACY[2], LEGACY[0]]);
  expect(await schedules.get("s-cron")).toEqual(LEGACY[0]);
  await schedules.ran("s-once", { at: day(1), status: "completed" });
  expect((await schedules.list(LEGACY_FIGHTER.id)).map((s) => s.id)).toEqual(["s-tie", "s-cron"]);
}

describe("schedules an older Spar kept in the Store (store-sqlite, migration 16)", () => {
  it("are found in moves-schedule's collection, in the same order, the old table gone", async () => {
    const home = tempHome();
    const old = await legacySqlite(home, 16);
    const ada = LEGACY_FIGHTER;
    old
      .prepare("INSERT INTO fighters (id, name, manifest, created_at) VALUES (?, ?, ?, ?)")
      .run(ada.id, ada.name, JSON.stringify({ name: "ada" }), day(0));
    const insert = old.prepare(
      `INSERT INTO schedules (${COLUMNS}) VALUES (@id, @fighter_id, @message, @cron, @timezone, @next_run_at, @created_at, @last_run_at, @last_status)`,
    );
    for (const r of LEGACY) insert.run(asRow(r));
    old.close();

    const store = await STORE_KINDS[0]?.open(home);
    if (!store) throw new Error("no store-sqlite");
    try {
      await expectMoved(store);
    } finally {
      await store.close();
    }
    const left = "SELECT count(*) FROM sqlite_master WHERE name = 'schedules'";
    expect(await queryValue(home, left, Buffer.from(MASTER_SECRET))).toBe(0);
  });
});

describe.skipIf(!TEST_DATABASE_URL)(
  `schedules an older Spar kept in the Store (store-postgres, at open)${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    const factory = STORE_KINDS[1];

    it("are found in moves-schedule's collection, in the same order, the old table gone", async () => {
      const home = tempHome();
      const old = await legacyPostgres(home);
      await old.db.query(
        "INSERT INTO fighters (id, name_mac, name_sealed, manifest, created_at) VALUES ($1, $2, $3, $4, $5)",
        [
          LEGACY_FIGHTER.id,
          old.cipher.mac("fighters.name", LEGACY_FIGHTER.name),
          old.cipher.seal("fighters.name_sealed", LEGACY_FIGHTER.name),
          old.cipher.seal("fighters.manifest", JSON.stringify({ name: "ada" })),
          day(0),
        ],
      );
      for (const r of LEGACY) {
        const row = asRow(r);
        await old.db.query(`INSERT INTO schedules (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
          row.id,
          row.fighter_id,
          old.cipher.seal("schedules.message", row.message),
          row.cron,
          row.timezone,
          row.next_run_at,
          row.created_at,
          row.last_run_at,
          row.last_status,
        ]);
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
        const left = await again.db.query("SELECT to_regclass('schedules') AS t");
        expect(left.rows[0]).toEqual({ t: null });
      } finally {
        await again.close();
      }
    });
  },
);
