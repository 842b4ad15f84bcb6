/**
 * The approvals' records through `api.data` on every store plugin: a request answered exactly once
 * (two answers at once: one wins, the other is CONFLICT), an answer after expiry refused and the
 * request recorded expired, an `--always` approval storing its rule in the same transaction, the
 * rules removed by id, the chats a fighter posted to; and a turn's wait ending at an answer, its
 * expiry or its cancellation, whichever comes first, settled once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventBus } from "../../plugins/bus-local/events.js";
import { type Store, shutdownCancellation } from "../../sdk/index.js";
import { cleanUp, pluginData, STORE_KINDS, tempHome } from "../../test/helpers/plugin-data.js";
import { type ApprovalRequest, createRecords, type Records } from "./records.js";
import { waitForAnswer } from "./waiting.js";

afterAll(cleanUp);

const log = { info() {}, warn() {}, error() {} };

const fields = (extra: Partial<ApprovalRequest> = {}) => ({
  fighter_id: "f-1",
  fighter: "coder",
  bout_id: "b-1",
  turn_id: "t-1",
  call_id: "c-1",
  origin: "user",
  move: "shell_exec",
  arguments: { argv: ["make", "test"], env_token: "sk-secret-value" },
  subject: "make test",
  cwd: "/w",
  files: [{ path: "/w/Makefile", sha256: "ab".repeat(32) }],
  why: "shell_exec runs a program (the default: ask)",
  ...extra,
});

for (const kind of STORE_KINDS) {
  describe.skipIf(kind.skip)(`approval records on ${kind.name}`, () => {
    let store: Store;
    let records: Records;

    beforeAll(async () => {
      store = await kind.open(tempHome());
      records = createRecords(pluginData(store, import.meta.dirname));
    });
    afterAll(async () => {
      await store?.close();
    });

    it("keeps a request pending with its binding, then answers it exactly once", async () => {
      const request = await records.create(fields(), 900);
      expect(request).toMatchObject({ status: "pending", answerers: ["operator", "admin"] });
      expect(Date.parse(request.expires_at) - Date.parse(request.created_at)).toBe(900_000);
      expect(await records.get(request.id)).toEqual(request);
      const tries = await Promise.allSettled([
        records.answer(request.id, { approve: true, by: "cli" }),
        records.answer(request.id, { approve: false, reason: "no", by: "ops" }),
      ]);
      const won = tries.filter((t) => t.status === "fulfilled");
      expect(won).toHaveLength(1);
      expect(tries.filter((t) => t.status === "rejected")).toMatchObject([{ reason: { code: "CONFLICT" } }]);
      const stored = await records.get(request.id);
      expect(["approved", "denied"]).toContain(stored.status);
      await expect(records.answer(request.id, { approve: true, by: "cli" })).rejects.toMatchObject({
        code: "CONFLICT",
        message: expect.stringContaining(`was answered already: ${stored.status} by`),
      });
    });

    it("lets an approved call through exactly once, and finds it again by its turn and call", async () => {
      const request = await records.create(fields({ turn_id: "t-once", call_id: "c-once" }), 900);
      await records.answer(request.id, { approve: true, by: "cli" });
      // Two takers at once (a turn taken up on two nodes): one lets it through.
      const tries = await Promise.all([records.released(request.id), records.released(request.id)]);
      expect(tries.sort()).toEqual([false, true]);
      expect(await records.released(request.id, "its files changed")).toBe(false);
      const found = await records.forCall("t-once", "c-once");
      expect(found).toMatchObject({ id: request.id, status: "approved", released_at: expect.any(String) });
      expect(found?.stale).toBeUndefined();
      expect(await records.forCall("t-once", "c-other")).toBeUndefined();
      expect((await records.forTurn("t-once")).map((r) => r.id)).toEqual([request.id]);
    });

    it("refuses an answer after the expiry, recording the request expired (once)", async () => {
      const request = await records.create(fields(), 1);
      expect((await records.list({ status: "pending", limit: 100 })).map((r) => r.id)).toContain(request.id);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      // Listed as expired at once, before anyone records it so.
      expect((await records.list({ status: "pending", limit: 100 })).map((r) => r.id)).not.toContain(
        request.id,
      );
      expect((await records.list({ status: "expired", limit: 100 })).map((r) => r.id)).toContain(request.id);
      const expired: ApprovalRequest[] = [];
      await expect(
        records.answer(request.id, { approve: true, by: "cli" }, (r) => expired.push(r)),
      ).rejects.toMatchObject({ code: "APPROVAL_EXPIRED" });
      await expect(
        records.answer(request.id, { approve: true, by: "cli" }, (r) => expired.push(r)),
      ).rejects.toMatchObject({ code: "APPROVAL_EXPIRED" });
      expect(expired.map((r) => r.status)).toEqual(["expired"]);
      expect((await records.read(request.id))?.status).toBe("expired");
    });

    it("stores an --always rule with the approval: the exact call, or the pattern typed", async () => {
      const exact = await records.create(fields(), 900);
      const { request, rule } = await records.answer(exact.id, { approve: true, always: true, by: "cli" });
      expect(rule).toMatchObject({
        fighter_id: "f-1",
        fighter: "coder",
        move: "shell_exec",
        arguments: '{"argv":["make","test"],"env_token":"sk-secret-value"}',
        created_by: "cli",
        request_id: exact.id,
      });
      expect(request.rule_id).toBe(rule?.id);
      const typed = await records.create(fields(), 900);
      const second = await records.answer(typed.id, {
        approve: true,
        always: true,
        pattern: "make *",
        by: "cli",
      });
      expect(second.rule).toMatchObject({ pattern: "make *" });
      expect(second.rule).not.toHaveProperty("arguments");
      expect((await records.rules.forMove("shell_exec")).map((r) => r.id).sort()).toEqual(
        [rule?.id, second.rule?.id].sort(),
      );
      await records.rules.remove(rule?.id as string);
      expect((await records.rules.list()).map((r) => r.id)).toEqual([second.rule?.id]);
      await expect(records.rules.remove(rule?.id as string)).rejects.toMatchObject({ code: "NOT_FOUND" });
    });

    it("records an unattended refusal as denied, and lists by status, newest first, in pages", async () => {
      const refused = await records.refused(fields({ origin: "gorilla:digest" }), "no one to ask");
      expect(refused).toMatchObject({ status: "denied", answered_by: "unattended", reason: "no one to ask" });
      const denied = await records.list({ status: "denied", limit: 500 });
      expect(denied[0]?.id).toBe(refused.id);
      const all = await records.list({ limit: 2 });
      expect(all).toHaveLength(2);
      const next = await records.list({ limit: 500, before: all[1]?.id as string });
      expect(next.map((r) => r.id)).not.toContain(all[0]?.id);
      await expect(records.get("nope")).rejects.toMatchObject({ code: "NOT_FOUND" });
    });

    it("remembers the chats each fighter posted to", async () => {
      expect(await records.targets.known("f-1", "telegram:42")).toBe(false);
      await records.targets.used("f-1", "telegram:42");
      await records.targets.used("f-1", "telegram:42");
      expect(await records.targets.known("f-1", "telegram:42")).toBe(true);
      expect(await records.targets.known("f-2", "telegram:42")).toBe(false);
    });

    describe("a turn's wait", () => {
      const events = createEventBus({ historySize: 100 });

      it("ends at the answer, announced on the bus", async () => {
        const request = await records.create(fields(), 900);
        const waiting = waitForAnswer(request, new AbortController().signal, { records, events, log });
        await records.answer(request.id, { approve: false, reason: "not now", by: "ops" });
        events.publish({
          kind: "approval.answered",
          request_id: request.id,
          fighter_id: "f-1",
          status: "denied",
          answered_by: "ops",
        });
        const waited = await waiting;
        expect(waited).toMatchObject({ cancelled: false, settled: false });
        expect(waited.request).toMatchObject({ status: "denied", reason: "not now", answered_by: "ops" });
      });

      it("ends at the expiry, recording it expired, unless an answer came first", async () => {
        const request = await records.create(fields(), 1);
        const waited = await waitForAnswer(request, new AbortController().signal, { records, events, log });
        expect(waited).toMatchObject({ cancelled: false, settled: true, request: { status: "expired" } });
        expect((await records.read(request.id))?.status).toBe("expired");
      });

      it("ends when the turn is cancelled, recording it cancelled; an answer then is CONFLICT", async () => {
        const request = await records.create(fields(), 900);
        const controller = new AbortController();
        const waiting = waitForAnswer(request, controller.signal, { records, events, log });
        controller.abort(new Error("cancelled"));
        expect(await waiting).toMatchObject({
          cancelled: true,
          settled: true,
          request: { status: "cancelled" },
        });
        await expect(records.answer(request.id, { approve: true, by: "cli" })).rejects.toMatchObject({
          code: "CONFLICT",
        });
      });

      it("leaves the request pending when the daemon is stopping: answerable after the restart", async () => {
        const request = await records.create(fields(), 900);
        const controller = new AbortController();
        const waiting = waitForAnswer(request, controller.signal, { records, events, log });
        controller.abort(shutdownCancellation());
        expect(await waiting).toMatchObject({ cancelled: true, settled: false });
        expect((await records.read(request.id))?.status).toBe("pending");
        await records.answer(request.id, { approve: true, by: "cli" });
      });
    });
  });
}
