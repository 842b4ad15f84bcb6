import { afterEach, describe, expect, it } from "vitest";
import { cancellation } from "../sdk/cancel.js";
import { SparError } from "../sdk/errors.js";
import { addObserver, type ObservedEnd, type ObservedOperation } from "../sdk/observe.js";
import { moveOutcome, observeTurns, originKind } from "./observe-points.js";

const removers: (() => void)[] = [];
afterEach(() => {
  for (const remove of removers.splice(0)) remove();
});

function watch() {
  const seen: { op: ObservedOperation; end: ObservedEnd }[] = [];
  removers.push(addObserver({ start: (op) => ({ end: (end) => seen.push({ op, end }) }) }));
  return seen;
}

const live = { row: { name: "ada" } };

describe("observe points", () => {
  it("names an origin by its kind; a fighter's chain makes it a fighter's", () => {
    expect(originKind({})).toBe("user");
    expect(originKind({ origin: "channel:telegram:42" })).toBe("channel");
    expect(originKind({ origin: "gorilla:watch" })).toBe("gorilla");
    expect(originKind({ origin: "schedule" })).toBe("schedule");
    expect(originKind({ chain: ["f1"] })).toBe("fighter");
  });

  it("ends a turn completed, refused (before it was recorded), cancelled or failed", async () => {
    const seen = watch();
    const send = observeTurns(async (_live: typeof live, text: string, opts) => {
      if (text === "refuse") throw new SparError("RATE_LIMITED", "slow down");
      opts.started?.({ turn_id: `t-${text}`, bout_id: "b" });
      if (text === "cancel") throw cancellation("the caller left");
      if (text === "fail") throw new SparError("PROVIDER_ERROR", "down");
      return text;
    });
    const told: string[] = [];
    expect(
      await send(live, "ok", { origin: "channel:slack:C1", started: (ids) => told.push(ids.turn_id) }),
    ).toBe("ok");
    await expect(send(live, "refuse", {})).rejects.toThrow("slow down");
    await expect(send(live, "cancel", {})).rejects.toThrow();
    await expect(send(live, "fail", {})).rejects.toThrow("down");
    // The caller's own `started` is still told.
    expect(told).toEqual(["t-ok"]);
    expect(seen.map((s) => [s.op, s.end.outcome, s.end.error_code, s.end.turn_id])).toEqual([
      [{ kind: "turn", fighter: "ada", origin: "channel" }, "completed", undefined, "t-ok"],
      [{ kind: "turn", fighter: "ada", origin: "user" }, "refused", "RATE_LIMITED", undefined],
      [{ kind: "turn", fighter: "ada", origin: "user" }, "cancelled", "CANCELLED", "t-cancel"],
      [{ kind: "turn", fighter: "ada", origin: "user" }, "failed", "PROVIDER_ERROR", "t-fail"],
    ]);
  });

  it("labels a move's outcome: ok, denied by policy, refused before it ran, or an error", () => {
    const failed = (code: string) => ({ ok: false, content: "", error: { code, message: "" } });
    expect(moveOutcome({ ok: true, content: "x" })).toEqual({ outcome: "ok" });
    expect(moveOutcome(failed("CAPABILITY_DENIED")).outcome).toBe("denied");
    expect(moveOutcome(failed("APPROVAL_DENIED")).outcome).toBe("denied");
    expect(moveOutcome(failed("VALIDATION_FAILED")).outcome).toBe("refused");
    expect(moveOutcome(failed("MOVE_TIMEOUT"))).toEqual({ outcome: "error", error_code: "MOVE_TIMEOUT" });
  });
});
