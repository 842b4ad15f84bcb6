/**
 * The store contract: every store plugin passes this same suite, once per factory below. It speaks
 * only the kernel's `Store` interface, so it pins what the kernel may rely on from any store; what
 * one store does beyond that (SQLite's encryption, migrations, ranking details) is tested beside it.
 *
 * A factory opens the store kept under a home directory; opening the same home again must show the
 * same data. Most tests share one store and make their own fighters, so they never see each other.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStore } from "../../plugins/store-postgres/store.js";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
import { SparError } from "../../sdk/errors.js";
import type {
  BoutRecord,
  ChatMessage,
  FighterRow,
  Store,
  StoredReply,
  TurnEnd,
  TurnRecord,
  TurnStart,
  UsageQuery,
  UsageRecord,
} from "../../sdk/index.js";
import { TURN_TAINT_KEPT } from "../../sdk/store-rows.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "../helpers/postgres.js";

interface StoreFactory {
  /** Shown in the suite's name. */
  name: string;
  /** Opens the store whose data lives under `home`: a fresh directory, or one opened (and closed) before. */
  open(home: string): Promise<Store>;
  /** Once the suite is done: releases what `open` made outside the homes (a server's databases, say). */
  close(): Promise<void>;
  /** Why this store cannot be tested here (a server it needs is not configured); absent to run it. */
  skip?: string;
}

const MASTER_SECRET = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/** The compiled integrity worker: from sources it is absent, and the check reports `unchecked`. */
const BUILT_WORKER = new URL("../../dist/plugins/store-sqlite/integrity-worker.js", import.meta.url);

const FACTORIES: StoreFactory[] = [
  {
    name: "store-sqlite",
    // A fresh buffer per open: the secret is the caller's, and the kernel zeroizes it after use.
    open: (home) =>
      openSqliteStore({ home, masterSecret: Buffer.from(MASTER_SECRET) }, { integrityWorker: BUILT_WORKER }),
    close: async () => undefined,
  },
  (() => {
    // Each home is its own PostgreSQL schema, made by the store on first open, dropped at the end.
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

// ---- helpers: records to store, and the calls most tests make ----

const homes: string[] = [];
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-store-contract-"));
  homes.push(home);
  return home;
}
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

let serial = 0;
const T0 = Date.parse("2026-01-01T00:00:00.000Z");

/** A fighter nobody else uses, created a second after the previous one. */
function fighterRow(prefix = "fighter"): FighterRow {
  serial += 1;
  const name = `${prefix}-${serial}`;
  return {
    id: randomUUID(),
    name,
    manifest: { name, description: `${name} fights`, system_prompt: "Be brief.", skills: ["tea"] },
    created_at: new Date(T0 + serial * 1000).toISOString(),
  };
}

async function newFighter(store: Store, prefix?: string): Promise<FighterRow> {
  const row = fighterRow(prefix);
  await store.fighters.insert(row);
  return row;
}

const user = (content: string): ChatMessage & { role: "user" } => ({ role: "user", content });
const said = (content: string): ChatMessage => ({ role: "assistant", content });
const asks = (id: string, name: string, args: Record<string, unknown>): ChatMessage => ({
  role: "assistant",
  content: "",
  tool_calls: [{ id, name, arguments: args }],
});
/** A tool's result; `is_error` only when it failed, as a provider sends it. */
const answers = (id: string, name: string, content: string, failed = false): ChatMessage => ({
  role: "tool",
  tool_call_id: id,
  name,
  content,
  ...(failed ? { is_error: true } : {}),
});

function begin(store: Store, fighter: FighterRow, text: string, extra: Partial<TurnStart> = {}) {
  return store.turns.begin({ fighter_id: fighter.id, user: user(text), ...extra });
}

/** A turn's end: completed, nothing spent, unless told otherwise. */
function ending(end: Partial<TurnEnd> = {}): TurnEnd {
  return {
    status: "completed",
    messages: [],
    usage: { input_tokens: 0, output_tokens: 0 },
    iterations: 1,
    ...end,
  };
}

/** One model call for the usage ledger: an openai call by a user, priced in USD, unless told otherwise. */
function call(fighter: FighterRow, entry: Partial<UsageRecord> = {}): UsageRecord {
  return {
    fighter_id: fighter.id,
    origin: "user",
    provider: "openai",
    model: "m",
    at: day(1),
    input_tokens: 0,
    output_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    cost_micros: 0,
    currency: "USD",
    ...entry,
  };
}

/** One whole turn: the user's text and the fighter's reply, in `boutId` or a new bout. */
async function exchange(
  store: Store,
  fighter: FighterRow,
  text: string,
  boutId?: string,
): Promise<{ turn: TurnRecord; bout: BoutRecord }> {
  const { turn, bout } = await begin(store, fighter, text, boutId ? { bout_id: boutId } : {});
  return { turn: await store.turns.finish(turn.id, ending({ messages: [said(`re: ${text}`)] })), bout };
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SparError);
  expect(err).toMatchObject({ code });
}

function isIncreasing(values: number[]): boolean {
  return values.every((value, i) => i === 0 || value > (values[i - 1] as number));
}

const day = (days: number): string =>
  new Date(Date.parse("2026-03-01T00:00:00.000Z") + days * 86_400_000).toISOString();

for (const factory of FACTORIES) {
  const title = `store contract: ${factory.name}${factory.skip ? ` (${factory.skip})` : ""}`;
  // Reporters list a skipped suite only as a count: say once, and why, that this half did not run.
  if (factory.skip) console.warn(title);
  describe.skipIf(factory.skip !== undefined)(title, () => {
    let store: Store;
    beforeAll(async () => {
      store = await factory.open(tempHome());
    });
    afterAll(async () => {
      await store?.close();
      await factory.close();
    });

    describe("health", () => {
      it("is ok, and so is the integrity check it ran when it opened", async () => {
        expect(store.health()).toEqual({ status: "ok" });
        const check = await store.integrity();
        expect(check).toMatchObject({ status: "ok", checked: expect.any(Boolean) });
        expect(await store.integrity()).toEqual(check);
      });
    });

    describe("fighters", () => {
      it("lists live fighters oldest first and finds them by id and by name", async () => {
        const [older, newer] = [fighterRow("ann"), fighterRow("ben")];
        await store.fighters.insert(newer);
        await store.fighters.insert(older);
        const ours = (await store.fighters.list()).filter((f) => f.id === older.id || f.id === newer.id);
        expect(ours).toEqual([older, newer]);
        expect(await store.fighters.get(older.id)).toEqual(older);
        expect(await store.fighters.getByName(newer.name)).toEqual(newer);
        expect(await store.fighters.get(randomUUID())).toBeUndefined();
        expect(await store.fighters.getByName("nobody-by-this-name")).toBeUndefined();
      });

      it("kill takes a fighter out of the registry and keeps its bouts, turns and messages", async () => {
        const cy = await newFighter(store, "cy");
        const { turn, bout } = await exchange(store, cy, "remember me");

        expect(await store.fighters.kill(cy.id)).toBe(true);
        expect(await store.fighters.kill(cy.id)).toBe(false);
        expect(await store.fighters.kill(randomUUID())).toBe(false);
        expect(await store.fighters.get(cy.id)).toBeUndefined();
        expect(await store.fighters.getByName(cy.name)).toBeUndefined();
        expect((await store.fighters.list()).map((f) => f.id)).not.toContain(cy.id);
        expect(await store.bouts.list(cy.id)).toMatchObject([{ id: bout.id, message_count: 2 }]);
        expect((await store.messages.list(bout.id)).map((m) => m.content)).toEqual([
          "remember me",
          "re: remember me",
        ]);
        expect(await store.turns.get(turn.id)).toEqual(turn);
        await expectCode(begin(store, cy, "are you there?"), "FIGHTER_NOT_FOUND");
      });

      it("keeps live names and ids unique (CONFLICT) and frees a killed fighter's name", async () => {
        const first = await newFighter(store, "di");
        await expectCode(store.fighters.insert({ ...fighterRow(), name: first.name }), "CONFLICT");
        await expectCode(store.fighters.insert({ ...fighterRow(), id: first.id }), "CONFLICT");

        await store.fighters.kill(first.id);
        const second = { ...fighterRow(), name: first.name };
        await store.fighters.insert(second);
        expect(await store.fighters.getByName(first.name)).toEqual(second);
        await expectCode(store.fighters.insert({ ...fighterRow(), name: first.name }), "CONFLICT");
      });
    });

    describe("bouts", () => {
      it("begin without a bout starts one; with one, continues it", async () => {
        const eve = await newFighter(store);
        const started = await begin(store, eve, "one");
        expect(started.bout_created).toBe(true);
        expect(started.bout).toMatchObject({ fighter_id: eve.id, message_count: 1 });
        expect(await store.bouts.get(started.bout.id)).toEqual(started.bout);
        await store.turns.finish(started.turn.id, ending({ messages: [said("two")] }));

        const continued = await begin(store, eve, "three", { bout_id: started.bout.id });
        expect(continued.bout_created).toBe(false);
        expect(continued.bout).toMatchObject({ id: started.bout.id, fighter_id: eve.id, message_count: 3 });
        expect(continued.turn.bout_id).toBe(started.bout.id);
      });

      it("lists a fighter's bouts most recently updated first; latest is the first of them", async () => {
        const fay = await newFighter(store);
        expect(await store.bouts.latest(fay.id)).toBeUndefined();
        expect(await store.bouts.list(fay.id)).toEqual([]);

        const a = await exchange(store, fay, "in a");
        const b = await exchange(store, fay, "in b");
        expect((await store.bouts.latest(fay.id))?.id).toBe(b.bout.id);
        await exchange(store, fay, "back in a", a.bout.id);

        const listed = await store.bouts.list(fay.id);
        expect(listed.map((bout) => [bout.id, bout.message_count])).toEqual([
          [a.bout.id, 4],
          [b.bout.id, 2],
        ]);
        expect(await store.bouts.latest(fay.id)).toEqual(listed[0]);
        expect(await store.bouts.get(randomUUID())).toBeUndefined();
      });

      it("keeps a bout's origin; latest is of one origin, a user's bouts (no origin) by default", async () => {
        const ida = await newFighter(store);
        const mine = await exchange(store, ida, "the user's");
        const fromMo = await begin(store, ida, "from mo", { origin: "fighter:mo" });
        expect(fromMo.bout_created).toBe(true);
        expect(fromMo.bout).toMatchObject({ fighter_id: ida.id, origin: "fighter:mo" });
        await store.turns.finish(fromMo.turn.id, ending());
        const fromTask = await begin(store, ida, "a step", { origin: "troop-task:t1" });
        await store.turns.finish(fromTask.turn.id, ending());

        // The newest bouts are the others', yet the user's is still their latest.
        expect(await store.bouts.latest(ida.id)).toEqual(await store.bouts.get(mine.bout.id));
        expect(await store.bouts.get(mine.bout.id)).not.toHaveProperty("origin");
        expect((await store.bouts.latest(ida.id, "fighter:mo"))?.id).toBe(fromMo.bout.id);
        expect(await store.bouts.latest(ida.id, "fighter:nobody")).toBeUndefined();
        expect((await store.bouts.list(ida.id)).map((b) => [b.id, b.origin])).toEqual([
          [fromTask.bout.id, "troop-task:t1"],
          [fromMo.bout.id, "fighter:mo"],
          [mine.bout.id, undefined],
        ]);
        // Continuing a bout keeps its origin, whatever the turn says.
        const again = await begin(store, ida, "more", { bout_id: fromMo.bout.id, origin: "fighter:other" });
        expect(again.bout).toMatchObject({ id: fromMo.bout.id, origin: "fighter:mo", message_count: 2 });
      });

      it("refuses an unknown bout and another fighter's (BOUT_NOT_FOUND), storing nothing", async () => {
        const [gil, hal] = [await newFighter(store), await newFighter(store)];
        const theirs = await exchange(store, hal, "mine");
        await expectCode(begin(store, gil, "let me in", { bout_id: theirs.bout.id }), "BOUT_NOT_FOUND");
        await expectCode(begin(store, gil, "or here", { bout_id: randomUUID() }), "BOUT_NOT_FOUND");
        expect(await store.bouts.list(gil.id)).toEqual([]);
        expect(await store.messages.list(theirs.bout.id)).toHaveLength(2);
        expect(await store.turns.list(theirs.bout.id)).toHaveLength(1);
      });
    });

    describe("turns and their messages", () => {
      it("begin records a running turn and its user message, which names the turn", async () => {
        const ivy = await newFighter(store);
        const { turn, bout } = await begin(store, ivy, "hello");
        expect(turn).toMatchObject({
          bout_id: bout.id,
          fighter_id: ivy.id,
          status: "running",
          started_at: expect.any(String),
          usage: { input_tokens: 0, output_tokens: 0 },
          iterations: 0,
        });
        expect(turn.finished_at).toBeUndefined();
        expect(turn.error).toBeUndefined();
        expect(await store.turns.get(turn.id)).toEqual(turn);
        expect(await store.messages.list(bout.id)).toEqual([
          {
            role: "user",
            content: "hello",
            id: expect.any(String),
            bout_id: bout.id,
            seq: 1,
            created_at: expect.any(String),
            turn_id: turn.id,
          },
        ]);
      });

      it("appends steps in order after the last seq, round-tripping tool calls and errors", async () => {
        const jo = await newFighter(store);
        const { turn, bout } = await begin(store, jo, "look it up");
        const call: ChatMessage = {
          role: "assistant",
          content: "Let me look.",
          tool_calls: [
            { id: "call-1", name: "search", arguments: { q: "tea", n: 2, deep: { on: true } } },
            { id: "call-2", name: "fetch", arguments: {}, raw_arguments: "{not json" },
          ],
        };
        const failed = answers("call-1", "search", "timed out", true);
        const fine = answers("call-2", "fetch", "ok");

        const first = await store.turns.append(turn.id, [call]);
        const second = await store.turns.append(turn.id, [failed, fine]);
        expect(first).toMatchObject([{ ...call, seq: 2, bout_id: bout.id, turn_id: turn.id }]);
        expect(second).toMatchObject([
          { ...failed, seq: 3, turn_id: turn.id },
          { ...fine, seq: 4, turn_id: turn.id },
        ]);
        expect(second[1]).not.toHaveProperty("is_error", true);

        // What append returned is what list reads back.
        const listed = await store.messages.list(bout.id);
        expect(listed.slice(1)).toEqual([...first, ...second]);
        expect((await store.bouts.get(bout.id))?.message_count).toBe(4);
      });

      it("finish completes a turn with its final messages, usage, iterations, model and stop reason", async () => {
        const kit = await newFighter(store);
        const { turn, bout } = await begin(store, kit, "hi");
        const done = await store.turns.finish(turn.id, {
          status: "completed",
          messages: [said("Hello!")],
          usage: { input_tokens: 12, output_tokens: 4 },
          iterations: 2,
          model: "gpt-fake-0613",
          stop_reason: "end",
        });
        expect(done).toMatchObject({
          id: turn.id,
          bout_id: bout.id,
          status: "completed",
          started_at: turn.started_at,
          finished_at: expect.any(String),
          usage: { input_tokens: 12, output_tokens: 4 },
          iterations: 2,
          model: "gpt-fake-0613",
          stop_reason: "end",
        });
        expect(done.error).toBeUndefined();
        expect(await store.turns.get(turn.id)).toEqual(done);
        expect(await store.messages.list(bout.id)).toMatchObject([
          { role: "user", content: "hi", seq: 1, turn_id: turn.id },
          { role: "assistant", content: "Hello!", seq: 2, turn_id: turn.id },
        ]);
        // The ledger is written per model call as each returns (lib/usage-meter.ts), never by finish.
        expect(await store.usage.summary(kit.id)).toEqual([]);
      });

      it.each(["failed", "cancelled"] as const)(
        "finish records a %s turn with its error, keeping the steps it took",
        async (status) => {
          const lou = await newFighter(store);
          const { turn, bout } = await begin(store, lou, "do it");
          await store.turns.append(turn.id, [asks("call-9", "shell", { cmd: "ls" })]);
          const error = {
            code: status === "failed" ? "PROVIDER_ERROR" : "CANCELLED",
            message: `it ${status}`,
          };
          const ended = await store.turns.finish(
            turn.id,
            ending({
              status,
              error,
              messages: [answers("call-9", "shell", error.message, true)],
            }),
          );
          expect(ended).toMatchObject({ id: turn.id, status, error, finished_at: expect.any(String) });
          expect(await store.turns.get(turn.id)).toEqual(ended);
          expect((await store.messages.list(bout.id)).map((m) => m.role)).toEqual([
            "user",
            "assistant",
            "tool",
          ]);
        },
      );

      it("refuses to change an ended turn (CONFLICT), and a turn it does not know", async () => {
        const ned = await newFighter(store);
        const { turn, bout } = await exchange(store, ned, "once");
        await expectCode(store.turns.finish(turn.id, ending({ messages: [said("twice")] })), "CONFLICT");
        await expectCode(store.turns.append(turn.id, [said("late")]), "CONFLICT");
        expect((await store.messages.list(bout.id)).map((m) => m.content)).toEqual(["once", "re: once"]);
        expect(await store.turns.get(turn.id)).toEqual(turn);

        await expectCode(store.turns.append(randomUUID(), [said("lost")]), "NOT_FOUND");
        await expectCode(store.turns.finish(randomUUID(), ending()), "NOT_FOUND");
        expect(await store.turns.get(randomUUID())).toBeUndefined();
      });

      it("lists a bout's turns oldest first, and every message names its turn", async () => {
        const oz = await newFighter(store);
        const first = await exchange(store, oz, "one");
        const second = await exchange(store, oz, "two", first.bout.id);
        const third = await begin(store, oz, "three", { bout_id: first.bout.id });

        const turns = await store.turns.list(first.bout.id);
        expect(turns.map((t) => [t.id, t.status])).toEqual([
          [first.turn.id, "completed"],
          [second.turn.id, "completed"],
          [third.turn.id, "running"],
        ]);
        expect(turns[0]).toEqual(first.turn);
        expect((await store.messages.list(first.bout.id)).map((m) => m.turn_id)).toEqual([
          first.turn.id,
          first.turn.id,
          second.turn.id,
          second.turn.id,
          third.turn.id,
        ]);
        expect(await store.turns.list(randomUUID())).toEqual([]);
      });

      it("lists only the turns that did not complete, oldest first", async () => {
        const pia = await newFighter(store);
        const done = await exchange(store, pia, "done");
        const failed = await begin(store, pia, "fails", { bout_id: done.bout.id });
        await store.turns.finish(
          failed.turn.id,
          ending({ status: "failed", error: { code: "X", message: "x" } }),
        );
        await exchange(store, pia, "done too", done.bout.id);
        const running = await begin(store, pia, "runs", { bout_id: done.bout.id });

        expect((await store.turns.unfinished(done.bout.id)).map((t) => [t.id, t.status])).toEqual([
          [failed.turn.id, "failed"],
          [running.turn.id, "running"],
        ]);
        expect(await store.turns.unfinished(randomUUID())).toEqual([]);
      });
    });

    describe("turns of one fighter left running", () => {
      it("abandon with a fighter fails only that fighter's running turns, and refuses their late writes", async () => {
        const [ida, ivo] = [await newFighter(store), await newFighter(store)];
        const orphan = await begin(store, ida, "left by a dead node");
        const other = await begin(store, ivo, "still running elsewhere");
        const error = { code: "INTERRUPTED", message: "its node stopped" };

        expect(await store.turns.abandon(error, ida.id)).toBe(1);

        expect(await store.turns.get(orphan.turn.id)).toMatchObject({ status: "failed", error });
        expect((await store.turns.get(other.turn.id))?.status).toBe("running");
        // The dead node's late writes are refused: only running turns take steps.
        const late = [
          store.turns.append(orphan.turn.id, [said("late")]),
          store.turns.finish(orphan.turn.id, ending({ status: "completed" })),
        ];
        for (const write of late) await expect(write).rejects.toMatchObject({ code: "CONFLICT" });
        expect(await store.turns.abandon(error, ida.id)).toBe(0);
        await store.turns.finish(other.turn.id, ending({ status: "completed" }));
      });
    });

    describe("a turn awaiting an approval", () => {
      it("pauses with its taint so far, takes no steps, survives abandon, resumes and ends with its taint", async () => {
        const ada = await newFighter(store);
        const { turn } = await begin(store, ada, "run the installer");
        await store.turns.append(turn.id, [asks("call-1", "shell_exec", { argv: ["make"] })]);
        const web = { kind: "web" as const, detail: "https://evil.example/page", move: "web_fetch" };
        const paused = await store.turns.pause(turn.id, [web]);
        expect(paused).toMatchObject({ id: turn.id, status: "awaiting_approval", taint: [web] });
        expect(paused.finished_at).toBeUndefined();
        expect((await store.turns.awaiting()).map((t) => t.id)).toContain(turn.id);
        // It waits: no steps, no end, and a restart's abandon leaves it for the resume.
        await expectCode(store.turns.append(turn.id, [said("late")]), "CONFLICT");
        await expectCode(store.turns.finish(turn.id, ending()), "CONFLICT");
        await expectCode(store.turns.pause(turn.id, []), "CONFLICT");
        await store.turns.abandon({ code: "INTERRUPTED", message: "stopped" });
        await store.turns.abandon({ code: "INTERRUPTED", message: "stopped" }, ada.id);
        expect(await store.turns.get(turn.id)).toEqual(paused);
        expect((await store.turns.unfinished(paused.bout_id)).map((t) => t.id)).toEqual([turn.id]);

        expect(await store.turns.resume(turn.id)).toMatchObject({ status: "running", taint: [web] });
        await expectCode(store.turns.resume(turn.id), "CONFLICT");
        expect((await store.turns.awaiting()).map((t) => t.id)).not.toContain(turn.id);
        await store.turns.append(turn.id, [answers("call-1", "shell_exec", "ok")]);
        const mcp = { kind: "mcp" as const, detail: "mail/read" };
        const many = Array.from({ length: 30 }, (_, i) => ({
          kind: "web" as const,
          detail: `https://x/${i}`,
        }));
        const done = await store.turns.finish(turn.id, ending({ taint: [web, mcp, ...many] }));
        expect(done.taint).toEqual([web, mcp, ...many].slice(0, TURN_TAINT_KEPT));
        expect((await store.turns.list(done.bout_id))[0]?.taint).toEqual(done.taint);
        await expectCode(store.turns.pause(randomUUID(), []), "NOT_FOUND");
      });

      it("keeps a turn's taint absent when it took in none, and a pause's taint when it ends", async () => {
        const bo = await newFighter(store);
        const clean = await exchange(store, bo, "hello");
        expect(clean.turn.taint).toBeUndefined();
        const { turn } = await begin(store, bo, "read the page");
        const web = { kind: "web" as const, detail: "https://a.example/" };
        await store.turns.pause(turn.id, [web]);
        await store.turns.resume(turn.id);
        expect((await store.turns.finish(turn.id, ending({ status: "cancelled" }))).taint).toEqual([web]);
      });
    });

    describe("concurrent calls", () => {
      it("keeps appends to one turn, started without waiting, in call order", async () => {
        const pat = await newFighter(store);
        const { turn, bout } = await begin(store, pat, "go");
        const steps = Array.from({ length: 30 }, (_, i) => [
          said(`step ${i}`),
          answers(`c${i}`, "t", `done ${i}`),
        ]);

        const appended = await Promise.all(steps.map((messages) => store.turns.append(turn.id, messages)));

        const seqs = appended.flat().map((m) => m.seq);
        expect(isIncreasing([1, ...seqs])).toBe(true);
        expect(appended.flat().map((m) => m.content)).toEqual(steps.flat().map((m) => m.content));
        const listed = await store.messages.list(bout.id);
        expect(listed.map((m) => m.content)).toEqual(["go", ...steps.flat().map((m) => m.content)]);
        expect(listed.map((m) => m.seq)).toEqual([1, ...seqs]);
      });

      it("keeps turns begun and stepped at once on different fighters and bouts apart", async () => {
        const fighters = [await newFighter(store), await newFighter(store), await newFighter(store)];
        const earlier = await Promise.all(fighters.map((f) => exchange(store, f, `${f.name} before`)));
        // Each fighter starts a new bout and continues its earlier one, all at once.
        const starts = fighters.flatMap((f, i) => [
          { fighter: f, label: `${f.name} new`, bout_id: undefined },
          { fighter: f, label: `${f.name} continued`, bout_id: earlier[i]?.bout.id },
        ]);
        const begun = await Promise.all(
          starts.map((s) => begin(store, s.fighter, s.label, s.bout_id ? { bout_id: s.bout_id } : {})),
        );
        const rounds = [0, 1, 2, 3];
        await Promise.all(
          rounds.flatMap((r) =>
            begun.map((b, i) => store.turns.append(b.turn.id, [said(`${starts[i]?.label} ${r}`)])),
          ),
        );

        for (const [i, { turn, bout, bout_created }] of begun.entries()) {
          const start = starts[i] as (typeof starts)[number];
          expect(bout_created).toBe(start.bout_id === undefined);
          expect(bout.fighter_id).toBe(start.fighter.id);
          const messages = (await store.messages.list(bout.id)).filter((m) => m.turn_id === turn.id);
          expect(messages.map((m) => m.content)).toEqual([
            start.label,
            ...rounds.map((r) => `${start.label} ${r}`),
          ]);
          expect(isIncreasing(messages.map((m) => m.seq))).toBe(true);
        }
        for (const [i, f] of fighters.entries()) {
          const bouts = await store.bouts.list(f.id);
          expect(bouts).toHaveLength(2);
          const continued = await store.messages.list(earlier[i]?.bout.id ?? "");
          expect(continued.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
          expect(new Set(continued.map((m) => m.turn_id)).size).toBe(2);
        }
      });
    });

    describe("compaction", () => {
      async function boutOfFive() {
        const quin = await newFighter(store);
        const { turn, bout } = await begin(store, quin, "m1");
        await store.turns.append(turn.id, ["m2", "m3", "m4", "m5"].map(said));
        return bout;
      }
      const compactedSeqs = async (boutId: string) =>
        (await store.messages.list(boutId)).filter((m) => m.compacted === true).map((m) => m.seq);

      it("marks messages up to a seq compacted, keeps them listed, and stores the summary", async () => {
        const bout = await boutOfFive();
        expect(await store.messages.compact(bout.id, 3, "the first three")).toBe(3);
        expect(await compactedSeqs(bout.id)).toEqual([1, 2, 3]);
        expect(await store.messages.list(bout.id)).toHaveLength(5);
        expect((await store.bouts.get(bout.id))?.message_count).toBe(5);
        expect(await store.summaries.get(bout.id)).toEqual({
          bout_id: bout.id,
          summary: "the first three",
          through_seq: 3,
          updated_at: expect.any(String),
        });
      });

      it("counts only newly marked messages and extends the summary", async () => {
        const bout = await boutOfFive();
        await store.messages.compact(bout.id, 2, "two");
        expect(await store.messages.compact(bout.id, 4, "four")).toBe(2);
        expect(await store.messages.compact(bout.id, 4, "four, again")).toBe(0);
        expect(await compactedSeqs(bout.id)).toEqual([1, 2, 3, 4]);
        expect(await store.summaries.get(bout.id)).toMatchObject({ summary: "four, again", through_seq: 4 });
      });

      it("truncation (no summary) marks messages and keeps the earlier summary as it was", async () => {
        const bout = await boutOfFive();
        await store.messages.compact(bout.id, 2, "two");
        const summary = await store.summaries.get(bout.id);
        expect(await store.messages.compact(bout.id, 4, undefined)).toBe(2);
        expect(await compactedSeqs(bout.id)).toEqual([1, 2, 3, 4]);
        expect(await store.summaries.get(bout.id)).toEqual(summary);

        const untouched = await boutOfFive();
        expect(await store.messages.compact(untouched.id, 1, undefined)).toBe(1);
        expect(await store.summaries.get(untouched.id)).toBeUndefined();
      });

      it("the tail is every message after the last compacted one, in order", async () => {
        const bout = await boutOfFive();
        const seqs = async () => (await store.messages.tail(bout.id)).map((m) => m.seq);
        expect(await seqs()).toEqual([1, 2, 3, 4, 5]);
        await store.messages.compact(bout.id, 2, "two");
        expect(await seqs()).toEqual([3, 4, 5]);
        await store.messages.compact(bout.id, 4, undefined);
        expect(await seqs()).toEqual([5]);
        // An earlier boundary than one already applied changes nothing.
        await store.messages.compact(bout.id, 1, undefined);
        expect(await store.messages.tail(bout.id)).toEqual(
          (await store.messages.list(bout.id)).filter((m) => !m.compacted),
        );
        expect(await store.messages.tail(randomUUID())).toEqual([]);
      });

      it("refuses an unknown bout (BOUT_NOT_FOUND)", async () => {
        await expectCode(store.messages.compact(randomUUID(), 1, "nothing"), "BOUT_NOT_FOUND");
        expect(await store.summaries.get(randomUUID())).toBeUndefined();
      });
    });

    describe("nonces", () => {
      it("accepts a nonce once per key until it expires, then forgets it", async () => {
        const key = `key-${randomUUID()}`;
        expect(await store.nonces.claim(key, "n1", 1000, 100)).toBe(true);
        expect(await store.nonces.claim(key, "n1", 1000, 500)).toBe(false);
        expect(await store.nonces.claim(key, "n2", 1000, 500)).toBe(true);
        expect(await store.nonces.claim(`${key}-other`, "n1", 1000, 500)).toBe(true);
        // Expired: a signature that old is refused by its time anyway, so the nonce may go.
        expect(await store.nonces.claim(key, "n1", 2000, 1001)).toBe(true);
        expect(await store.nonces.claim(key, "n1", 2000, 1500)).toBe(false);
      });
    });

    describe("usage", () => {
      it("sums a budget's spend since a time: a fighter's, an origin's, an origin prefix's, or all", async () => {
        const a = await newFighter(store);
        const b = await newFighter(store);
        const origin = `gorilla:g${randomUUID().slice(0, 8)}`;
        const chat = `channel:c${randomUUID().slice(0, 8)}`;
        const since = "2031-01-02T00:00:00.000Z";
        const at = "2031-01-02T10:00:00.000Z";
        await store.usage.record(
          call(a, { at: "2031-01-01T23:59:59.000Z", input_tokens: 1000, cost_micros: 1000 }),
        );
        await store.usage.record(call(a, { at, input_tokens: 10, output_tokens: 5, cost_micros: 30 }));
        await store.usage.record(
          call(a, { at, origin, input_tokens: 1, output_tokens: 1, cost_micros: null, currency: null }),
        );
        await store.usage.record(
          call(b, { at, origin: `${chat}:42`, input_tokens: 7, output_tokens: 3, cost_micros: 4 }),
        );
        expect(await store.usage.spent({ since, fighter_id: a.id })).toEqual({ cost_micros: 30, tokens: 17 });
        expect(await store.usage.spent({ since, origin })).toEqual({ cost_micros: 0, tokens: 2 });
        expect(await store.usage.spent({ since, origin_prefix: `${chat}:` })).toEqual({
          cost_micros: 4,
          tokens: 10,
        });
        expect(await store.usage.spent({ since: "2031-01-03T00:00:00.000Z", fighter_id: b.id })).toEqual({
          cost_micros: 0,
          tokens: 0,
        });
        const all = await store.usage.spent({ since });
        expect(all.tokens).toBeGreaterThanOrEqual(27);
      });

      it("sums the recorded calls per provider and model: tokens, cache tokens, cost and unpriced calls", async () => {
        const bo = await newFighter(store);
        await store.usage.record(
          call(bo, { model: "m1", input_tokens: 10, output_tokens: 2, cost_micros: 7 }),
        );
        await store.usage.record(
          call(bo, { model: "m1", input_tokens: 5, output_tokens: 1, cached_tokens: 4, cost_micros: 3 }),
        );
        await store.usage.record(
          call(bo, { model: "m1", input_tokens: 1, output_tokens: 1, cost_micros: null, currency: null }),
        );
        await store.usage.record(
          call(bo, {
            provider: "ollama",
            model: "m2",
            input_tokens: 7,
            output_tokens: 3,
            cache_write_tokens: 6,
          }),
        );
        await store.usage.record(
          call(bo, {
            provider: "x",
            model: "free",
            input_tokens: 0,
            output_tokens: 0,
            cost_micros: null,
            currency: null,
          }),
        );
        const summary = await store.usage.summary(bo.id);
        expect(summary).toHaveLength(3);
        expect(summary).toEqual(
          expect.arrayContaining([
            {
              provider: "openai",
              model: "m1",
              requests: 3,
              input_tokens: 16,
              output_tokens: 4,
              cached_tokens: 4,
              cache_write_tokens: 0,
              cost_micros: 10,
              unpriced_requests: 1,
            },
            {
              provider: "ollama",
              model: "m2",
              requests: 1,
              input_tokens: 7,
              output_tokens: 3,
              cached_tokens: 0,
              cache_write_tokens: 6,
              cost_micros: 0,
              unpriced_requests: 0,
            },
            {
              provider: "x",
              model: "free",
              requests: 1,
              input_tokens: 0,
              output_tokens: 0,
              cached_tokens: 0,
              cache_write_tokens: 0,
              cost_micros: null,
              unpriced_requests: 1,
            },
          ]),
        );
        expect(await store.usage.summary(randomUUID())).toEqual([]);
      });

      it("keeps a call's cost whole however large: micro-units past 2^31", async () => {
        const big = await newFighter(store);
        await store.usage.record(call(big, { input_tokens: 3_000_000_000, cost_micros: 4_000_000_000_000 }));
        await store.usage.record(call(big, { input_tokens: 1, cost_micros: 1 }));
        expect(await store.usage.summary(big.id)).toMatchObject([
          { input_tokens: 3_000_000_001, cost_micros: 4_000_000_000_001 },
        ]);
      });

      describe("query", () => {
        // Calls in a window of their own (2031), so the suite's other calls stay out of the sums.
        const at = (text: string) => `2031-${text}`;
        const range = { since: at("03-01T00:00:00.000Z"), until: at("04-01T00:00:00.000Z") };
        let ada: FighterRow;
        let bob: FighterRow;
        beforeAll(async () => {
          ada = await newFighter(store);
          bob = await newFighter(store);
          const calls: UsageRecord[] = [
            // Before the range, at its start, inside, at its end (excluded), after.
            call(ada, { at: at("02-28T23:59:59.999Z"), input_tokens: 1000, cost_micros: 1000 }),
            call(ada, { at: at("03-01T00:00:00.000Z"), input_tokens: 10, output_tokens: 2, cost_micros: 7 }),
            call(ada, {
              at: at("03-01T23:30:00.000Z"),
              origin: "channel:telegram:42",
              input_tokens: 20,
              output_tokens: 3,
              cached_tokens: 5,
              cost_micros: 11,
            }),
            call(ada, {
              at: at("03-02T00:30:00.000Z"),
              origin: "channel:slack:C1",
              provider: "anthropic",
              model: "claude",
              input_tokens: 30,
              output_tokens: 4,
              cache_write_tokens: 6,
              cost_micros: 4_000_000_000_000,
            }),
            call(bob, {
              at: at("03-15T12:00:00.000Z"),
              origin: "gorilla:night",
              model: "free",
              input_tokens: 40,
              output_tokens: 5,
              cost_micros: null,
              currency: null,
            }),
            call(bob, {
              at: at("03-31T23:59:59.999Z"),
              origin: "schedule",
              input_tokens: 50,
              cost_micros: 13,
            }),
            call(bob, { at: at("04-01T00:00:00.000Z"), input_tokens: 2000, cost_micros: 2000 }),
          ];
          for (const c of calls) await store.usage.record(c);
        });
        const sums = (
          requests: number,
          input: number,
          output: number,
          cost: number | null,
          unpriced = 0,
        ) => ({
          requests,
          input_tokens: input,
          output_tokens: output,
          cost_micros: cost,
          unpriced_requests: unpriced,
        });

        it("sums per UTC day over [since, until), ordered by key; a day without calls has no row", async () => {
          expect(await store.usage.query({ by: "day", ...range })).toEqual([
            {
              key: "2031-03-01",
              requests: 2,
              input_tokens: 30,
              output_tokens: 5,
              cached_tokens: 5,
              cache_write_tokens: 0,
              cost_micros: 18,
              unpriced_requests: 0,
            },
            {
              key: "2031-03-02",
              requests: 1,
              input_tokens: 30,
              output_tokens: 4,
              cached_tokens: 0,
              cache_write_tokens: 6,
              cost_micros: 4_000_000_000_000,
              unpriced_requests: 0,
            },
            { key: "2031-03-15", ...sums(1, 40, 5, null, 1), cached_tokens: 0, cache_write_tokens: 0 },
            { key: "2031-03-31", ...sums(1, 50, 0, 13), cached_tokens: 0, cache_write_tokens: 0 },
          ]);
        });

        it("turns a day at the zone's midnight, with the offset in force at each call", async () => {
          // UTC+1 until 03-02T00:00Z, then UTC-2: 03-01T23:30Z is 03-02 local, 03-02T00:30Z is 03-01 local.
          const days = [
            { from: range.since, minutes: 60 },
            { from: at("03-02T00:00:00.000Z"), minutes: -120 },
          ];
          const byDay = await store.usage.query({ by: "day", ...range, fighter_id: ada.id, days });
          expect(byDay.map((g) => [g.key, g.requests, g.input_tokens])).toEqual([
            ["2031-03-01", 2, 40],
            ["2031-03-02", 1, 20],
          ]);
          const east = await store.usage.query({
            by: "day",
            ...range,
            fighter_id: ada.id,
            days: [{ from: range.since, minutes: 330 }],
          });
          expect(east.map((g) => [g.key, g.requests])).toEqual([
            ["2031-03-01", 1],
            ["2031-03-02", 2],
          ]);
        });

        it("groups per model, fighter, provider, origin kind and exact origin", async () => {
          const keys = async (by: UsageQuery["by"]) =>
            (await store.usage.query({ by, ...range })).map((g) => [g.key, g.requests]);
          expect(await keys("model")).toEqual([
            ["anthropic/claude", 1],
            ["openai/free", 1],
            ["openai/m", 3],
          ]);
          expect(await keys("provider")).toEqual([
            ["anthropic", 1],
            ["openai", 4],
          ]);
          expect(await keys("fighter")).toEqual(
            [
              [ada.id, 3],
              [bob.id, 2],
            ].sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1)),
          );
          expect(await keys("origin")).toEqual([
            ["channel", 2],
            ["gorilla", 1],
            ["schedule", 1],
            ["user", 1],
          ]);
          expect(await keys("origin-exact")).toEqual([
            ["channel:slack:C1", 1],
            ["channel:telegram:42", 1],
            ["gorilla:night", 1],
            ["schedule", 1],
            ["user", 1],
          ]);
        });

        it("filters on fighter, origin (exact or kind), provider and model", async () => {
          const total = async (filter: Partial<UsageQuery>) =>
            (await store.usage.query({ by: "provider", ...range, ...filter })).map((g) => [
              g.key,
              g.requests,
            ]);
          expect(await total({ fighter_id: bob.id })).toEqual([["openai", 2]]);
          expect(await total({ origin: "channel" })).toEqual([
            ["anthropic", 1],
            ["openai", 1],
          ]);
          expect(await total({ origin: "channel:telegram" })).toEqual([["openai", 1]]);
          expect(await total({ origin: "channel:telegram:42" })).toEqual([["openai", 1]]);
          // A kind matches up to a colon only: "chan" is no kind of "channel".
          expect(await total({ origin: "chan" })).toEqual([]);
          expect(await total({ provider: "anthropic" })).toEqual([["anthropic", 1]]);
          expect(await total({ model: "free", fighter_id: bob.id })).toEqual([["openai", 1]]);
          expect(await total({ fighter_id: randomUUID() })).toEqual([]);
        });

        it("names an origin recorded before the ledger kept origins `unknown`", async () => {
          const old = await newFighter(store);
          // As a row from before migration 21 reads: the store takes what it is given.
          await store.usage.record(
            call(old, { at: at("05-01T00:00:00.000Z"), origin: null as unknown as string }),
          );
          const window = { since: at("05-01T00:00:00.000Z"), until: at("05-02T00:00:00.000Z") };
          expect((await store.usage.query({ by: "origin", ...window })).map((g) => g.key)).toEqual([
            "unknown",
          ]);
          expect((await store.usage.query({ by: "origin-exact", ...window })).map((g) => g.key)).toEqual([
            "unknown",
          ]);
        });
      });

      it("refuses negative tokens and a negative cost", async () => {
        const neg = await newFighter(store);
        await expect(store.usage.record(call(neg, { output_tokens: -1 }))).rejects.toThrow();
        await expect(store.usage.record(call(neg, { cached_tokens: -1 }))).rejects.toThrow();
        await expect(store.usage.record(call(neg, { cost_micros: -5 }))).rejects.toThrow();
        expect(await store.usage.summary(neg.id)).toEqual([]);
      });
    });

    describe("idempotency records", () => {
      it("begin records the key with its turn; finish stores the reply a retry gets", async () => {
        const cal = await newFighter(store);
        const key = randomUUID();
        const { turn } = await begin(store, cal, "pay once", {
          idempotency: { key, request_hash: "hash-1" },
        });
        const running = await store.idempotency.get(key);
        expect(running).toEqual({
          key,
          request_hash: "hash-1",
          fighter_id: cal.id,
          turn_id: turn.id,
          created_at: expect.any(String),
        });

        const reply: StoredReply = { ok: true, result: { text: "paid", bout_id: turn.bout_id, n: [1, 2] } };
        await store.turns.finish(turn.id, ending({ messages: [said("paid")], reply }));
        expect(await store.idempotency.get(key)).toEqual({ ...running, reply });
        expect(await store.idempotency.get(randomUUID())).toBeUndefined();
      });

      it("keeps a failed turn's error, extra fields and all, as its reply", async () => {
        const dot = await newFighter(store);
        const key = randomUUID();
        const { turn } = await begin(store, dot, "try", { idempotency: { key, request_hash: "h" } });
        const error = { code: "RATE_LIMITED", message: "slow down", retry_after: 3 };
        const reply: StoredReply = { ok: false, error };
        await store.turns.finish(
          turn.id,
          ending({ status: "failed", error: { code: error.code, message: error.message }, reply }),
        );
        expect((await store.idempotency.get(key))?.reply).toEqual(reply);
      });

      it("refuses a key already recorded (CONFLICT), starting nothing", async () => {
        const eli = await newFighter(store);
        const key = randomUUID();
        const { bout } = await begin(store, eli, "first", { idempotency: { key, request_hash: "h" } });
        await expectCode(begin(store, eli, "again", { idempotency: { key, request_hash: "h" } }), "CONFLICT");
        await expectCode(
          begin(store, eli, "here", { bout_id: bout.id, idempotency: { key, request_hash: "other" } }),
          "CONFLICT",
        );
        expect(await store.bouts.list(eli.id)).toHaveLength(1);
        expect(await store.messages.list(bout.id)).toHaveLength(1);
        expect(await store.turns.list(bout.id)).toHaveLength(1);
      });

      it("purges the records created before a time, leaving their turns", async () => {
        const flo = await newFighter(store);
        const [older, newer] = [randomUUID(), randomUUID()];
        const first = await begin(store, flo, "a", { idempotency: { key: older, request_hash: "a" } });
        await begin(store, flo, "b", { idempotency: { key: newer, request_hash: "b" } });
        const cut = (await store.idempotency.get(newer))?.created_at ?? "";

        expect(await store.idempotency.purge("2000-01-01T00:00:00.000Z")).toBe(0);
        expect(await store.idempotency.purge(cut)).toBeGreaterThanOrEqual(1);
        expect(await store.idempotency.get(older)).toBeUndefined();
        expect(await store.idempotency.get(newer)).toBeDefined();
        expect(await store.turns.get(first.turn.id)).toEqual(first.turn);
      });
    });

    describe("close and reopen", () => {
      const home = tempHome();
      let reopened: Store | undefined;
      afterAll(async () => {
        await reopened?.close();
      });
      const keys = { done: randomUUID(), left: randomUUID() };
      const reply: StoredReply = { ok: true, result: { text: "ok" } };
      let gus: FighterRow;
      let turns: { done: TurnRecord; left: TurnRecord; lone: TurnRecord };

      /** Everything the store holds about `gus`, read through the interface. */
      async function everything(s: Store) {
        const bouts = await s.bouts.list(gus.id);
        return {
          fighter: await s.fighters.get(gus.id),
          bouts,
          messages: await Promise.all(bouts.map((b) => s.messages.list(b.id))),
          turns: await Promise.all(bouts.map((b) => s.turns.list(b.id))),
          summaries: await Promise.all(bouts.map((b) => s.summaries.get(b.id))),
          keys: [await s.idempotency.get(keys.done), await s.idempotency.get(keys.left)],
          usage: await s.usage.summary(gus.id),
        };
      }

      it("keeps every record, running turns included", async () => {
        const first = await factory.open(home);
        gus = await newFighter(first, "gus");
        const done = await begin(first, gus, "finished", {
          idempotency: { key: keys.done, request_hash: "h1" },
        });
        await first.turns.append(done.turn.id, [asks("c1", "look", { q: "tea" })]);
        const finished = await first.turns.finish(
          done.turn.id,
          ending({
            messages: [answers("c1", "look", "green"), said("Green tea.")],
            usage: { input_tokens: 5, output_tokens: 2 },
            reply,
          }),
        );
        const left = await begin(first, gus, "interrupted", {
          bout_id: done.bout.id,
          idempotency: { key: keys.left, request_hash: "h2" },
        });
        await first.turns.append(left.turn.id, [asks("c2", "look", { q: "coffee" })]);
        const lone = await begin(first, gus, "also interrupted");
        await first.usage.record(
          call(gus, { bout_id: done.bout.id, turn_id: done.turn.id, cost_micros: 1234 }),
        );
        turns = { done: finished, left: left.turn, lone: lone.turn };
        await first.messages.compact(done.bout.id, 2, "asked about tea");
        expect(await first.nonces.claim("restart-key", "n1", 9e9, 1)).toBe(true);
        const before = await everything(first);
        await first.close();

        reopened = await factory.open(home);
        expect(await everything(reopened)).toEqual(before);
        expect(
          before.turns
            .flat()
            .map((t) => t.status)
            .sort(),
        ).toEqual(["completed", "running", "running"]);
        expect(await reopened.nonces.claim("restart-key", "n1", 9e9, 2)).toBe(false);
      });

      it("abandon fails the turns left running, with the error as their keys' reply", async () => {
        const store = reopened as Store;
        const error = { code: "TURN_ABANDONED", message: "the daemon stopped during this turn" };
        expect(await store.turns.abandon(error)).toBe(2);
        for (const turn of [turns.left, turns.lone]) {
          expect(await store.turns.get(turn.id)).toMatchObject({
            id: turn.id,
            status: "failed",
            error,
            started_at: turn.started_at,
            finished_at: expect.any(String),
          });
        }
        expect(await store.turns.get(turns.done.id)).toEqual(turns.done);
        expect(await store.idempotency.get(keys.left)).toMatchObject({
          turn_id: turns.left.id,
          reply: { ok: false, error },
        });
        expect((await store.idempotency.get(keys.done))?.reply).toEqual(reply);
        // The interrupted turn's steps stay: a tool that ran is never forgotten.
        const messages = await store.messages.list(turns.left.bout_id);
        expect(messages.filter((m) => m.turn_id === turns.left.id).map((m) => m.role)).toEqual([
          "user",
          "assistant",
        ]);
        expect(await store.turns.abandon(error)).toBe(0);

        // The bout goes on after the restart.
        const next = await begin(store, gus, "again", { bout_id: turns.left.bout_id });
        expect((await store.messages.list(next.bout.id)).at(-1)).toMatchObject({ seq: messages.length + 1 });
      });
    });
  });
}
