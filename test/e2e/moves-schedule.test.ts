/**
 * The schedule moves through the real daemon: a fighter, told by the scripted model, schedules a
 * message to itself; it arrives as a new turn when due, also after a restart; list and remove work
 * on its own schedules only; a fighter without the `schedule` grant is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  allowUnasked,
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("moves-schedule", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;

  const spawnFighter = (name: string, capabilities: { type: string }[]) =>
    daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities },
    });
  const send = (fighter: string, message: string) =>
    daemon.request<{ response: string }>("POST", `/api/v1/fighters/${fighter}/message`, { message });
  /** The tool results the model was sent, parsed, most recent last. */
  const results = () =>
    fake
      .calls()
      .flatMap((c) => c.tool_results.slice(-1))
      .map((r) => JSON.parse(r));
  /** Waits until the model was sent a user message containing `text` (a scheduled one arriving). */
  async function arrives(text: string, withinMs = 20_000): Promise<void> {
    const until = Date.now() + withinMs;
    while (Date.now() < until) {
      if (fake.calls().some((c) => c.last_user_text.includes(text))) return;
      await sleep(100);
    }
    throw new Error(
      `"${text}" never arrived; the model saw: ${fake
        .calls()
        .map((c) => c.last_user_text)
        .join(" | ")}`,
    );
  }

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    // This suite tests its moves, not approvals: schedule_add run unasked, as a rule in config.toml lets them.
    writeConfig(home, port, fake.url, `\n[creed]\nreflect = false\n${allowUnasked(["schedule_add"])}`);
    daemon = await startDaemon(home, port);
    expect((await spawnFighter("tick", [{ type: "schedule" }])).status).toBe(201);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("delivers a one-time schedule as a new turn when it is due", async () => {
    fake.enqueue({
      tool_calls: [{ name: "schedule_add", arguments: { message: "stretch your legs", in_minutes: 0.02 } }],
    });
    expect((await send("tick", "remind me soon")).status).toBe(200);
    const added = results().at(-1);
    expect(added).toMatchObject({ message: "stretch your legs", next_run_at: expect.any(String) });
    await arrives("stretch your legs");
    const turn = fake.calls().find((c) => c.last_user_text.includes("stretch your legs"));
    expect(turn?.last_user_text).toBe(`[scheduled message ${added.id}]\nstretch your legs`);
    // Once run, a one-time schedule is gone.
    fake.enqueue({ tool_calls: [{ name: "schedule_list", arguments: {} }] });
    await send("tick", "what is scheduled?");
    expect(results().at(-1)).toEqual({ schedules: [] });
  });

  it("keeps schedules across a restart and runs one that fell due while the daemon was down", async () => {
    fake.enqueue({
      tool_calls: [{ name: "schedule_add", arguments: { message: "after the restart", in_minutes: 0.05 } }],
    });
    await send("tick", "remind me in three seconds");
    await daemon.stop();
    await sleep(3500);
    daemon = await startDaemon(home, port);
    await arrives("after the restart");
  });

  it("lists and removes the fighter's own schedules; cron ones keep their next run", async () => {
    fake.enqueue({
      tool_calls: [
        {
          name: "schedule_add",
          arguments: { message: "weekday standup", cron: "0 9 * * 1-5", timezone: "Europe/Paris" },
        },
      ],
    });
    await send("tick", "every weekday at nine");
    const cron = results().at(-1);
    expect(cron).toMatchObject({ cron: "0 9 * * 1-5", timezone: "Europe/Paris" });
    expect(Date.parse(cron.next_run_at)).toBeGreaterThan(Date.now());

    expect((await spawnFighter("other", [{ type: "schedule" }])).status).toBe(201);
    fake.enqueue({ tool_calls: [{ name: "schedule_remove", arguments: { id: cron.id } }] });
    await send("other", "remove tick's schedule");
    expect(results().at(-1)).toEqual({
      error: { code: "NOT_FOUND", message: `you have no schedule with id ${cron.id}` },
    });

    fake.enqueue({ tool_calls: [{ name: "schedule_list", arguments: {} }] });
    await send("tick", "list");
    expect(
      results()
        .at(-1)
        .schedules.map((s: { id: string }) => s.id),
    ).toEqual([cron.id]);
    fake.enqueue({ tool_calls: [{ name: "schedule_remove", arguments: { id: cron.id } }] });
    await send("tick", "remove it");
    expect(results().at(-1)).toEqual({ removed: cron.id });
  });

  it("shows the operator every fighter's schedules (spar schedule list, --json) and removes any (spar schedule remove)", async () => {
    fake.enqueue({
      tool_calls: [{ name: "schedule_add", arguments: { message: "check the feeds", cron: "*/5 * * * *" } }],
    });
    await send("tick", "every five minutes");
    const job = results().at(-1);
    expect(job).toMatchObject({ cron: "*/5 * * * *", timezone: "UTC" });

    const listed = await daemon.cli(["schedule", "list", "--json"]);
    expect(listed.stderr).toBe("");
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).schedules).toContainEqual({
      id: job.id,
      fighter_id: expect.any(String),
      fighter: "tick",
      message: "check the feeds",
      next_run_at: job.next_run_at,
      cron: "*/5 * * * *",
      timezone: "UTC",
    });
    const human = await daemon.cli(["schedule", "list"]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^ID\s+FIGHTER\s+NEXT RUN\s+REPEATS\s+LAST RUN\s+MESSAGE$/m);
    expect(human.stdout).toMatch(
      new RegExp(
        `^${job.id}\\s+tick\\s+\\S+\\s+\\*/5 \\* \\* \\* \\* \\(UTC\\)\\s+-\\s+check the feeds$`,
        "m",
      ),
    );

    const removed = await daemon.cli(["schedule", "remove", job.id]);
    expect(removed.stderr).toBe("");
    expect(removed.stdout).toBe(`Removed schedule ${job.id} (fighter tick)\n`);
    const after = await daemon.request<{ schedules: { id: string }[] }>("GET", "/api/v1/schedules");
    expect(after.body.schedules.map((s) => s.id)).not.toContain(job.id);
    // The fighter sees it gone too.
    fake.enqueue({ tool_calls: [{ name: "schedule_list", arguments: {} }] });
    await send("tick", "list");
    expect(
      results()
        .at(-1)
        .schedules.map((s: { id: string }) => s.id),
    ).not.toContain(job.id);

    const again = await daemon.cli(["schedule", "remove", job.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no schedule with id "${job.id}" (NOT_FOUND)`);
    const gone = await daemon.request("DELETE", `/api/v1/schedules/${job.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error: { code: "NOT_FOUND" } });
  });

  it("refuses bad times with the reason, and a fighter without the grant", async () => {
    fake.enqueue({ tool_calls: [{ name: "schedule_add", arguments: { message: "x", cron: "* * *" } }] });
    await send("tick", "bad cron");
    expect(results().at(-1).error).toMatchObject({
      code: "VALIDATION_FAILED",
      message: expect.stringContaining("five fields"),
    });

    expect((await spawnFighter("plain", [{ type: "memory" }])).status).toBe(201);
    for (const name of ["schedule_add", "schedule_list", "schedule_remove"]) {
      const args =
        name === "schedule_add"
          ? { message: "x", in_minutes: 1 }
          : name === "schedule_remove"
            ? { id: "x" }
            : {};
      fake.enqueue({ tool_calls: [{ name, arguments: args }] });
      await send("plain", `try ${name}`);
      expect(results().at(-1).error.code).toBe("CAPABILITY_DENIED");
    }
  });
});
