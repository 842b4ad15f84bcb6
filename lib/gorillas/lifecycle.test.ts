import { describe, expect, it } from "vitest";
import { catchUp, cycleMessage, cycleOutcome, missedFire, onFire, statusOf } from "./lifecycle.js";
import { parseSchedule } from "./schedule.js";

const everyHour = parseSchedule("hourly", "UTC");
const everySecond = parseSchedule("every 1s", "UTC");

describe("the state a gorilla shows", () => {
  it("is RAMPAGING while a cycle runs, whatever was asked for, else the desired state", () => {
    expect(statusOf("caged", false)).toBe("CAGED");
    expect(statusOf("unleashed", false)).toBe("UNLEASHED");
    expect(statusOf("unleashed", true)).toBe("RAMPAGING");
    // A manual run of a caged gorilla.
    expect(statusOf("caged", true)).toBe("RAMPAGING");
  });
});

describe("a fire", () => {
  it("starts a cycle when none runs", () => {
    expect(onFire(undefined)).toEqual({ run: true });
  });

  it("is skipped while a cycle runs, naming the run it overlapped", () => {
    expect(onFire({ run_id: "r-1" })).toEqual({
      run: false,
      reason: "the previous cycle (run r-1) was still running",
    });
    // Still being recorded: no id yet, but a cycle all the same.
    expect(onFire({})).toEqual({ run: false, reason: "the previous cycle was still running" });
  });
});

describe("fires missed while the daemon was down", () => {
  const changed_at = "2025-03-01T09:30:00.000Z";

  it("counts from the last fire: the next one after it, if it is past", () => {
    const state = { changed_at, last_fire_at: "2025-03-01T10:00:00.000Z" };
    expect(missedFire(everyHour.next, state, new Date("2025-03-01T10:59:59Z"))).toBeUndefined();
    expect(missedFire(everyHour.next, state, new Date("2025-03-01T11:00:00Z"))).toEqual(
      new Date("2025-03-01T11:00:00Z"),
    );
    // Many missed: the first of them.
    expect(missedFire(everyHour.next, state, new Date("2025-03-02T08:15:00Z"))).toEqual(
      new Date("2025-03-01T11:00:00Z"),
    );
  });

  it("counts from the unleash when the gorilla never fired", () => {
    expect(missedFire(everyHour.next, { changed_at }, new Date("2025-03-01T09:59:00Z"))).toBeUndefined();
    expect(missedFire(everyHour.next, { changed_at }, new Date("2025-03-01T10:00:01Z"))).toEqual(
      new Date("2025-03-01T10:00:00Z"),
    );
  });

  it("ignores a state whose times do not parse", () => {
    expect(missedFire(everySecond.next, { changed_at: "garbage" }, new Date())).toBeUndefined();
  });

  it('runs one catch-up cycle only under catch_up = "once", and only when a fire was missed', () => {
    const missed = new Date("2025-03-01T11:00:00Z");
    expect(catchUp("skip", missed)).toBe(false);
    expect(catchUp("once", missed)).toBe(true);
    expect(catchUp("once", undefined)).toBe(false);
    expect(catchUp("skip", undefined)).toBe(false);
  });
});

describe("how a cycle is recorded", () => {
  const ended = { ok: true as const, stop_reason: "end" as const, iterations: 2 };

  it("is ok when the turn ended with an answer", () => {
    expect(cycleOutcome(undefined, ended)).toEqual({ outcome: "ok" });
  });

  it("takes its own stop first: caged is aborted, a budget or the timeout failed, with the reason", () => {
    const cancelled = { ok: false as const, code: "CANCELLED", message: "the turn was cancelled: …" };
    expect(cycleOutcome({ outcome: "aborted", reason: "was caged" }, cancelled)).toEqual({
      outcome: "aborted",
      error: "was caged",
    });
    expect(cycleOutcome({ outcome: "failed", reason: "timed out after 5 s" }, cancelled)).toEqual({
      outcome: "failed",
      error: "timed out after 5 s",
    });
    // A stop that came as the turn was finishing still decides.
    expect(cycleOutcome({ outcome: "failed", reason: "hit its max_tokens budget" }, ended).outcome).toBe(
      "failed",
    );
  });

  it("fails a turn that ran out of iterations or looped: the task was not done", () => {
    expect(cycleOutcome(undefined, { ok: true, stop_reason: "max_iterations", iterations: 15 })).toEqual({
      outcome: "failed",
      error: "hit its max_iterations budget: 15 model calls without a final answer",
    });
    expect(cycleOutcome(undefined, { ok: true, stop_reason: "loop_guard", iterations: 4 }).outcome).toBe(
      "failed",
    );
  });

  it("fails a turn that met a call needing an approval no one could give, saying what it needed", () => {
    const needed = 'needs approval: shell_exec {"argv":["make"]} (…); no one can answer in a gorilla:g turn';
    expect(cycleOutcome(undefined, ended, needed)).toEqual({ outcome: "failed", error: needed });
    // Its own stop still comes first.
    expect(cycleOutcome({ outcome: "aborted", reason: "was caged" }, ended, needed).error).toBe("was caged");
  });

  it("aborts a turn cancelled by someone else (the daemon stopping), fails any other error", () => {
    expect(
      cycleOutcome(undefined, {
        ok: false,
        code: "CANCELLED",
        message: "the turn was cancelled: the daemon is stopping",
      }),
    ).toEqual({ outcome: "aborted", error: "the turn was cancelled: the daemon is stopping (CANCELLED)" });
    expect(cycleOutcome(undefined, { ok: false, code: "PROVIDER_ERROR", message: "openai: 500" })).toEqual({
      outcome: "failed",
      error: "openai: 500 (PROVIDER_ERROR)",
    });
  });
});

describe("the message that starts a cycle", () => {
  it("names the gorilla, the run and the date and time in the schedule's zone, then the task", () => {
    const text = cycleMessage(
      { name: "alpha", task: "Run one research cycle." },
      { id: "run-1", trigger: "schedule" },
      new Date("2025-06-01T12:00:05Z"),
      "Europe/Paris",
    );
    expect(text).toBe(
      "[gorilla alpha: cycle run-1, trigger schedule]\n" +
        "Current date and time: Sunday 2025-06-01 14:00:05 (Europe/Paris); 2025-06-01T12:00:05.000Z in UTC.\n\n" +
        "Run one research cycle.",
    );
  });
});
