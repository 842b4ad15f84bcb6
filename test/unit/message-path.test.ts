/**
 * The message path (DESIGN §4) from its real parts: hooks, bus, registry, the SQLite store and the
 * config's defaults, with a scripted model the tests answer call by call. Ordering is controlled
 * with deferreds, never with timers.
 */
import { afterEach, describe, expect, it } from "vitest";
import { isSparError, SparError } from "../../sdk/errors.js";
import type { SparEvent } from "../../sdk/events.js";
import type { TurnSummary } from "../../sdk/hooks.js";
import type { FighterMessageResult } from "../../sdk/services.js";
import { type ConfigOverrides, createTestPath, deferred, outcome, type TestPath } from "./harness.js";

let t: TestPath | undefined;

/** A fresh path (and store) for one test; closed after it. */
async function setup(overrides: ConfigOverrides = {}): Promise<TestPath> {
  t = await createTestPath(overrides);
  return t;
}

afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** The error a promise rejected with, as a SparError (fails the test when it resolved or threw anything else). */
async function refusal(promise: Promise<unknown>): Promise<SparError> {
  const settled = await outcome(promise);
  if (settled.ok) throw new Error(`expected a rejection, got ${JSON.stringify(settled.value)}`);
  if (!isSparError(settled.error)) throw settled.error;
  return settled.error;
}

/** The fighter's status and completion events, as short strings, in publish order. */
function lifecycle(events: SparEvent[], fighterId: string): string[] {
  return events.flatMap((e) => {
    if (!("fighter_id" in e) || e.fighter_id !== fighterId) return [];
    if (e.kind === "fighter.status") return [`status:${e.status}`];
    if (e.kind === "message.completed") return [`completed:${e.turn_id}`];
    if (e.kind === "message.failed") return [`failed:${e.status}:${e.turn_id}`];
    return [];
  });
}

const never = () => new Promise<never>(() => undefined);

describe("one turn per fighter at a time, in arrival order", () => {
  it("runs 20 concurrent messages to one fighter one at a time, in the order they arrived", async () => {
    const { spawn, send, llm, history } = await setup();
    await spawn("alice");
    llm.answer(async (call) => {
      // Yield to the event loop, so any other message that could start a call now would.
      await new Promise((resolve) => setImmediate(resolve));
      return { text: `reply to ${call.lastUser}` };
    });
    const texts = Array.from({ length: 20 }, (_, i) => `message ${i}`);

    const results = await Promise.all(texts.map((text) => send("alice", text)));

    expect(llm.maxInFlight("alice")).toBe(1);
    expect(llm.calls.map((c) => c.lastUser)).toEqual(texts);
    expect(results.map((r) => r.response)).toEqual(texts.map((text) => `reply to ${text}`));
    // Each turn's prompt holds every turn before it: it started after they were committed.
    expect(llm.calls.map((c) => c.request.messages.length)).toEqual(texts.map((_, i) => 2 * i + 1));
    const stored = await history("alice");
    expect(stored.bouts).toBe(1);
    expect(stored.turns.map((turn) => turn.id)).toEqual(results.map((r) => r.turn_id));
    expect(stored.turns.every((turn) => turn.status === "completed")).toBe(true);
    expect(stored.messages.map((m) => m.content)).toEqual(
      texts.flatMap((text) => [text, `reply to ${text}`]),
    );
  });

  it("runs different fighters' turns at the same time", async () => {
    const { spawn, send, llm } = await setup();
    await spawn("alice");
    await spawn("bob");
    const release = deferred();
    llm.answer(async (call) => {
      await release.promise;
      return { text: `${call.fighter} done` };
    });

    const replies = Promise.all([send("alice", "a"), send("bob", "b")]);
    // Both calls are in flight before either is answered.
    await expect.poll(() => llm.calls.map((c) => c.fighter).sort()).toEqual(["alice", "bob"]);
    expect([llm.inFlight("alice"), llm.inFlight("bob")]).toEqual([1, 1]);
    release.resolve();

    expect((await replies).map((r) => r.response)).toEqual(["alice done", "bob done"]);
    expect(llm.maxTotal).toBe(2);
  });

  it("keeps arrival order between a message with an Idempotency-Key and a later one without", async () => {
    const { spawn, send, path, llm } = await setup();
    await spawn("alice");
    const release = deferred();
    llm.answer(async (call) => {
      await release.promise;
      return { text: `reply to ${call.lastUser}` };
    });
    const busy = send("alice", "occupy the fighter");
    await llm.called(1);

    const keyed = path.message("alice", "keyed, sent first", { idempotency_key: "order-1" });
    const plain = path.message("alice", "plain, sent second");
    release.resolve();
    await Promise.all([busy, keyed, plain]);

    expect(llm.calls.map((c) => c.lastUser)).toEqual([
      "occupy the fighter",
      "keyed, sent first",
      "plain, sent second",
    ]);
  });
});

describe("durable steps", () => {
  it("keeps a move that ran and the failed turn, and tells the next turn's model it ran", async () => {
    const { spawn, send, llm, history, store, addMove, published } = await setup();
    const alice = await spawn("alice");
    const ran: unknown[] = [];
    addMove("note", async (input) => {
      ran.push(input);
      return "noted";
    });
    let n = 0;
    llm.answer(() => {
      n += 1;
      if (n === 1) {
        return {
          tool_calls: [{ id: "c1", name: "note", arguments: { text: "x" } }],
          usage: { input_tokens: 7, output_tokens: 3 },
          stop_reason: "tool_use",
        };
      }
      if (n === 2) throw new SparError("PROVIDER_ERROR", "upstream is down", { retryable: false });
      return { text: "recovered" };
    });

    const error = await refusal(send("alice", "remember x"));

    expect(error).toMatchObject({ code: "PROVIDER_ERROR", message: "upstream is down" });
    expect(ran).toEqual([{ text: "x" }]);
    const failed = await history("alice");
    expect(failed.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(failed.messages[1]).toMatchObject({
      tool_calls: [{ id: "c1", name: "note", arguments: { text: "x" } }],
    });
    expect(failed.messages[2]).toMatchObject({ tool_call_id: "c1", name: "note", content: "noted" });
    expect(failed.turns).toEqual([
      expect.objectContaining({
        status: "failed",
        error: { code: "PROVIDER_ERROR", message: "upstream is down" },
        usage: { input_tokens: 7, output_tokens: 3 },
        iterations: 2,
      }),
    ]);
    expect(await store.usage.summary(alice.id)).toEqual([
      {
        provider: "scripted",
        model: "scripted-1",
        requests: 1,
        input_tokens: 7,
        output_tokens: 3,
        cached_tokens: 0,
        cache_write_tokens: 0,
        cost_micros: null,
        unpriced_requests: 1,
      },
    ]);
    expect(published).toContainEqual(
      expect.objectContaining({
        kind: "message.failed",
        turn_id: failed.turns[0]?.id,
        status: "failed",
        error: { code: "PROVIDER_ERROR", message: "upstream is down" },
      }),
    );

    const next = await send("alice", "what happened?");

    expect(next.response).toBe("recovered");
    const prompt = llm.calls.at(-1)?.request.messages ?? [];
    expect(prompt.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
    expect(prompt[3]).toEqual({
      role: "assistant",
      content:
        "(This turn ended without an answer, failed (PROVIDER_ERROR: upstream is down). The tool calls above ran.)",
    });
    expect((await history("alice")).turns.map((turn) => turn.status)).toEqual(["failed", "completed"]);
  });

  it("counts a failed turn's tokens against the fighter's token quota", async () => {
    const { spawn, send, llm, history } = await setup({ quotas: { tokens_per_minute: 100 } });
    // A small max_tokens keeps each turn's reservation (context + message + max_tokens) near 15 tokens.
    await spawn("alice", { model: { provider: "scripted", model: "scripted-1", max_tokens: 10 } });
    let calls = 0;
    llm.answer(() => {
      calls += 1;
      if (calls === 1) {
        return {
          tool_calls: [{ id: "c1", name: "missing", arguments: {} }],
          usage: { input_tokens: 90, output_tokens: 5 },
        };
      }
      throw new SparError("PROVIDER_ERROR", "spent, then failed", { retryable: false });
    });
    await refusal(send("alice", "spend"));

    const error = await refusal(send("alice", "one more"));

    expect(error).toMatchObject({ code: "RATE_LIMITED", extra: { fighter: "alice" } });
    expect((await history("alice")).turns).toHaveLength(1);
  });
});

describe("the history a turn is prompted with", () => {
  it("is the bout as stored, tool calls and all, whether kept from the last turn or read again", async () => {
    const { spawn, send, llm, addMove, store } = await setup();
    await spawn("hana");
    addMove("note", async () => "noted");
    let n = 0;
    llm.answer((call) => {
      n += 1;
      if (n === 1) return { tool_calls: [{ id: "c1", name: "note", arguments: { text: "x" } }] };
      return { text: `re: ${call.lastUser}` };
    });
    await send("hana", "one");
    await send("hana", "two");
    const third = await send("hana", "three");

    const expected = [
      { role: "user", content: "one" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "note", arguments: { text: "x" } }] },
      { role: "tool", tool_call_id: "c1", name: "note", content: "noted" },
      { role: "assistant", content: "re: one" },
      { role: "user", content: "two" },
      { role: "assistant", content: "re: two" },
      { role: "user", content: "three" },
    ];
    expect(llm.calls.at(-1)?.request.messages).toEqual(expected);
    // What the store holds gives the same prompt (the kept history is only a shortcut).
    const stored = (await store.messages.tail(third.bout_id)).map((m) => m.content);
    expect(stored).toEqual([...expected.map((m) => m.content), "re: three"]);
  });
});

describe("Idempotency-Key", () => {
  it("answers a retry with the first attempt's result and runs one turn", async () => {
    const { spawn, path, llm, history } = await setup();
    await spawn("alice");

    const first = await path.message("alice", "once only", { idempotency_key: "k-once" });
    const retry = await path.message("alice", "once only", { idempotency_key: "k-once" });

    expect(retry).toEqual(first);
    expect(llm.calls).toHaveLength(1);
    expect((await history("alice")).turns).toHaveLength(1);
  });

  it("runs one turn for concurrent attempts with one key, each getting its result", async () => {
    const { spawn, path, llm, history } = await setup();
    await spawn("alice");
    const release = deferred();
    llm.answer(async () => {
      await release.promise;
      return { text: "slow answer" };
    });

    const attempts = [1, 2, 3].map(() => path.message("alice", "concurrent", { idempotency_key: "k-many" }));
    await llm.called(1);
    release.resolve();
    const results = await Promise.all(attempts);

    expect(new Set(results.map((r) => r.turn_id)).size).toBe(1);
    expect(results.map((r) => r.response)).toEqual(["slow answer", "slow answer", "slow answer"]);
    expect(llm.calls).toHaveLength(1);
    expect((await history("alice")).turns).toHaveLength(1);
  });

  it("refuses the key with another request as CONFLICT, while the first runs and after it", async () => {
    const { spawn, path, llm, history } = await setup();
    await spawn("alice");
    await spawn("bob");
    const release = deferred();
    llm.answer(async () => {
      await release.promise;
      return { text: "first" };
    });

    const first = path.message("alice", "the first message", { idempotency_key: "k-reused" });
    await llm.called(1);
    const whileRunning = await refusal(
      path.message("alice", "another message", { idempotency_key: "k-reused" }),
    );
    release.resolve();
    await first;
    const after = await refusal(path.message("alice", "another message", { idempotency_key: "k-reused" }));
    const otherFighter = await refusal(
      path.message("bob", "the first message", { idempotency_key: "k-reused" }),
    );
    const otherBout = await refusal(
      path.message("alice", "the first message", { idempotency_key: "k-reused", bout: "new" }),
    );

    for (const error of [whileRunning, after, otherFighter, otherBout]) {
      expect(error.code).toBe("CONFLICT");
      expect(error.message).toMatch(/"k-reused" was used for a different request/);
    }
    expect(llm.calls).toHaveLength(1);
    expect((await history("alice")).turns).toHaveLength(1);
    expect((await history("bob")).turns).toHaveLength(0);
  });

  it("replays a failed first attempt's error, with the same code, without running again", async () => {
    const { spawn, path, llm, history } = await setup();
    await spawn("alice");
    llm.answer(() => {
      throw new SparError("PROVIDER_ERROR", "a request the model refuses", {
        provider: "scripted",
        retryable: false,
      });
    });

    const first = await refusal(path.message("alice", "fails once", { idempotency_key: "k-fail" }));
    const again = await refusal(path.message("alice", "fails once", { idempotency_key: "k-fail" }));

    const shape = (e: SparError) => ({ code: e.code, message: e.message, extra: e.extra, status: e.status });
    expect(shape(again)).toEqual(shape(first));
    expect(first.code).toBe("PROVIDER_ERROR");
    expect(llm.calls).toHaveLength(1);
    const stored = await history("alice");
    expect(stored.messages.filter((m) => m.content === "fails once")).toHaveLength(1);
    expect(stored.turns.map((turn) => turn.status)).toEqual(["failed"]);
  });
});

describe("call chains", () => {
  it("refuses a message to a fighter already in the chain at once, naming the chain, storing nothing", async () => {
    const { spawn, send, path, llm, store } = await setup();
    const alice = await spawn("alice");
    const bob = await spawn("bob");
    const release = deferred();
    llm.answer(async () => {
      await release.promise;
      return { text: "done" };
    });
    // Alice is busy: queued, a call back into her would wait behind a turn that waits on it.
    const busy = send("alice", "occupied");
    await llm.called(1);

    // Settles while Alice's turn still runs: refused at the door, not queued.
    const error = await refusal(path.message("alice", "back to you", { chain: [alice.id, bob.id] }));
    release.resolve();
    await busy;

    expect(error.code).toBe("CONFLICT");
    expect(error.extra).toEqual({ chain: "alice → bob → alice" });
    expect(error.message).toContain(
      'fighter "alice" is already waiting in this call chain (alice → bob → alice)',
    );
    expect(llm.calls).toHaveLength(1);
    expect(await store.bouts.list(bob.id)).toEqual([]);
    const [bout] = await store.bouts.list(alice.id);
    expect((await store.messages.list(bout?.id ?? "")).map((m) => m.content)).toEqual(["occupied", "done"]);
    expect((await store.turns.list(bout?.id ?? "")).length).toBe(1);
  });

  it("refuses a chain already at [agent] max_call_depth, and allows one below it", async () => {
    const { spawn, path, store, llm } = await setup({ agent: { max_call_depth: 2 } });
    const alice = await spawn("alice");
    const bob = await spawn("bob");
    const carol = await spawn("carol");

    const allowed = await path.message("carol", "one hop", { chain: [alice.id] });
    const error = await refusal(path.message("carol", "two hops", { chain: [alice.id, bob.id] }));

    expect(allowed.response).toBe("reply to one hop");
    expect(error.code).toBe("CONFLICT");
    expect(error.extra).toEqual({ chain: "alice → bob → carol" });
    expect(error.message).toContain("deeper than [agent] max_call_depth (2)");
    expect(llm.calls).toHaveLength(1);
    const [bout] = await store.bouts.list(carol.id);
    expect((await store.turns.list(bout?.id ?? "")).length).toBe(1);
  });

  it("runs messageTo as the target's turn with the sender in its chain, naming the sender to turn.end", async () => {
    const { spawn, path, llm, store, addMove, hooks } = await setup();
    const alice = await spawn("alice");
    const bob = await spawn("bob");
    const ended: TurnSummary[] = [];
    hooks.turn.end.tapPromise("identity-test", async (turn) => {
      ended.push(turn);
    });
    let chain: readonly string[] = [];
    addMove("whoami", async (_input, context) => {
      chain = context.chain;
      return "bob";
    });
    llm.answer((call) =>
      call.request.messages.at(-1)?.role === "user"
        ? { tool_calls: [{ id: "c1", name: "whoami", arguments: {} }] }
        : { text: "bob answers" },
    );

    const result = await path.messageTo("alice", "bob", "hello   bob,\nhow are you?");

    expect(result.response).toBe("bob answers");
    expect(llm.calls.map((c) => c.fighter)).toEqual(["bob", "bob"]);
    expect(llm.calls[0]?.lastUser).toBe(
      `[message from fighter "alice" (${alice.id})]\nhello   bob,\nhow are you?`,
    );
    expect(chain).toEqual([alice.id, bob.id]);
    expect(await store.bouts.list(alice.id)).toEqual([]);
    // The words as alice wrote them: the identity plugin counts the exchange on both sides.
    expect(ended.map((turn) => [turn.fighter.name, turn.sender])).toEqual([
      ["bob", { kind: "fighter", name: "alice", content: "hello   bob,\nhow are you?" }],
    ]);
    expect((await refusal(path.messageTo("alice", alice.id, "me"))).code).toBe("VALIDATION_FAILED");
  });

  it("refuses Alice → Bob → Alice inside a move at once, returning it to Bob's model", async () => {
    const { spawn, send, path, llm, addMove, history } = await setup();
    await spawn("alice");
    await spawn("bob");
    addMove("ask", async (input, context) => {
      const reply = await path.messageTo(context.fighter.id, String(input.to), String(input.text), {
        chain: context.chain,
        signal: context.signal,
      });
      return reply.response;
    });
    llm.answer((call) => {
      const last = call.request.messages.at(-1);
      if (last?.role === "tool") return { text: `${call.fighter}: done` };
      const to = call.fighter === "alice" ? "bob" : "alice";
      return { tool_calls: [{ id: `to-${to}`, name: "ask", arguments: { to, text: `ask ${to}` } }] };
    });

    const reply = await send("alice", "talk to bob");

    expect(reply.response).toBe("alice: done");
    const bob = await history("bob");
    const refused = bob.messages.find((m) => m.role === "tool");
    expect(refused?.is_error).toBe(true);
    expect(JSON.parse(refused?.content ?? "{}").error.code).toBe("CONFLICT");
    expect(refused?.content).toContain("alice → bob → alice");
    const alice = await history("alice");
    expect(alice.turns.map((turn) => turn.status)).toEqual(["completed"]);
    expect(alice.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(alice.messages[2]?.content).toBe("bob: done");
    expect(llm.calls.map((c) => c.fighter)).toEqual(["alice", "bob", "bob", "alice"]);
  });
});

describe("cancellation", () => {
  it("says CONFLICT when the fighter has no turn running", async () => {
    const { spawn, path, send } = await setup();
    await spawn("alice");
    await send("alice", "done already");

    const error = await refusal(path.cancel("alice"));

    expect(error.code).toBe("CONFLICT");
    expect(error.message).toBe('fighter "alice" has no turn running');
    expect((await refusal(path.cancel("nobody"))).code).toBe("FIGHTER_NOT_FOUND");
  });

  it("cancels a running turn: CANCELLED to its caller, recorded, the fighter idle, no further model call", async () => {
    const { spawn, send, path, llm, history, fighters, addMove, published } = await setup();
    await spawn("alice");
    const moveStarted = deferred();
    const windDown = deferred();
    addMove("wait", async (_input, context) => {
      moveStarted.resolve();
      await new Promise((resolve) => context.signal.addEventListener("abort", resolve, { once: true }));
      // Still winding down after the cancellation, until the test lets it finish.
      await windDown.promise;
      return "stopped early";
    });
    // Every call asks for the move again: a model call after the cancellation would run it again.
    llm.answer(() => ({ tool_calls: [{ id: "c1", name: "wait", arguments: {} }] }));

    const pending = refusal(send("alice", "start something long"));
    await moveStarted.promise;
    const cancelled = await path.cancel("alice");
    // Idle the moment it is cancelled, though its move has not finished yet.
    expect(fighters.find("alice").status).toBe("idle");
    windDown.resolve();
    const error = await pending;

    expect(error.code).toBe("CANCELLED");
    expect(error.message).toBe("the turn was cancelled: POST /api/v1/fighters/:id/cancel");
    expect(fighters.find("alice").status).toBe("idle");
    const stored = await history("alice");
    expect(cancelled).toEqual({ turn_id: stored.turns[0]?.id, bout_id: stored.turns[0]?.bout_id });
    expect(stored.turns).toEqual([
      expect.objectContaining({ status: "cancelled", error: { code: "CANCELLED", message: error.message } }),
    ]);
    expect(stored.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "start something long"],
      ["assistant", ""],
      ["tool", "stopped early"],
    ]);
    expect(published).toContainEqual(
      expect.objectContaining({ kind: "message.failed", turn_id: cancelled.turn_id, status: "cancelled" }),
    );
    await fighters.find("alice").queue;
    expect(llm.calls).toHaveLength(1);
    expect((await refusal(path.cancel("alice"))).code).toBe("CONFLICT");

    // The next turn runs, and its model is told the cancelled turn's move ran.
    llm.answer(() => ({ text: "fresh start" }));
    expect((await send("alice", "again")).response).toBe("fresh start");
    expect(llm.calls.at(-1)?.request.messages.at(-2)?.content).toContain(
      "cancelled (CANCELLED: the turn was cancelled: POST /api/v1/fighters/:id/cancel)",
    );
  });

  it("cancels a turn while its model call is in flight", async () => {
    const { spawn, send, path, llm, history, fighters } = await setup();
    await spawn("alice");
    llm.answer(never);

    const pending = refusal(send("alice", "think hard"));
    await llm.called(1);
    await path.cancel("alice");

    expect((await pending).code).toBe("CANCELLED");
    expect(fighters.find("alice").status).toBe("idle");
    const stored = await history("alice");
    expect(stored.turns.map((turn) => turn.status)).toEqual(["cancelled"]);
    expect(stored.messages.map((m) => m.content)).toEqual(["think hard"]);
  });

  it("never begins a queued message whose caller gave up before it started", async () => {
    const { spawn, send, path, llm, history, published } = await setup();
    const alice = await spawn("alice");
    const release = deferred();
    llm.answer(async (call) => {
      await release.promise;
      return { text: `reply to ${call.lastUser}` };
    });
    const first = send("alice", "first");
    await llm.called(1);

    const controller = new AbortController();
    const second = refusal(path.message("alice", "second", { signal: controller.signal }));
    controller.abort();
    release.resolve();

    expect((await first).response).toBe("reply to first");
    const error = await second;
    expect(error.code).toBe("CANCELLED");
    expect(error.message).toBe("the turn was cancelled: its caller gave up");
    expect(llm.calls).toHaveLength(1);
    const stored = await history("alice");
    expect(stored.turns).toHaveLength(1);
    expect(stored.messages.map((m) => m.content)).toEqual(["first", "reply to first"]);
    const received = published.filter((e) => e.kind === "message.received" && e.fighter_id === alice.id);
    expect(received).toHaveLength(1);
  });

  it("stop() cancels running and queued turns of every fighter, the running ones recorded when it resolves", async () => {
    const { spawn, send, path, llm, history } = await setup();
    await spawn("alice");
    await spawn("bob");
    llm.answer(never);
    const aliceRunning = refusal(send("alice", "running"));
    const bobRunning = refusal(send("bob", "running too"));
    await llm.called(2);
    const aliceQueued = refusal(send("alice", "queued"));

    await path.stop();

    // Recorded before stop() resolved: nothing further is awaited here.
    const alice = await history("alice");
    const bob = await history("bob");
    const stopped = { code: "CANCELLED", message: "the turn was cancelled: the daemon is stopping" };
    expect(alice.turns).toEqual([expect.objectContaining({ status: "cancelled", error: stopped })]);
    expect(bob.turns).toEqual([expect.objectContaining({ status: "cancelled", error: stopped })]);
    expect(alice.messages.map((m) => m.content)).toEqual(["running"]);
    for (const error of await Promise.all([aliceRunning, bobRunning, aliceQueued])) {
      expect({ code: error.code, message: error.message }).toEqual(stopped);
    }
    expect(llm.calls).toHaveLength(2);
  });
  it("stop() records the running turn of a fighter killed while it ran before it resolves", async () => {
    const { spawn, send, path, llm, store, fighters } = await setup();
    const alice = await spawn("alice");
    llm.answer(never);
    const running = refusal(send("alice", "running"));
    await llm.called(1);
    await fighters.kill("alice");

    await path.stop();

    // The daemon closes the store once stop() resolves: a turn not recorded by then stays "running".
    const [bout] = await store.bouts.list(alice.id);
    expect((await store.turns.list(bout?.id ?? "")).map((turn) => turn.status)).toEqual(["cancelled"]);
    expect((await running).code).toBe("CANCELLED");
  });

  it("cancels the running turn of a fighter killed while it ran, and never begins its queued ones", async () => {
    const { spawn, send, llm, fighters, store, path } = await setup();
    const alice = await spawn("alice");
    const release = deferred();
    llm.answer(async () => {
      await release.promise;
      return { text: "done" };
    });
    const first = refusal(send("alice", "first"));
    await llm.called(1);
    const queued = refusal(send("alice", "queued"));

    // As the Ring's kill does: the registry forgets the fighter, the path cancels its turn.
    await fighters.kill("alice");
    path.killed(alice.id);
    release.resolve();

    const cancelled = await first;
    expect(cancelled.code).toBe("CANCELLED");
    expect(cancelled.message).toContain("its fighter was killed");
    const error = await queued;
    expect(error.code).toBe("FIGHTER_NOT_FOUND");
    expect(error.message).toBe('fighter "alice" was killed');
    const [bout] = await store.bouts.list(alice.id);
    expect((await store.turns.list(bout?.id ?? "")).map((turn) => turn.status)).toEqual(["cancelled"]);
    expect(llm.calls).toHaveLength(1);
  });
});

describe("events", () => {
  it("publishes message.completed after the fighter is back to idle, turn after turn", async () => {
    const { spawn, send, published } = await setup();
    const alice = await spawn("alice");

    const results = await Promise.all(["one", "two", "three"].map((text) => send("alice", text)));

    expect(lifecycle(published, alice.id)).toEqual(
      results.flatMap((r) => ["status:fighting", "status:idle", `completed:${r.turn_id}`]),
    );
    const completed = published.find((e) => e.kind === "message.completed");
    expect(completed).toMatchObject({
      bout_id: results[0]?.bout_id,
      usage: { input_tokens: 10, output_tokens: 2 },
      iterations: 1,
      model: "scripted-1",
      stop_reason: "end",
    });
  });

  it("publishes message.failed, never message.completed, for failed and cancelled turns", async () => {
    const { spawn, send, path, llm, published } = await setup();
    const alice = await spawn("alice");
    llm.answer(() => {
      throw new SparError("PROVIDER_ERROR", "no luck", { retryable: false });
    });
    await refusal(send("alice", "fails"));
    llm.answer(never);
    const pending = refusal(send("alice", "cancelled"));
    await llm.called(2);
    const { turn_id } = await path.cancel("alice");
    await pending;

    const kinds = lifecycle(published, alice.id);
    expect(kinds.filter((k) => k.startsWith("completed:"))).toEqual([]);
    expect(kinds.filter((k) => k.startsWith("failed:"))).toEqual([
      expect.stringMatching(/^failed:failed:/),
      `failed:cancelled:${turn_id}`,
    ]);
    expect(published.filter((e) => e.kind === "message.failed")).toEqual([
      expect.objectContaining({ error: { code: "PROVIDER_ERROR", message: "no luck" } }),
      expect.objectContaining({ error: expect.objectContaining({ code: "CANCELLED" }) }),
    ]);
  });

  it("answers although a turn.end tap throws after the commit, and publishes turn.hook_failed", async () => {
    const { spawn, send, hooks, history, published, log } = await setup();
    const alice = await spawn("alice");
    hooks.turn.end.tapPromise("moves-broken-end", async () => {
      throw new Error("bookkeeping exploded");
    });

    const reply: FighterMessageResult = await send("alice", "please break the end");

    expect(reply.response).toBe("reply to please break the end");
    expect((await history("alice")).turns.map((turn) => turn.status)).toEqual(["completed"]);
    const failed = published.filter((e) => e.kind === "turn.hook_failed");
    expect(failed).toEqual([
      expect.objectContaining({
        fighter_id: alice.id,
        bout_id: reply.bout_id,
        turn_id: reply.turn_id,
        hook: "turn.end",
        error: expect.stringContaining("bookkeeping exploded"),
      }),
    ]);
    expect(lifecycle(published, alice.id).at(-1)).toBe(`completed:${reply.turn_id}`);
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        level: "error",
        message: "after a committed turn",
        fields: expect.objectContaining({ hook: "turn.end", turn: reply.turn_id }),
      }),
    );
  });
});

describe("quota at the door", () => {
  it("refuses a message over the requests quota with RATE_LIMITED before anything is stored or queued", async () => {
    const { spawn, send, llm, history, fighters, published } = await setup({
      quotas: { requests_per_minute: 1 },
    });
    const alice = await spawn("alice");
    await send("alice", "allowed");

    const error = await refusal(send("alice", "one too many"));

    expect(error.code).toBe("RATE_LIMITED");
    expect(error.extra).toEqual({ retry_after_s: expect.any(Number), fighter: "alice" });
    expect(fighters.find("alice").status).toBe("resting");
    expect(published).toContainEqual(
      expect.objectContaining({ kind: "fighter.rate_limited", fighter_id: alice.id, reason: "requests" }),
    );
    expect(llm.calls).toHaveLength(1);
    expect((await history("alice")).messages.map((m) => m.content)).toEqual(["allowed", "reply to allowed"]);
  });
});
