/**
 * `spar troop` against the real daemon (plugins/troops-local and the broadcast strategy) with the
 * fake OpenAI server as every fighter's model: a troop created and shown by its fighters' names, a
 * broadcast task whose printed result is the leader's synthesis of the members' answers, an --async
 * task followed until it completes, a task whose every step fails (exit 1 with the error), the API's
 * refusals as the CLI reports them, a member that no longer exists, cancelling a running task (and
 * not an ended one), and disbanding.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TroopTaskRecord } from "../../lib/troops/records.js";

import { type ChatCompletionRequestBody, type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const MEMBERS = ["alice", "bob", "carol"];

function text(content: ChatCompletionRequestBody["messages"][number]["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("");
}

/**
 * Each member answers "answer from <name>"; the leader answers "SYNTHESIS of <the members whose
 * answers it was given>", so the printed result shows that the synthesis saw every answer.
 */
function byFighter(body: ChatCompletionRequestBody) {
  const system = body.messages
    .filter((m) => m.role === "system" || m.role === "developer")
    .map((m) => text(m.content))
    .join("\n");
  const user = text(body.messages.findLast((m) => m.role === "user")?.content);
  // Structured steps (a decomposition, a vote) get the JSON they ask for.
  if (user.includes('"subtasks"'))
    return { text: JSON.stringify({ subtasks: [{ task: "part one" }, { task: "part two" }] }) };
  if (user.includes('"choice"')) return { text: JSON.stringify({ choice: 1, reason: "it came first" }) };
  if (system.includes("You are lead.")) {
    const seen = MEMBERS.filter((n) => user.includes(`answer from ${n}`));
    return { text: `SYNTHESIS of ${seen.join(", ")}` };
  }
  const who = MEMBERS.find((n) => system.includes(`You are ${n}.`)) ?? "someone";
  return { text: `answer from ${who}` };
}

describe("spar troop", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  const json = async <T>(...args: string[]) => {
    const run = await daemon.cli([...args, "--json"]);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as T;
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.setDefault(byFighter);
    home = tempHome();
    const port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      "\n[creed]\nreflect = false\n\n[quotas]\nrequests_per_minute = 100000\ntokens_per_minute = 100000000\n",
    );
    daemon = await startDaemon(home, port);
    for (const name of ["lead", ...MEMBERS]) {
      const spawned = await daemon.request("POST", "/api/v1/fighters", {
        manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities: [] },
      });
      expect(spawned.status).toBe(201);
    }
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("creates a troop and lists and shows it by its fighters' names", async () => {
    const created = await daemon.cli([
      "troop",
      "create",
      "council",
      "--leader",
      "lead",
      "--members",
      "alice, bob,carol",
      "--strategy",
      "broadcast",
    ]);
    expect(created.code, created.stderr).toBe(0);
    const id = /id (\S+)/.exec(created.stdout)?.[1] as string;
    expect(created.stdout).toMatch(
      new RegExp(
        `^Created troop council \\(broadcast\\), id ${id}\n  leader   lead\n  members  alice, bob, carol\n`,
      ),
    );

    const listed = await daemon.cli(["troop", "list"]);
    const lines = listed.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+STRATEGY\s+LEADER\s+MEMBERS\s+ID$/);
    expect(lines[1]).toMatch(new RegExp(`^council\\s+broadcast\\s+lead\\s+alice, bob, carol\\s+${id}$`));
    expect(lines).toHaveLength(2);
    const raw = await json<{ troops: { id: string; names: Record<string, string> }[] }>("troop", "list");
    expect(raw.troops.map((t) => t.id)).toEqual([id]);

    const shown = await daemon.cli(["troop", "show", "council"]);
    expect(shown.stdout).toContain(`Troop council (broadcast), id ${id}`);
    expect(shown.stdout).toContain('No tasks yet; spar troop task council "<task>" runs one');
    const byId = await json<{ troop: { name: string }; tasks: unknown[] }>("troop", "show", id);
    expect(byId).toMatchObject({ troop: { name: "council" }, tasks: [] });
  });

  it.each([
    ["pipeline", ["work", "work", "work"]],
    ["consensus", ["answer", "answer", "answer", "vote", "vote", "vote"]],
    ["leader_worker", ["decompose", "work", "work", "synthesize"]],
    ["round_robin", ["answer"]],
    ["specialist", ["answer"]],
  ])("runs a %s task from the command line", async (strategy, roles) => {
    const name = `cli-${strategy.replace("_", "-")}`;
    const created = await daemon.cli([
      "troop",
      "create",
      name,
      "--leader",
      "lead",
      "--members",
      MEMBERS.join(","),
      "--strategy",
      strategy,
    ]);
    expect(created.code, created.stderr).toBe(0);
    const task = await json<TroopTaskRecord>("troop", "task", name, "write the release notes");
    expect(task.status, JSON.stringify(task.error)).toBe("completed");
    expect(task.strategy).toBe(strategy);
    expect(task.steps.map((s) => s.role).sort()).toEqual([...roles].sort());
    expect(task.result).toBeTruthy();
    const printed = await daemon.cli(["troop", "tasks", name]);
    expect(printed.stdout).toContain(task.id);
    expect(printed.stdout).toContain("completed");
    expect((await daemon.cli(["troop", "disband", name])).code).toBe(0);
  });

  it("runs a broadcast task and prints the leader's synthesis and every step", async () => {
    const run = await daemon.cli(["troop", "task", "council", "What is six times seven?"]);
    expect(run.code, run.stderr).toBe(0);
    const [result, , summary = "", steps, ...rows] = run.stdout.trimEnd().split("\n");
    expect(result).toBe("SYNTHESIS of alice, bob, carol");
    expect(summary).toMatch(/^Task \S+: completed \(broadcast\), \d+ tokens$/);
    expect(steps).toBe("Steps:");
    // One answer per member, then the leader's synthesis, each ok with its tokens.
    expect(rows).toHaveLength(4);
    for (const name of MEMBERS) {
      expect(rows.some((r) => new RegExp(`^  ${name}\\s+\\w+\\s+ok\\s+\\d+ tokens$`).test(r))).toBe(true);
    }
    expect(rows.at(-1)).toMatch(/^ {2}lead\s+\w+\s+ok\s+\d+ tokens$/);

    const id = /^Task (\S+):/.exec(summary)?.[1];
    const { tasks } = await json<{ tasks: TroopTaskRecord[] }>("troop", "tasks", "council");
    expect(tasks.map((t) => [t.id, t.status, t.result])).toEqual([
      [id, "completed", "SYNTHESIS of alice, bob, carol"],
    ]);
  });

  it("starts a task with --async and follows it until it completes", async () => {
    const started = await daemon.cli(["troop", "task", "council", "Name a colour.", "--async"]);
    expect(started.code, started.stderr).toBe(0);
    const id = /^Task (\S+) is (pending|running); follow it with spar troop tasks council/.exec(
      started.stdout,
    )?.[1];
    expect(id).toBeDefined();

    let done: TroopTaskRecord | undefined;
    for (let i = 0; i < 200 && !done; i++) {
      const { tasks } = await json<{ tasks: TroopTaskRecord[] }>("troop", "tasks", "council", "--limit", "1");
      done = tasks.find((t) => t.id === id && t.status === "completed");
      if (!done) await sleep(100);
    }
    expect(done?.result).toBe("SYNTHESIS of alice, bob, carol");

    const table = (await daemon.cli(["troop", "tasks", "council"])).stdout.trimEnd().split("\n");
    expect(table[0]).toMatch(/^ID\s+STATUS\s+STRATEGY\s+CREATED\s+TASK$/);
    expect(table[1]).toMatch(new RegExp(`^${id}\\s+completed\\s+broadcast\\s+\\S+\\s+Name a colour\\.$`));
    expect(table).toHaveLength(3);
    const shown = (await daemon.cli(["troop", "show", "council"])).stdout;
    expect(shown).toContain(`Latest tasks:\nID`);
    expect(shown).toContain(id);
  });

  it("shows one task's result and steps with troop show <troop> <task>", async () => {
    const started = await daemon.cli(["troop", "task", "council", "Name a fruit.", "--async"]);
    const id = /^Task (\S+) is/.exec(started.stdout)?.[1] as string;
    expect(started.stdout).toContain(`spar troop show council ${id}`);
    let record: TroopTaskRecord | undefined;
    for (let i = 0; i < 200 && record?.status !== "completed"; i++) {
      if (record) await sleep(100);
      record = await json<TroopTaskRecord>("troop", "show", "council", id);
    }
    expect(record).toMatchObject({ id, status: "completed", result: "SYNTHESIS of alice, bob, carol" });
    expect(record?.steps.map((s) => s.role).sort()).toEqual(["answer", "answer", "answer", "synthesize"]);

    const shown = await daemon.cli(["troop", "show", "council", id]);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      new RegExp(`^Troop council, task ${id} \\(created \\S+, started \\S+, finished \\S+\\)$`),
    );
    expect(lines[1]).toBe("Task: Name a fruit.");
    expect(lines[3]).toBe("SYNTHESIS of alice, bob, carol");
    expect(lines[5]).toMatch(new RegExp(`^Task ${id}: completed \\(broadcast\\), \\d+ tokens$`));
    expect(lines[6]).toBe("Steps:");
    for (const name of [...MEMBERS, "lead"]) {
      expect(lines.slice(7).some((l) => new RegExp(`^  ${name}\\s+\\w+\\s+ok\\s+\\d+ tokens$`).test(l))).toBe(
        true,
      );
    }

    // A member's step ran in a bout of the task's own: a plain chat with the member does not continue it.
    const alice = (await daemon.request<{ id: string }>("GET", "/api/v1/fighters/alice")).body.id;
    const step = record?.steps.find((s) => s.fighter_id === alice);
    const chat = await daemon.cli(["chat", "--fighter", "alice", "hello alice"]);
    expect(chat.code, chat.stderr).toBe(0);
    const prompt = JSON.stringify(fake.requests.at(-1)?.body?.messages);
    expect(prompt).toContain("hello alice");
    expect(prompt).not.toContain("Name a fruit.");
    const steps = await json<{ bouts: { id: string; origin: string }[] }>(
      "bout",
      "list",
      "--fighter",
      "alice",
      "--origin",
      `troop-task:${id}`,
    );
    expect(steps.bouts.map((b) => b.id)).toEqual([step?.bout_id]);
    const user = await json<{ bouts: { origin: string }[] }>(
      "bout",
      "list",
      "--fighter",
      "alice",
      "--origin",
      "user",
    );
    expect(user.bouts).toHaveLength(1);

    const unknown = await daemon.cli(["troop", "show", "council", "no-such-task"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no-such-task.*\(NOT_FOUND\)\n$/);
  });

  it("exits 1 and prints the error when the task fails", async () => {
    fake.setDefault(() => ({ status: 400, error_message: "the model refuses" }));
    try {
      const run = await daemon.cli(["troop", "task", "council", "Fail, please."]);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/Task \S+: failed \(broadcast\)/);
      expect(run.stdout).toMatch(/ {2}alice\s+\w+\s+error\s+\d+ tokens\s+\S/);
      expect(run.stderr).toMatch(/^spar: .+ \([A-Z_]+\)\n$/);

      const raw = await daemon.cli(["troop", "task", "council", "Fail again.", "--json"]);
      expect(raw.code).toBe(1);
      expect(JSON.parse(raw.stdout)).toMatchObject({ status: "failed", error: { code: expect.any(String) } });
    } finally {
      fake.setDefault(byFighter);
    }
  });

  it("fails a consensus task in which no vote is valid, and exits 1", async () => {
    // Every member answers, but no vote (nor the leader's tie-break) is the JSON asked for.
    fake.setDefault((body) => {
      const user = text(body.messages.findLast((m) => m.role === "user")?.content);
      return user.includes('"choice"') ? { text: "They are all fine." } : byFighter(body);
    });
    try {
      const created = await daemon.cli([
        "troop",
        "create",
        "undecided",
        "--leader=lead",
        `--members=${MEMBERS.join(",")}`,
        "--strategy=consensus",
      ]);
      expect(created.code, created.stderr).toBe(0);
      const run = await daemon.cli(["troop", "task", "undecided", "Pick a name."]);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/Task \S+: failed \(consensus\)/);
      expect(run.stderr).toMatch(
        /^spar: no answer was chosen: every vote, the leader's tie-break included, failed \(alice: .+\) \(VALIDATION_FAILED\)\n$/,
      );

      const raw = await daemon.cli(["troop", "task", "undecided", "Pick another.", "--json"]);
      expect(raw.code).toBe(1);
      const record = JSON.parse(raw.stdout) as TroopTaskRecord;
      expect(record).toMatchObject({ status: "failed", result: null, error: { code: "VALIDATION_FAILED" } });
      expect(record.votes?.map((v) => v.choice)).toEqual([null, null, null, null]);
      expect(record.votes?.at(-1)).toMatchObject({ tie_break: true });
      expect((await daemon.cli(["troop", "disband", "undecided"])).code).toBe(0);
    } finally {
      fake.setDefault(byFighter);
    }
  });

  it("names an unknown strategy's alternatives and a missing member", async () => {
    const strategy = await daemon.cli([
      "troop",
      "create",
      "odd",
      "--leader",
      "lead",
      "--members",
      "alice",
      "--strategy",
      "telepathy",
    ]);
    expect(strategy.code).toBe(1);
    expect(strategy.stderr).toContain("telepathy");
    expect(strategy.stderr).toContain("broadcast");
    expect(strategy.stderr).toMatch(/\(VALIDATION_FAILED\)\n$/);
    const asJson = await daemon.cli([
      "troop",
      "create",
      "odd",
      "--leader=lead",
      "--members=alice",
      "--strategy=telepathy",
      "--json",
    ]);
    expect(JSON.parse(asJson.stdout)).toMatchObject({
      error: { code: "VALIDATION_FAILED", available: expect.arrayContaining(["broadcast"]) },
    });

    const member = await daemon.cli([
      "troop",
      "create",
      "odd",
      "--leader",
      "lead",
      "--members",
      "alice,nobody",
      "--strategy",
      "broadcast",
    ]);
    expect(member.code).toBe(1);
    expect(member.stderr).toContain("nobody");
    expect(member.stderr).toMatch(/\(FIGHTER_NOT_FOUND\)\n$/);

    const incomplete = await daemon.cli(["troop", "create", "odd", "--leader", "lead"]);
    expect(incomplete.stderr).toBe(
      "spar: troop create needs --members <a,b,c>, --strategy <name> (VALIDATION_FAILED)\n",
    );
    const unknown = await daemon.cli(["troop", "show", "nowhere"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/\(TROOP_NOT_FOUND\)\n$/);
  });

  it("shows a member that no longer exists by its id, marked gone", async () => {
    const dave = await daemon.request<{ id: string }>("POST", "/api/v1/fighters", {
      manifest: { name: "dave", description: "dave", system_prompt: "You are dave.", capabilities: [] },
    });
    const created = await daemon.cli([
      "troop",
      "create",
      "pair",
      "--leader=lead",
      "--members=alice,dave",
      "--strategy=pipeline",
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect((await daemon.request("DELETE", "/api/v1/fighters/dave")).status).toBe(204);
    const shown = await daemon.cli(["troop", "show", "pair"]);
    expect(shown.stdout).toContain(`  members  alice, ${dave.body.id} (gone)\n`);
    expect((await daemon.cli(["troop", "disband", "pair"])).code).toBe(0);
  });

  it("warns on killing a troop's member, refuses its tasks before any model call, and mends it with troop edit", async () => {
    const spawn = () =>
      daemon.request<{ id: string }>("POST", "/api/v1/fighters", {
        manifest: { name: "erin", description: "erin", system_prompt: "You are erin.", capabilities: [] },
      });
    const first = await spawn();
    const created = await daemon.cli([
      "troop",
      "create",
      "relay",
      "--leader=lead",
      "--members=alice,erin",
      "--strategy=pipeline",
    ]);
    expect(created.code, created.stderr).toBe(0);

    const killed = await daemon.cli(["fighter", "kill", "erin"]);
    expect(killed.code, killed.stderr).toBe(0);
    expect(killed.stdout).toBe("Killed erin\n");
    expect(killed.stderr).toBe(
      "spar: warning: erin was in troop relay, which takes no task until spar troop edit relay --members <a,b,c> (or --leader <fighter>) replaces it\n",
    );

    // Refused before anything is recorded or any model is called.
    const calls = fake.requests.length;
    const refused = await daemon.cli(["troop", "task", "relay", "Relay this."]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^spar: troop "relay" cannot take a task: its member ${first.body.id} no longer exists; .*spar troop edit relay .*\\(TROOP_INCOMPLETE\\)\n$`,
      ),
    );
    const http = await daemon.request<{ error: { code: string; missing: string[] } }>(
      "POST",
      "/api/v1/troops/relay/tasks",
      { task: "Relay this." },
    );
    expect(http.status).toBe(409);
    expect(http.body.error).toMatchObject({ code: "TROOP_INCOMPLETE", missing: [first.body.id] });
    expect(fake.requests.length).toBe(calls);
    expect((await json<{ tasks: unknown[] }>("troop", "tasks", "relay")).tasks).toEqual([]);

    // A fighter spawned under the same name is another fighter: the troop still lacks the old one.
    const second = await spawn();
    expect(second.status).toBe(201);
    const shown = await json<{ troop: { missing: string[] } }>("troop", "show", "relay");
    expect(shown.troop.missing).toEqual([first.body.id]);

    const edited = await daemon.cli(["troop", "edit", "relay", "--members", "alice, erin"]);
    expect(edited.code, edited.stderr).toBe(0);
    expect(edited.stdout).toMatch(
      /^Edited troop relay \(pipeline\), id \S+\n {2}leader {3}lead\n {2}members {2}alice, erin\n/,
    );
    const done = await json<TroopTaskRecord>("troop", "task", "relay", "Relay this.");
    expect(done.status).toBe("completed");
    expect(done.steps.map((s) => s.fighter_id)).toEqual([expect.any(String), second.body.id]);

    // Checked as at creation, and nothing changes when refused.
    const patch = (body: unknown) =>
      daemon.request<{ error: { code: string } }>("PATCH", "/api/v1/troops/relay", body);
    expect((await patch({})).status).toBe(400);
    expect((await patch({ size: 3 })).body.error.code).toBe("VALIDATION_FAILED");
    expect((await patch({ strategy: "telepathy" })).body.error.code).toBe("VALIDATION_FAILED");
    expect((await patch({ members: ["alice", "alice"] })).body.error.code).toBe("VALIDATION_FAILED");
    expect((await patch({ leader: "nobody" })).body.error.code).toBe("FIGHTER_NOT_FOUND");
    const none = await daemon.cli(["troop", "edit", "relay"]);
    expect(none.stderr).toMatch(/^spar: troop edit needs at least one of --name/);
    const renamed = await daemon.request<{ name: string; strategy: string; members: string[] }>(
      "PATCH",
      "/api/v1/troops/relay",
      { name: "relay2", strategy: "Broadcast" },
    );
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({
      name: "relay2",
      strategy: "broadcast",
      members: [expect.any(String), second.body.id],
    });
    expect((await daemon.cli(["troop", "disband", "relay2"])).code).toBe(0);
  });

  it("cancels a running task", async () => {
    // Every model call hangs until the daemon gives it up.
    fake.setDefault(() => ({ text: "too late", delay_ms: 600_000 }));
    try {
      const started = await daemon.cli(["troop", "task", "council", "Take your time.", "--async"]);
      const id = /^Task (\S+) is/.exec(started.stdout)?.[1] as string;
      // A task still running shows the steps it has so far.
      const running = await daemon.cli(["troop", "show", "council", id]);
      expect(running.code, running.stderr).toBe(0);
      expect(running.stdout).toMatch(
        new RegExp(`Still (pending|running); spar troop show council ${id} again`),
      );
      expect(running.stdout).toMatch(new RegExp(`Task ${id}: (pending|running) \\(broadcast\\)`));
      const cancelled = await daemon.cli(["troop", "cancel", "council", id]);
      expect(cancelled.code, cancelled.stderr).toBe(0);
      expect(cancelled.stdout).toBe(`Task ${id} of council is cancelled\n`);
    } finally {
      fake.setDefault(byFighter);
    }
  });

  it("refuses to cancel an ended task, and disbands the troop", async () => {
    const { tasks } = await json<{ tasks: TroopTaskRecord[] }>("troop", "tasks", "council");
    const ended = tasks[0] as TroopTaskRecord;
    const cancel = await daemon.cli(["troop", "cancel", "council", ended.id]);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(/\(CONFLICT\)\n$/);

    const id = (await json<{ troop: { id: string } }>("troop", "show", "council")).troop.id;
    const gone = await daemon.cli(["troop", "disband", "council"]);
    expect(gone.code, gone.stderr).toBe(0);
    expect(gone.stdout).toBe(`Disbanded troop council (${id})\n`);
    expect((await daemon.cli(["troop", "list"])).stdout).toMatch(/^No troops yet; spar troop create/);
    const again = await daemon.cli(["troop", "disband", "council", "--json"]);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ error: { code: "TROOP_NOT_FOUND" } });
  });
});
