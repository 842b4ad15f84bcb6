/**
 * The troop contract: every strategy plugin, end to end through the real daemon over HTTP (and the
 * CLI in test/e2e/cli-troops.test.ts), with the fake OpenAI server as every member's model. The fake
 * answers each fighter by its system prompt ("You are <name>."), so parallel steps get the replies
 * meant for them whatever order they arrive in.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TroopTaskRecord } from "../../lib/troops/records.js";

import { type ChatCompletionRequestBody, type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import type { ScriptedReply } from "../fakes/scripted.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

type Behaviour = (input: string) => ScriptedReply;

interface TroopView {
  id: string;
  name: string;
  strategy: string;
  leader: string;
  members: string[];
  names: Record<string, string>;
}

const text = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("")
      : "";

describe("troop contract: six strategies through the real daemon", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  /** Per fighter name: how it answers (by default, naming itself and what it was asked). */
  const behaviours = new Map<string, Behaviour>();
  const ids = new Map<string, string>();

  const reply = (name: string, input: string): ScriptedReply => {
    const behaviour = behaviours.get(name);
    if (behaviour) return behaviour(input);
    return { text: `${name} did: ${input.replace(/\s+/g, " ").slice(0, 300)}` };
  };

  const answer = (body: ChatCompletionRequestBody): ScriptedReply => {
    const system = body.messages
      .filter((m) => m.role === "system")
      .map((m) => text(m.content))
      .join("\n");
    const name = /You are ([a-z-]+)\./.exec(system)?.[1] ?? "unknown";
    const input = text(body.messages.findLast((m) => m.role === "user")?.content);
    return reply(name, input);
  };

  const spawn = async (name: string, extra: Record<string, unknown> = {}) => {
    const res = await daemon.request<{ id: string }>("POST", "/api/v1/fighters", {
      manifest: { name, description: `${name}, a troop member`, system_prompt: `You are ${name}.`, ...extra },
    });
    expect(res.status).toBe(201);
    ids.set(name, res.body.id);
    return res.body.id;
  };

  const createTroop = async (name: string, leader: string, members: string[], strategy: string) => {
    const res = await daemon.request<TroopView>("POST", "/api/v1/troops", {
      name,
      leader,
      members,
      strategy,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };

  const runTask = async (troop: string, task: string) => {
    const res = await daemon.request<TroopTaskRecord>("POST", `/api/v1/troops/${troop}/tasks`, { task });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  const idOf = (name: string) => ids.get(name) as string;
  const status = async (name: string) =>
    (await daemon.request<{ status: string }>("GET", `/api/v1/fighters/${name}`)).body.status;

  async function start() {
    daemon = await startDaemon(home, port);
  }

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.setDefault(answer);
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url, "\n[creed]\nreflect = false\n\n[troops]\nmax_parallel = 2\n");
    await start();
    for (const name of ["alice", "bob", "carol", "lead"]) await spawn(name);
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  beforeEach(() => {
    behaviours.clear();
  });

  describe("troops", () => {
    it("creates a troop from fighter names, shows it by id and name, and lists it", async () => {
      const troop = await createTroop("crew", "lead", ["alice", idOf("bob")], "Pipeline");
      expect(troop).toMatchObject({
        name: "crew",
        strategy: "pipeline",
        leader: idOf("lead"),
        members: [idOf("alice"), idOf("bob")],
      });
      expect(troop.names[idOf("alice")]).toBe("alice");
      const byName = await daemon.request<TroopView>("GET", "/api/v1/troops/crew");
      expect(byName.body.id).toBe(troop.id);
      const listed = await daemon.request<{ troops: TroopView[] }>("GET", "/api/troops");
      expect(listed.body.troops.map((t) => t.name)).toContain("crew");
    });

    it("answers the spec's unversioned routes: POST /api/troops and POST /api/troops/{id}/tasks", async () => {
      const created = await daemon.request<TroopView>("POST", "/api/troops", {
        name: "spec-route",
        leader: idOf("lead"),
        members: [idOf("alice")],
        strategy: "pipeline",
      });
      expect(created.status).toBe(201);
      const task = await daemon.request<TroopTaskRecord>("POST", `/api/troops/${created.body.id}/tasks`, {
        task: "say hi",
      });
      expect(task.status).toBe(200);
      expect(task.body.status).toBe("completed");
      expect(task.body.troop_id).toBe(created.body.id);
    });

    it("accepts the spec's spellings of the strategies", async () => {
      const spellings: [string, string][] = [
        ["LeaderWorker", "leader_worker"],
        ["leader-worker", "leader_worker"],
        ["RoundRobin", "round_robin"],
        ["CONSENSUS", "consensus"],
      ];
      for (const [spelling, wire] of spellings) {
        const troop = await createTroop(`spelled-${wire}-${spelling.length}`, "lead", ["alice"], spelling);
        expect(troop.strategy).toBe(wire);
      }
    });

    it("refuses an unknown strategy listing the six, and a missing member by name", async () => {
      const unknown = await daemon.request<{ error: { code: string; message: string; available: string[] } }>(
        "POST",
        "/api/v1/troops",
        { name: "bad", leader: "lead", members: ["alice"], strategy: "anarchy" },
      );
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.code).toBe("VALIDATION_FAILED");
      expect([...unknown.body.error.available].sort()).toEqual(
        ["broadcast", "consensus", "leader_worker", "pipeline", "round_robin", "specialist"].sort(),
      );
      const missing = await daemon.request<{ error: { code: string; message: string } }>(
        "POST",
        "/api/v1/troops",
        { name: "bad", leader: "lead", members: ["alice", "nobody-here"], strategy: "broadcast" },
      );
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe("FIGHTER_NOT_FOUND");
      expect(missing.body.error.message).toContain("nobody-here");
      const gone = await daemon.request<{ error: { code: string } }>("GET", "/api/v1/troops/no-such-troop");
      expect(gone.status).toBe(404);
      expect(gone.body.error.code).toBe("TROOP_NOT_FOUND");
      const noTask = await daemon.request<{ error: { code: string } }>("POST", "/api/v1/troops/crew/tasks", {
        task: "",
      });
      expect(noTask.status).toBe(400);
    });
  });

  describe("pipeline", () => {
    it("feeds member N's output to member N+1, in order", async () => {
      await createTroop("line", "lead", ["alice", "bob", "carol"], "pipeline");
      const task = await runTask("line", "draft a haiku about rivers");
      expect(task.status).toBe("completed");
      expect(task.steps.map((s) => s.fighter_id)).toEqual([idOf("alice"), idOf("bob"), idOf("carol")]);
      expect(task.steps[0]?.input).toContain("draft a haiku about rivers");
      for (let i = 1; i < 3; i++) {
        expect(task.steps[i]?.input).toContain(task.steps[i - 1]?.output as string);
      }
      expect(task.result).toBe(task.steps[2]?.output);
      expect(task.partial).toBe(false);
      expect(task.usage.input_tokens).toBe(task.steps.reduce((n, s) => n + s.usage.input_tokens, 0));
      expect(task.usage.input_tokens).toBeGreaterThan(0);
      // Each step ran in a fresh bout of its member, kept apart from the member's own conversation.
      const bouts = new Set(task.steps.map((s) => s.bout_id));
      expect(bouts.size).toBe(3);
    });

    it("stops at a failed step: later members never run, the record is failed and partial", async () => {
      behaviours.set("bob", () => ({ status: 400, error_message: "bob's model refused" }));
      const task = await runTask("line", "summarize the minutes");
      expect(task.status).toBe("failed");
      expect(task.steps.map((s) => s.fighter_id)).toEqual([idOf("alice"), idOf("bob")]);
      expect(task.steps[1]?.error?.code).toBe("PROVIDER_ERROR");
      expect(task.error?.message).toContain("bob");
      expect(task.result).toBeNull();
      expect(task.partial).toBe(true);
      for (const name of ["alice", "bob", "carol"]) expect(await status(name)).toBe("idle");
    });
  });

  describe("broadcast", () => {
    it("asks every member the same task in parallel and returns the leader's synthesis", async () => {
      behaviours.set("lead", (input) => ({
        text: `synthesis of ${(input.match(/did: /g) ?? []).length} answers`,
      }));
      await createTroop("chorus", "lead", ["alice", "bob", "carol"], "broadcast");
      const task = await runTask("chorus", "name a colour");
      expect(task.status).toBe("completed");
      const answers = task.steps.filter((s) => s.role === "answer");
      expect(answers.map((s) => s.fighter_id).sort()).toEqual(
        [idOf("alice"), idOf("bob"), idOf("carol")].sort(),
      );
      for (const s of answers) expect(s.input).toContain("name a colour");
      const synthesis = task.steps.find((s) => s.role === "synthesize");
      expect(synthesis?.fighter_id).toBe(idOf("lead"));
      expect(task.result).toBe("synthesis of 3 answers");
    });

    it("keeps going without a member that fails, and marks the result partial", async () => {
      behaviours.set("carol", () => ({ status: 400, error_message: "carol is down" }));
      behaviours.set("lead", (input) => ({
        text: `synthesis of ${(input.match(/did: /g) ?? []).length} answers`,
      }));
      const task = await runTask("chorus", "name a fruit");
      expect(task.status).toBe("completed");
      expect(task.result).toBe("synthesis of 2 answers");
      expect(task.partial).toBe(true);
      expect(task.steps.find((s) => s.fighter_id === idOf("carol"))?.error?.code).toBe("PROVIDER_ERROR");
    });
  });

  describe("consensus", () => {
    it("records validated votes, retries a bad one once, and has the leader break a tie", async () => {
      const votes: Record<string, number> = { alice: 1, bob: 2, carol: 3 };
      for (const name of ["alice", "bob", "carol"]) {
        behaviours.set(name, (input) => {
          if (!input.includes('"choice"')) return { text: `${name}'s answer` };
          // carol's first vote is not JSON: she is asked once more, told what was wrong.
          if (name === "carol" && !input.includes("could not be used")) {
            return { text: "I pick the third one, obviously." };
          }
          return { text: JSON.stringify({ choice: votes[name], reason: `${name} likes it` }) };
        });
      }
      // A three-way tie: the leader picks the second answer among those tied.
      behaviours.set("lead", (input) => {
        const bobLine = input.split("\n").find((l) => l.includes("bob's answer")) ?? "";
        const number = Number(/(\d+)/.exec(bobLine)?.[1]);
        return {
          text: `\`\`\`json\n${JSON.stringify({ choice: number, reason: "bob's is clearest" })}\n\`\`\``,
        };
      });
      await createTroop("council", "lead", ["alice", "bob", "carol"], "consensus");
      const task = await runTask("council", "which plan is best?");
      expect(task.status, JSON.stringify(task.error)).toBe("completed");
      expect(task.result).toBe("bob's answer");
      const cast = task.votes ?? [];
      const memberVotes = cast.filter((v) => !v.tie_break);
      expect(memberVotes).toHaveLength(3);
      expect(memberVotes.every((v) => v.choice !== null)).toBe(true);
      const tieBreak = cast.find((v) => v.tie_break);
      expect(tieBreak?.fighter_id).toBe(idOf("lead"));
      // carol's invalid first vote is a recorded step with its error, then her retry.
      const carolVotes = task.steps.filter((s) => s.fighter_id === idOf("carol") && s.role === "vote");
      expect(carolVotes).toHaveLength(2);
      expect(carolVotes[0]?.error?.code).toBe("VALIDATION_FAILED");
      expect(carolVotes[1]?.error).toBeNull();
    });

    it("lets the majority win without the leader", async () => {
      for (const name of ["alice", "bob", "carol"]) {
        behaviours.set(name, (input) => {
          if (!input.includes('"choice"'))
            return { text: name === "carol" ? "the odd one" : "the common one" };
          const line = input.split("\n").find((l) => l.includes("the odd one")) ?? "";
          return { text: JSON.stringify({ choice: Number(/(\d+)/.exec(line)?.[1]), reason: "odd is best" }) };
        });
      }
      const task = await runTask("council", "pick one");
      expect(task.status).toBe("completed");
      expect(task.result).toBe("the odd one");
      expect(task.votes?.some((v) => v.tie_break)).toBe(false);
      expect(task.steps.some((s) => s.fighter_id === idOf("lead"))).toBe(false);
    });
  });

  describe("leader_worker", () => {
    const decomposition = JSON.stringify({ subtasks: [{ task: "part one" }, { task: "part two" }] });

    it("retries an invalid decomposition once, runs the subtasks on the workers, and synthesizes", async () => {
      behaviours.set("lead", (input) => {
        if (input.includes('"subtasks"')) {
          // The first decomposition is not the shape asked for; the retry says what was wrong.
          const retried = input.includes("could not be used");
          return { text: retried ? decomposition : JSON.stringify({ subtasks: "do it all" }) };
        }
        return { text: `final: ${(input.match(/(alice|bob) did:/g) ?? []).length} parts` };
      });
      await createTroop("shop", "lead", ["alice", "bob"], "leader_worker");
      const task = await runTask("shop", "build a birdhouse");
      expect(task.status, JSON.stringify(task.error)).toBe("completed");
      const decompose = task.steps.filter((s) => s.role === "decompose");
      expect(decompose).toHaveLength(2);
      expect(decompose[0]?.error?.code).toBe("VALIDATION_FAILED");
      const work = task.steps.filter((s) => s.role === "work");
      expect(work.map((s) => s.fighter_id)).toEqual([idOf("alice"), idOf("bob")]);
      expect(work[0]?.input).toContain("part one");
      expect(work[1]?.input).toContain("part two");
      expect(task.result).toBe("final: 2 parts");
      expect(task.partial).toBe(false);
    });

    it("fails when the leader's decomposition is invalid twice, running no worker", async () => {
      behaviours.set("lead", () => ({ text: "I would rather not plan." }));
      const task = await runTask("shop", "paint the fence");
      expect(task.status).toBe("failed");
      expect(task.error?.code).toBe("VALIDATION_FAILED");
      expect(task.steps.filter((s) => s.role === "decompose")).toHaveLength(2);
      expect(task.steps.some((s) => s.role === "work")).toBe(false);
    });
  });

  describe("round_robin", () => {
    it("gives successive tasks to successive members, and the rotation survives a restart", async () => {
      await createTroop("rota", "lead", ["alice", "bob", "carol"], "RoundRobin");
      const first = await runTask("rota", "ticket 1");
      const second = await runTask("rota", "ticket 2");
      expect(first.steps.map((s) => s.fighter_id)).toEqual([idOf("alice")]);
      expect(second.steps.map((s) => s.fighter_id)).toEqual([idOf("bob")]);
      expect(first.result).toContain("alice did:");
      expect(first.result).toContain("ticket 1");
      await daemon.stop();
      await start();
      const third = await runTask("rota", "ticket 3");
      const fourth = await runTask("rota", "ticket 4");
      expect(third.steps.map((s) => s.fighter_id)).toEqual([idOf("carol")]);
      expect(fourth.steps.map((s) => s.fighter_id)).toEqual([idOf("alice")]);
      const listed = await daemon.request<{ tasks: TroopTaskRecord[] }>("GET", "/api/v1/troops/rota/tasks");
      expect(listed.body.tasks.map((t) => t.task)).toEqual(["ticket 4", "ticket 3", "ticket 2", "ticket 1"]);
    }, 60_000);
  });

  describe("specialist", () => {
    it("routes the task to the best-matching member by capabilities, skills and description", async () => {
      await spawn("coder", {
        description: "writes, tests and debugs code in the workspace",
        capabilities: [{ type: "shell_exec" }, { type: "file_read" }, { type: "file_write" }],
      });
      await spawn("scout", {
        description: "researches topics on the web and cites sources",
        capabilities: [{ type: "network", hosts: "*" }],
      });
      await spawn("scribe", { description: "writes clear prose, summaries and release notes" });
      await createTroop("experts", "lead", ["coder", "scout", "scribe"], "specialist");
      const task = await runTask(
        "experts",
        "search the web for the latest Node.js release and cite the page",
      );
      expect(task.status).toBe("completed");
      expect(task.steps.map((s) => s.fighter_id)).toEqual([idOf("scout")]);
      expect(task.reason?.chosen).toBe(idOf("scout"));
      expect(task.reason?.scores).toHaveLength(3);
      const scout = task.reason?.scores.find((s) => s.fighter_id === idOf("scout"));
      const others = task.reason?.scores.filter((s) => s.fighter_id !== idOf("scout")) ?? [];
      for (const other of others) expect(scout?.score ?? 0).toBeGreaterThan(other.score);
      expect(task.reason?.text).toContain("scout");
      // Deterministic: the same task goes to the same member with the same scores.
      const again = await runTask(
        "experts",
        "search the web for the latest Node.js release and cite the page",
      );
      expect(again.reason).toEqual(task.reason);
    });
  });
});
