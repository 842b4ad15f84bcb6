/**
 * The gorilla records through `api.data`, on every store: the collections both scheduler plugins
 * declare (namespace "gorillas"), over an opened store-sqlite and (with SPAR_TEST_DATABASE_URL)
 * store-postgres. These were the store contract's gorilla tests; they pin the same behaviour.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStore } from "../../plugins/store-postgres/store.js";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
import { type DataDeclaration, type FighterRow, SparError, type Store } from "../../sdk/index.js";
import { gorillaRecordsOver, schedulerManifest } from "../../test/helpers/gorilla-records.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import type { GorillaRecords, GorillaRunRecord } from "./records.js";

const MASTER_SECRET = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const DATA = schedulerManifest("scheduler-croner").data as DataDeclaration;

interface StoreFactory {
  name: string;
  open(home: string): Promise<Store>;
  close(): Promise<void>;
  skip?: string;
}

const FACTORIES: StoreFactory[] = [
  {
    name: "store-sqlite",
    open: (home) => openSqliteStore({ home, masterSecret: Buffer.from(MASTER_SECRET) }),
    close: async () => undefined,
  },
  (() => {
    const schemas = new Set<string>();
    return {
      name: "store-postgres",
      ...(TEST_DATABASE_URL ? {} : { skip: SKIP_REASON }),
      open: (home: string) => {
        const schema = schemaForHome(home);
        schemas.add(schema);
        return openPostgresStore(
          { home, masterSecret: Buffer.from(MASTER_SECRET) },
          { url: TEST_DATABASE_URL ?? "", schema, poolMax: 5 },
        );
      },
      close: async () => {
        if (TEST_DATABASE_URL) await dropSchemas(TEST_DATABASE_URL, schemas);
      },
    };
  })(),
];

const homes: string[] = [];
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-gorilla-records-"));
  homes.push(home);
  return home;
}
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SparError);
  expect(err).toMatchObject({ code });
}

const day = (days: number): string =>
  new Date(Date.parse("2026-03-01T00:00:00.000Z") + days * 86_400_000).toISOString();
const noUsage = { input_tokens: 0, output_tokens: 0 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A gorilla name no other test uses. */
const gorilla = (prefix = "gorilla") => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A bout of a new fighter, with one finished turn: what a cycle's run may name. */
async function aBout(store: Store): Promise<string> {
  const name = gorilla("pilot");
  const fighter: FighterRow = {
    id: randomUUID(),
    name,
    manifest: { name, description: `${name} fights`, system_prompt: "Be brief." },
    created_at: day(0),
  };
  await store.fighters.insert(fighter);
  const { turn, bout } = await store.turns.begin({
    fighter_id: fighter.id,
    user: { role: "user", content: "the cycle's bout" },
  });
  await store.turns.finish(turn.id, {
    status: "completed",
    messages: [{ role: "assistant", content: "done" }],
    usage: noUsage,
    iterations: 1,
  });
  return bout.id;
}

describe("both scheduler plugins declare the same collections under one namespace", () => {
  it("declares gorillas, runs and budget cages in scheduler-croner and scheduler-bullmq alike", () => {
    expect(DATA.namespace).toBe("gorillas");
    expect(Object.keys(DATA.collections)).toEqual(["gorillas", "runs", "cages"]);
    expect(schedulerManifest("scheduler-bullmq").data).toEqual(DATA);
  });
});

for (const factory of FACTORIES) {
  const title = `gorilla records: ${factory.name}${factory.skip ? ` (${factory.skip})` : ""}`;
  if (factory.skip) console.warn(title);
  describe.skipIf(factory.skip !== undefined)(title, () => {
    let store: Store;
    let records: GorillaRecords;
    beforeAll(async () => {
      store = await factory.open(tempHome());
      records = gorillaRecordsOver(store);
    });
    afterAll(async () => {
      await store?.close();
      await factory.close();
    });

    /** A run that started and ended at `at` (skipped: the quickest way to place a run in time). */
    const runAt = (name: string, at: string) => records.runs.skipped({ gorilla: name, at, reason: "r" });

    it("keeps the desired state by name; changed_at moves only when it changes; fires are kept", async () => {
      const [kong, joe] = [gorilla("kong"), gorilla("joe")];
      expect(await records.state(kong)).toBeUndefined();

      const unleashed = await records.setDesired(kong, "unleashed");
      expect(unleashed).toEqual({ name: kong, desired: "unleashed", changed_at: expect.any(String) });
      expect(await records.state(kong)).toEqual(unleashed);
      // The same again changes nothing, not even when.
      expect(await records.setDesired(kong, "unleashed")).toEqual(unleashed);

      const caged = await records.setDesired(kong, "caged");
      expect(caged.desired).toBe("caged");
      expect(Date.parse(caged.changed_at)).toBeGreaterThan(Date.parse(unleashed.changed_at));

      expect(await records.recordFire(kong, day(2))).toEqual({ ...caged, last_fire_at: day(2) });
      expect(await records.recordFire(kong, day(3))).toEqual({ ...caged, last_fire_at: day(3) });
      // A fire of a gorilla with no state yet (a manual run of a caged one) records it caged.
      expect(await records.recordFire(joe, day(1))).toEqual({
        name: joe,
        desired: "caged",
        changed_at: expect.any(String),
        last_fire_at: day(1),
      });

      const ours = (await records.states()).filter((s) => s.name === kong || s.name === joe);
      expect(ours).toEqual(
        [await records.state(kong), await records.state(joe)].sort((a, b) =>
          (a?.name ?? "").localeCompare(b?.name ?? ""),
        ),
      );
      const names = (await records.states()).map((s) => s.name);
      expect(names).toEqual([...names].sort());
    });

    it("refuses a desired state, a name or a time it cannot keep (VALIDATION_FAILED)", async () => {
      const mo = gorilla("mo");
      await expectCode(records.setDesired(mo, "rampaging" as "caged"), "VALIDATION_FAILED");
      await expectCode(records.setDesired("", "caged"), "VALIDATION_FAILED");
      await expectCode(records.recordFire(mo, "yesterday-ish"), "VALIDATION_FAILED");
      expect(await records.state(mo)).toBeUndefined();
    });

    it("runs a cycle: begin records it running, finish ends it once, and an ended run never changes", async () => {
      const ape = gorilla("ape");
      const boutId = await aBout(store);
      const pending = records.runs.begin({ gorilla: ape, trigger: "schedule", started_at: day(1) });
      expect(pending).toBeInstanceOf(Promise);
      const run = await pending;
      expect(run).toEqual({
        id: expect.stringMatching(UUID),
        gorilla: ape,
        trigger: "schedule",
        started_at: day(1),
        outcome: "running",
        usage: noUsage,
      });
      expect(await records.runs.get(run.id)).toEqual(run);

      const done = await records.runs.finish(run.id, {
        outcome: "ok",
        usage: { input_tokens: 120, output_tokens: 45 },
        output: "Three new sources; two agree.",
        finished_at: day(1.5),
        bout_id: boutId,
      });
      expect(done).toEqual({
        ...run,
        outcome: "ok",
        finished_at: day(1.5),
        usage: { input_tokens: 120, output_tokens: 45 },
        output: "Three new sources; two agree.",
        bout_id: boutId,
      });
      expect(await records.runs.get(run.id)).toEqual(done);

      await expectCode(
        records.runs.finish(run.id, { outcome: "failed", usage: noUsage, error: "late" }),
        "CONFLICT",
      );
      expect(await records.runs.get(run.id)).toEqual(done);
      await expectCode(records.runs.finish(randomUUID(), { outcome: "ok", usage: noUsage }), "NOT_FOUND");
      expect(await records.runs.get(randomUUID())).toBeUndefined();
    });

    it("has at most one running run per gorilla; failed and aborted runs keep their error", async () => {
      const [bo, other] = [gorilla("bo"), gorilla("other")];
      const first = await records.runs.begin({ gorilla: bo, trigger: "manual" });
      expect(Date.parse(first.started_at)).not.toBeNaN();
      const refused = await records.runs.begin({ gorilla: bo, trigger: "schedule" }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: "CONFLICT", extra: { run_id: first.id } });
      const elsewhere = await records.runs.begin({ gorilla: other, trigger: "catch_up" });
      expect(elsewhere).toMatchObject({ gorilla: other, trigger: "catch_up", outcome: "running" });

      // Refused ends leave the run running.
      await expectCode(
        records.runs.finish(first.id, { outcome: "skipped" as "ok", usage: noUsage }),
        "VALIDATION_FAILED",
      );
      await expectCode(
        records.runs.finish(first.id, { outcome: "ok", usage: { input_tokens: -1, output_tokens: 0 } }),
        "VALIDATION_FAILED",
      );
      await expectCode(
        records.runs.finish(first.id, { outcome: "ok", usage: noUsage, bout_id: randomUUID() }),
        "BOUT_NOT_FOUND",
      );
      expect(await records.runs.get(first.id)).toEqual(first);

      const failed = await records.runs.finish(first.id, {
        outcome: "failed",
        usage: { input_tokens: 900, output_tokens: 100 },
        error: "max_tokens reached (1000)",
      });
      expect(failed).toMatchObject({ outcome: "failed", error: "max_tokens reached (1000)" });
      expect(failed).not.toHaveProperty("output");
      expect(Date.parse(failed.finished_at ?? "")).toBeGreaterThanOrEqual(Date.parse(first.started_at));

      const second = await records.runs.begin({ gorilla: bo, trigger: "schedule" });
      const aborted = await records.runs.finish(second.id, {
        outcome: "aborted",
        usage: { input_tokens: 3, output_tokens: 0 },
        error: "caged",
      });
      expect(aborted).toMatchObject({ id: second.id, outcome: "aborted", error: "caged" });
      await records.runs.finish(elsewhere.id, { outcome: "ok", usage: noUsage, output: "" });
      expect(await records.runs.get(elsewhere.id)).toMatchObject({ output: "" });
    });

    it("lets one of many begins racing for a gorilla win, and one of two finishes", async () => {
      const race = gorilla("race");
      // Two plugins' handles, as two scheduler plugins (or two daemons) would have them.
      const others = [records, gorillaRecordsOver(store, "scheduler-bullmq")];
      const tries = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) =>
          (others[i % 2] as GorillaRecords).runs.begin({ gorilla: race, trigger: "schedule" }),
        ),
      );
      const won = tries.filter((t) => t.status === "fulfilled");
      expect(won).toHaveLength(1);
      const run = (won[0] as PromiseFulfilledResult<GorillaRunRecord>).value;
      for (const t of tries.filter((t) => t.status === "rejected")) {
        expect((t as PromiseRejectedResult).reason).toMatchObject({
          code: "CONFLICT",
          extra: { run_id: run.id },
        });
      }
      const ends = await Promise.allSettled(
        others.map((r, i) => r.runs.finish(run.id, { outcome: i === 0 ? "ok" : "aborted", usage: noUsage })),
      );
      expect(ends.filter((e) => e.status === "fulfilled")).toHaveLength(1);
      expect(ends.filter((e) => e.status === "rejected")).toMatchObject([{ reason: { code: "CONFLICT" } }]);
    });

    it("cuts an output past 256 KiB of UTF-8 to fit, with a marker, never splitting a character", async () => {
      const big = gorilla("big");
      const end = async (output: string) => {
        const run = await records.runs.begin({ gorilla: big, trigger: "manual" });
        await records.runs.finish(run.id, { outcome: "ok", usage: noUsage, output });
        return (await records.runs.get(run.id))?.output ?? "";
      };
      const exact = "a".repeat(256 * 1024);
      expect(await end(exact)).toBe(exact);

      const long = "é".repeat(200_000); // 400,000 bytes
      const kept = await end(long);
      const marker = "\n[cut: 400000 bytes in all]";
      expect(kept.endsWith(marker)).toBe(true);
      expect(Buffer.byteLength(kept, "utf8")).toBeLessThanOrEqual(256 * 1024);
      const head = kept.slice(0, -marker.length);
      expect(head.length).toBeGreaterThan(100_000);
      expect(head).toBe("é".repeat(head.length));

      // An error is cut the same way.
      const run = await records.runs.begin({ gorilla: big, trigger: "manual" });
      const failed = await records.runs.finish(run.id, { outcome: "failed", usage: noUsage, error: long });
      expect(failed.error?.endsWith(marker)).toBe(true);
      expect((await records.runs.get(run.id))?.error).toBe(failed.error);
    });

    it("records a skipped fire as a run that ended when it started, with the reason", async () => {
      const cy = gorilla("cy");
      const running = await records.runs.begin({ gorilla: cy, trigger: "schedule", started_at: day(1) });
      const skipped = await records.runs.skipped({
        gorilla: cy,
        at: day(1.25),
        reason: "a cycle was still running",
      });
      expect(skipped).toEqual({
        id: expect.stringMatching(UUID),
        gorilla: cy,
        trigger: "schedule",
        started_at: day(1.25),
        finished_at: day(1.25),
        outcome: "skipped",
        usage: noUsage,
        error: "a cycle was still running",
      });
      expect(await records.runs.get(skipped.id)).toEqual(skipped);
      const missed = await records.runs.skipped({
        gorilla: cy,
        at: day(0.5),
        reason: "missed while the daemon was down",
        trigger: "catch_up",
      });
      expect(missed).toMatchObject({ trigger: "catch_up", outcome: "skipped" });
      await expectCode(records.runs.finish(skipped.id, { outcome: "ok", usage: noUsage }), "CONFLICT");
      expect(await records.runs.get(running.id)).toEqual(running);
    });

    it("lists runs newest first, a page at a time after a run id, ties in the order recorded", async () => {
      const [dee, ely] = [gorilla("dee"), gorilla("ely")];
      const d1 = await runAt(dee, day(1));
      const d3 = await runAt(dee, day(3));
      const d2a = await runAt(dee, day(2));
      const d2b = await runAt(dee, day(2));
      const d4 = await records.runs.begin({ gorilla: dee, trigger: "manual", started_at: day(4) });
      await runAt(ely, day(5));
      const ids = (runs: { id: string }[]) => runs.map((r) => r.id);

      expect(ids(await records.runs.list(dee, { limit: 10 }))).toEqual(ids([d4, d3, d2b, d2a, d1]));
      const page1 = await records.runs.list(dee, { limit: 2 });
      expect(page1).toEqual([d4, d3]);
      const page2 = await records.runs.list(dee, { limit: 2, before: d3.id });
      expect(ids(page2)).toEqual(ids([d2b, d2a]));
      const page3 = await records.runs.list(dee, { limit: 2, before: d2a.id });
      expect(ids(page3)).toEqual(ids([d1]));
      expect(await records.runs.list(dee, { limit: 2, before: d1.id })).toEqual([]);
      expect(await records.runs.list(gorilla("nobody"), { limit: 5 })).toEqual([]);

      // Ending a run keeps its place among runs that started at the same time.
      const ended = await records.runs.finish(d4.id, { outcome: "ok", usage: noUsage });
      expect(await records.runs.list(dee, { limit: 10 })).toEqual([ended, d3, d2b, d2a, d1]);

      const elys = await records.runs.list(ely, { limit: 5 });
      expect(elys).toHaveLength(1);
      await expectCode(records.runs.list(dee, { limit: 2, before: elys[0]?.id }), "NOT_FOUND");
      await expectCode(records.runs.list(dee, { limit: 2, before: randomUUID() }), "NOT_FOUND");
      await expectCode(records.runs.list(dee, { limit: 0 }), "VALIDATION_FAILED");
    });

    it("keeps many runs sharing one start time in order across pages", async () => {
      const hal = gorilla("hal");
      const same: GorillaRunRecord[] = [];
      for (let i = 0; i < 12; i++) same.push(await runAt(hal, day(7)));
      const seen: string[] = [];
      let before: string | undefined;
      for (;;) {
        const page = await records.runs.list(hal, { limit: 5, ...(before ? { before } : {}) });
        seen.push(...page.map((r) => r.id));
        if (page.length < 5) break;
        before = page.at(-1)?.id;
      }
      expect(seen).toEqual(same.map((r) => r.id).reverse());
    });

    it("prunes to the newest runs of one gorilla, never a running one", async () => {
      const [fay, gus] = [gorilla("fay"), gorilla("gus")];
      const running = await records.runs.begin({ gorilla: fay, trigger: "schedule", started_at: day(0) });
      const ended = [];
      for (const d of [1, 2, 3, 4, 5]) ended.push(await runAt(fay, day(d)));
      const theirs = [await runAt(gus, day(1)), await runAt(gus, day(2))];
      const ids = async (name: string) => (await records.runs.list(name, { limit: 50 })).map((r) => r.id);

      expect(await records.runs.prune(fay, 2)).toBe(3);
      expect(await ids(fay)).toEqual([ended[4]?.id, ended[3]?.id, running.id]);
      expect(await records.runs.get(ended[0]?.id ?? "")).toBeUndefined();
      expect(await records.runs.prune(fay, 2)).toBe(0);
      expect(await records.runs.prune(fay, 0)).toBe(2);
      expect(await ids(fay)).toEqual([running.id]);
      expect(await ids(gus)).toEqual([theirs[1]?.id, theirs[0]?.id]);
      await expectCode(records.runs.prune(fay, -1), "VALIDATION_FAILED");
    });

    it("prunes ties by the order recorded: the later recorded of one start time are kept", async () => {
      const ivy = gorilla("ivy");
      const runs: GorillaRunRecord[] = [];
      for (let i = 0; i < 6; i++) runs.push(await runAt(ivy, day(3)));
      expect(await records.runs.prune(ivy, 4)).toBe(2);
      const kept = (await records.runs.list(ivy, { limit: 10 })).map((r) => r.id);
      expect(kept).toEqual(
        runs
          .slice(2)
          .map((r) => r.id)
          .reverse(),
      );
    });

    describe("close and reopen", () => {
      const home = tempHome();
      const kong = gorilla("kong");
      let reopened: Store | undefined;
      let again: GorillaRecords;
      let cycles: { done: GorillaRunRecord; left: GorillaRunRecord };
      afterAll(async () => {
        await reopened?.close();
      });

      it("keeps the desired state and every run", async () => {
        const first = await factory.open(home);
        const r = gorillaRecordsOver(first);
        const boutId = await aBout(first);
        await r.setDesired(kong, "unleashed");
        await r.recordFire(kong, day(2));
        const cycle = await r.runs.begin({ gorilla: kong, trigger: "schedule", started_at: day(1) });
        cycles = {
          done: await r.runs.finish(cycle.id, {
            outcome: "ok",
            usage: { input_tokens: 5, output_tokens: 2 },
            output: "tea prices steady",
            finished_at: day(1.1),
            bout_id: boutId,
          }),
          left: await r.runs.begin({ gorilla: kong, trigger: "schedule", started_at: day(2) }),
        };
        await r.runs.skipped({ gorilla: kong, at: day(2.1), reason: "a cycle was still running" });
        const before = { state: await r.state(kong), runs: await r.runs.list(kong, { limit: 10 }) };
        expect(before.state).toMatchObject({ desired: "unleashed", last_fire_at: day(2) });
        expect(before.runs.map((run) => run.outcome)).toEqual(["skipped", "running", "ok"]);
        await first.close();

        reopened = await factory.open(home);
        again = gorillaRecordsOver(reopened, "scheduler-bullmq");
        expect({ state: await again.state(kong), runs: await again.runs.list(kong, { limit: 10 }) }).toEqual(
          before,
        );
      });

      it("fails the runs left running at start (daemon restarted); the desired state is kept", async () => {
        expect(await again.state(kong)).toMatchObject({ desired: "unleashed" });
        expect(await again.runs.abandon(day(3))).toBe(1);
        expect(await again.runs.get(cycles.left.id)).toEqual({
          ...cycles.left,
          outcome: "failed",
          error: "daemon restarted",
          finished_at: day(3),
        });
        expect(await again.runs.get(cycles.done.id)).toEqual(cycles.done);
        expect(await again.runs.abandon(day(3))).toBe(0);
        // The gorilla can run again.
        const next = await again.runs.begin({ gorilla: kong, trigger: "catch_up" });
        expect(next.outcome).toBe("running");
      });
    });
  });
}
