import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { GorillaRunRecord } from "../../lib/gorillas/records.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { gorillaToml, writeGorilla } from "../helpers/gorillas.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns something truthy; fails with `what` after `withinMs`. */
async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  withinMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value) return value;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const BUNDLED = ["alpha", "brawler", "ghost", "howler", "prophet", "scout-troop", "swarm"];
/** A schedule that does not fire during the test: these gorillas run when told to. */
const YEARLY = "0 0 1 1 *";

type Run = GorillaRunRecord;
interface View {
  name: string;
  state: string;
  status: string;
  next_run_at: string | null;
  last_run: Run | null;
  schedule: string;
  moves: string[];
  source: string;
}

/** Collects the gorilla events a WebSocket client is sent. */
async function watchGorillaEvents(url: string) {
  const ws = new WebSocket(url);
  const events: { kind: string; gorilla: string; [key: string]: unknown }[] = [];
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString()) as { type: string; kind: string; gorilla: string };
    if (frame.type === "event") events.push(frame);
  });
  await new Promise<void>((done, fail) => {
    ws.once("open", () => done());
    ws.once("error", fail);
  });
  ws.send(
    JSON.stringify({
      type: "subscribe",
      kinds: ["gorilla.unleashed", "gorilla.caged", "gorilla.rampage.started", "gorilla.rampage.completed"],
    }),
  );
  await sleep(200);
  return { events, close: () => ws.close() };
}

describe("gorillas", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;

  const runs = async (name: string, limit = 100) =>
    (await daemon.request<{ runs: Run[] }>("GET", `/api/v1/gorillas/${name}/runs?limit=${limit}`)).body.runs;
  const view = async (name: string) => (await daemon.request<View>("GET", `/api/v1/gorillas/${name}`)).body;
  /** The model requests of one gorilla's cycles (its cycle message is the last user text). */
  const requestsOf = (name: string) =>
    fake.calls().filter((c) => c.last_user_text.startsWith(`[gorilla ${name}:`));
  const finished = (name: string, id: string) =>
    until(`run ${id} of ${name} to end`, async () => {
      const run = (await daemon.request<Run>("GET", `/api/v1/gorillas/${name}/runs/${id}`)).body;
      return run.outcome !== "running" && run;
    });

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      '\n[creed]\nreflect = false\n\n[quotas]\nrequests_per_minute = 100000\ntokens_per_minute = 100000000\n\n[gorillas]\ntimezone = "UTC"\n',
    );
    writeGorilla(home, "tick", gorillaToml("tick", "every 1s", 'catch_up = "once"\ntimeout_s = 60'));
    writeGorilla(home, "budget", gorillaToml("budget", YEARLY, "max_tokens = 3000"));
    writeGorilla(home, "slow", gorillaToml("slow", YEARLY, "timeout_s = 3"));
    writeGorilla(home, "broken", `${gorillaToml("broken", YEARLY, "")}\n[extras]\nfoo = 1\n`);
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("lists the bundled and user gorillas caged, and reports the broken one (also in spar doctor)", async () => {
    const listed = await daemon.request<{ gorillas: View[]; problems: { file: string; error: string }[] }>(
      "GET",
      "/api/v1/gorillas",
    );
    expect(listed.status).toBe(200);
    const names = listed.body.gorillas.map((g) => g.name);
    expect(names).toEqual([...BUNDLED, "budget", "slow", "tick"].sort());
    for (const g of listed.body.gorillas) {
      expect(g).toMatchObject({ state: "CAGED", status: "CAGED", next_run_at: null, last_run: null });
    }
    expect(listed.body.gorillas.find((g) => g.name === "tick")).toMatchObject({
      schedule: "every 1s",
      moves: ["memory_store"],
      source: "user",
    });
    expect(listed.body.problems).toEqual([
      {
        file: join(home, "gorillas", "broken", "GORILLA.toml"),
        error: expect.stringContaining('unknown key "extras"'),
      },
    ]);
    // The unversioned alias answers the same.
    const alias = await daemon.request<{ gorillas: View[] }>("GET", "/api/gorillas");
    expect(alias.body.gorillas.map((g) => g.name)).toEqual(names);

    const doctor = await daemon.cli(["doctor"]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/Gorillas:\n {2}FAIL .*broken\/GORILLA\.toml: unknown key "extras"/);

    const notLoaded = await daemon.request<{ error: { code: string; message: string } }>(
      "GET",
      "/api/v1/gorillas/broken",
    );
    expect(notLoaded.status).toBe(404);
    expect(notLoaded.body.error.code).toBe("GORILLA_NOT_FOUND");
    expect(notLoaded.body.error.message).toContain("did not load");
  });

  it("reports every problem of a file at once, and re-reads the folders on spar gorilla reload (doctor follows)", async () => {
    const manyBad = join(home, "gorillas", "manybad", "GORILLA.toml");
    writeGorilla(
      home,
      "manybad",
      [
        'name = "other"',
        'description = "Four things wrong."',
        'schedule = "every banana"',
        'moves = ["no_such_move"]',
        'system_prompt = "x"',
        'task = "x"',
        "[settings]",
        "max_tokens = 0",
        "",
      ].join("\n"),
    );
    const reloaded = await daemon.cli(["gorilla", "reload"]);
    expect(reloaded.stderr).toBe("");
    expect(reloaded.code).toBe(1);
    expect(reloaded.stdout).toContain(`Reloaded: ${BUNDLED.length + 3} gorillas loaded\nNot loaded (2):\n`);
    const listed = await daemon.request<{ problems: { file: string; error: string }[] }>(
      "GET",
      "/api/v1/gorillas",
    );
    const problem = listed.body.problems.find((p) => p.file === manyBad);
    expect(problem?.error).toMatch(/^.*manybad\/GORILLA\.toml: 4 problems: \(1\) /);
    for (const part of [
      '"settings.max_tokens" must be >= 1',
      '"name" is "other" but the gorilla\'s folder is "manybad"',
      '"schedule" = "every banana"',
      '"moves" names "no_such_move"',
    ])
      expect(problem?.error).toContain(part);

    // Mended while the daemon runs: reload takes "broken" in, and doctor stops reporting it.
    writeGorilla(home, "broken", gorillaToml("broken", YEARLY, ""));
    rmSync(join(home, "gorillas", "manybad"), { recursive: true });
    const mended = await daemon.cli(["gorilla", "reload", "--json"]);
    expect(mended.code).toBe(0);
    expect(JSON.parse(mended.stdout)).toMatchObject({ added: ["broken"], removed: [], problems: [] });
    expect((await view("broken")).state).toBe("CAGED");
    const doctor = await daemon.cli(["doctor"]);
    expect(doctor.stdout).toContain("Gorillas:\n  ok   every GORILLA.toml loads");

    // A folder removed while the daemon runs is dropped on reload.
    rmSync(join(home, "gorillas", "broken"), { recursive: true });
    const dropped = await daemon.request<{ removed: string[] }>("POST", "/api/v1/gorillas/reload");
    expect(dropped.status).toBe(200);
    expect(dropped.body.removed).toEqual(["broken"]);
    expect((await daemon.request("GET", "/api/v1/gorillas/broken")).status).toBe(404);
  });

  it("answers 404 GORILLA_NOT_FOUND for an unknown gorilla and 409 for caging a caged one", async () => {
    for (const [method, path] of [
      ["GET", "/api/v1/gorillas/nope"],
      ["POST", "/api/v1/gorillas/nope/unleash"],
      ["POST", "/api/v1/gorillas/nope/cage"],
      ["POST", "/api/v1/gorillas/nope/run"],
      ["GET", "/api/v1/gorillas/nope/runs"],
    ] as const) {
      const answer = await daemon.request<{ error: { code: string } }>(method, path);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.error.code).toBe("GORILLA_NOT_FOUND");
    }
    const cage = await daemon.request<{ error: { code: string } }>("POST", "/api/v1/gorillas/tick/cage");
    expect(cage.status).toBe(409);
    expect(cage.body.error.code).toBe("CONFLICT");
    const cli = await daemon.cli(["gorilla", "cage", "tick", "--json"]);
    expect(cli.code).toBe(1);
    expect(JSON.parse(cli.stdout).error.code).toBe("CONFLICT");
    const unknown = await daemon.cli(["gorilla", "status", "nope"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("GORILLA_NOT_FOUND");
  });

  it("unleashed from the CLI, runs a cycle on every fire, shown by spar gorilla runs", async () => {
    const watch = await watchGorillaEvents(`ws://127.0.0.1:${port}/api/v1/ws`);
    const unleashed = await daemon.cli(["gorilla", "unleash", "tick"]);
    expect(unleashed.code, unleashed.stderr).toBe(0);
    expect(unleashed.stdout).toMatch(/^tick is UNLEASHED; next run \d{4}-\d\d-\d\dT/);
    const again = await daemon.request<{ error: { code: string } }>("POST", "/api/v1/gorillas/tick/unleash");
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");

    const ok = await until("two completed cycles", async () => {
      const done = (await runs("tick")).filter((r) => r.outcome === "ok" && r.trigger === "schedule");
      return done.length >= 2 && done;
    });
    const run = ok[0] as Run;
    expect(run.output).toMatch(/^echo: \[gorilla tick: cycle /);
    expect(run.usage.input_tokens).toBeGreaterThan(0);
    expect(run.bout_id).toEqual(expect.any(String));
    expect(run.finished_at).toEqual(expect.any(String));
    // Each cycle is a fresh bout, of the gorilla's own origin: never a user's latest.
    expect(new Set(ok.map((r) => r.bout_id)).size).toBe(ok.length);
    const cycles = await daemon.request<{ bouts: { id: string; origin: string }[] }>(
      "GET",
      "/api/v1/fighters/gorilla-tick/bouts?origin=gorilla:tick",
    );
    expect(cycles.body.bouts.map((b) => b.id)).toEqual(expect.arrayContaining(ok.map((r) => r.bout_id)));
    expect(cycles.body.bouts.every((b) => b.origin === "gorilla:tick")).toBe(true);

    // The model got the task with the date, and only the gorilla's moves.
    const call = requestsOf("tick")[0];
    expect(call?.last_user_text).toMatch(
      /^\[gorilla tick: cycle [0-9a-f-]+, trigger schedule\]\nCurrent date and time: \w+ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(UTC\); .* in UTC\.\n\nDo the tick chore and say done\.$/,
    );
    expect(call?.tools).toEqual(["memory_store"]);
    expect(call?.system).toContain("You are tick, a test gorilla.");

    const table = await daemon.cli(["gorilla", "runs", "tick"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^RUN +TRIGGER +OUTCOME +STARTED +TOOK +TOKENS +RESULT \/ ERROR\n/);
    expect(table.stdout).toContain(run.id);
    expect(table.stdout).toMatch(/schedule +ok +/);

    // A cycle fires every second: the list is read between two cycles, when the last run has ended.
    const listed = /\ntick +(UNLEASHED|RAMPAGING) +every 1s +\d{4}-\d\d-\d\dT\S+ +ok /;
    const list = await until("a listing between two cycles", async () => {
      const out = await daemon.cli(["gorilla", "list"]);
      return listed.test(out.stdout) && out;
    });
    expect(list.stdout).toMatch(listed);
    const status = await daemon.cli(["gorilla", "status", "tick", "--json"]);
    const detail = JSON.parse(status.stdout) as View & { fighter: string; settings: { catch_up: string } };
    expect(detail.fighter).toBe("gorilla-tick");
    expect(detail.settings.catch_up).toBe("once");
    expect(Date.parse(detail.next_run_at as string)).toBeGreaterThan(Date.now() - 1000);

    const kinds = new Set(watch.events.filter((e) => e.gorilla === "tick").map((e) => e.kind));
    watch.close();
    expect([...kinds].sort()).toEqual([
      "gorilla.rampage.completed",
      "gorilla.rampage.started",
      "gorilla.unleashed",
    ]);
  });

  it("survives a restart still unleashed, with one catch-up cycle for the fires it missed", async () => {
    await daemon.stop();
    const stoppedAt = new Date().toISOString();
    await sleep(2500);
    daemon = await startDaemon(home, port);
    expect(["UNLEASHED", "RAMPAGING"]).toContain((await view("tick")).state);
    const after = await until("a catch-up cycle and a scheduled one after the restart", async () => {
      const fresh = (await runs("tick")).filter((r) => r.started_at > stoppedAt && r.outcome === "ok");
      const catchUp = fresh.filter((r) => r.trigger === "catch_up");
      return catchUp.length > 0 && fresh.some((r) => r.trigger === "schedule") && catchUp;
    });
    expect(after).toHaveLength(1);
    // Nothing is left running from before the restart.
    expect((await runs("tick")).filter((r) => r.outcome === "running").length).toBeLessThanOrEqual(1);
  });

  it("records a fire that comes while a slow cycle still runs as skipped", async () => {
    const since = new Date().toISOString();
    fake.enqueue({ delay_ms: 2600, text: "slow tick" });
    const skipped = await until("a skipped fire", async () =>
      (await runs("tick")).find((r) => r.outcome === "skipped" && r.started_at > since),
    );
    expect(skipped).toMatchObject({
      trigger: "schedule",
      usage: { input_tokens: 0, output_tokens: 0 },
      error: expect.stringMatching(/^the previous cycle \(run [0-9a-f-]+\) was still running$/),
    });
    expect(skipped.finished_at).toBe(skipped.started_at);
    const slow = await until("the slow cycle to end", async () =>
      (await runs("tick")).find((r) => r.output === "slow tick"),
    );
    expect(slow.outcome).toBe("ok");
    expect(skipped.error).toContain(slow.id);
  });

  it("is caged in the middle of a slow cycle: the run is aborted and no model request follows", async () => {
    const watch = await watchGorillaEvents(`ws://127.0.0.1:${port}/api/v1/ws`);
    const before = fake.requests.length;
    fake.enqueue({ delay_ms: 15_000, text: "never seen" });
    await until("the slow request to reach the model", async () => fake.requests.length > before);
    await sleep(300);
    expect((await view("tick")).state).toBe("RAMPAGING");

    const caged = await daemon.cli(["gorilla", "cage", "tick"]);
    expect(caged.code, caged.stderr).toBe(0);
    const id = /\(run ([0-9a-f-]+)\) was aborted/.exec(caged.stdout)?.[1];
    expect(id, caged.stdout).toBeDefined();
    const requestsAtCage = fake.requests.length;
    const cagedAt = new Date().toISOString();

    const run = await finished("tick", id as string);
    expect(run).toMatchObject({ outcome: "aborted", error: "was caged" });
    expect(run.output).toBeUndefined();
    const after = await view("tick");
    expect(after).toMatchObject({ state: "CAGED", next_run_at: null });
    await sleep(2500);
    expect(fake.requests.length).toBe(requestsAtCage);
    // No run after the cage. A fire the 1 s schedule made while the slow cycle ran, before the cage,
    // is recorded as skipped and may be newer than the aborted run: that one is no cycle.
    const recent = await runs("tick", 10);
    expect(recent.filter((r) => r.started_at > cagedAt)).toEqual([]);
    expect(
      recent.filter((r) => r.id !== id && r.outcome !== "skipped" && r.started_at > run.started_at),
    ).toEqual([]);

    const events = watch.events.filter((e) => e.gorilla === "tick");
    watch.close();
    expect(events.find((e) => e.kind === "gorilla.caged")).toMatchObject({ aborted_run_id: id });
    expect(events.find((e) => e.kind === "gorilla.rampage.completed" && e.run_id === id)).toMatchObject({
      outcome: "aborted",
    });
  });

  it("fails a cycle that would pass its max_tokens budget, before the model call", async () => {
    fake.enqueue({
      text: "x".repeat(16_000),
      tool_calls: [{ name: "memory_store", arguments: { key: "budget/note", value: "noted" } }],
    });
    const started = await daemon.request<Run>("POST", "/api/v1/gorillas/budget/run");
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ gorilla: "budget", trigger: "manual", outcome: "running" });
    const run = await finished("budget", started.body.id);
    expect(run.outcome).toBe("failed");
    expect(run.error).toMatch(/^hit its max_tokens budget of 3000: about \d+ tokens spent in 1 model call/);
    // One model call; the second, which would have sent its long reply back, never started.
    expect(requestsOf("budget")).toHaveLength(1);
    expect(run.usage.input_tokens).toBeGreaterThan(0);
    expect(run.bout_id).toEqual(expect.any(String));
  });

  it("lets a gorilla's fighter call only the moves its GORILLA.toml declares", async () => {
    // memory_recall needs the same grant (memory) as memory_store, but budget does not declare it.
    fake.enqueue({ tool_calls: [{ name: "memory_recall", arguments: { query: "notes" } }] });
    const started = await daemon.request<Run>("POST", "/api/v1/gorillas/budget/run");
    const run = await finished("budget", started.body.id);
    expect(run.outcome, run.error).toBe("ok");
    const result = JSON.parse(requestsOf("budget").at(-1)?.tool_results.at(-1) ?? "{}");
    expect(result.error.code).toBe("CAPABILITY_DENIED");
    expect(result.error.message).toContain("may use only the moves its GORILLA.toml declares (memory_store)");
  });

  it("fails a cycle that passes timeout_s, and starts no model call after it", async () => {
    // The time out leaves room for the CLI to start and the second request to land under a loaded CI.
    fake.enqueue({ delay_ms: 7000, text: "too late" });
    const cli = await daemon.cli(["gorilla", "run", "slow", "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    const started = JSON.parse(cli.stdout) as Run;
    expect(started).toMatchObject({ gorilla: "slow", trigger: "manual", outcome: "running" });
    // One cycle at a time, also for manual runs.
    const second = await daemon.request<{ error: { code: string } }>("POST", "/api/v1/gorillas/slow/run");
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe("CONFLICT");
    const run = await finished("slow", started.id);
    expect(run).toMatchObject({ outcome: "failed", error: "timed out after 3 s" });
    await sleep(4500);
    expect(requestsOf("slow")).toHaveLength(1);
    // A manual run leaves a caged gorilla caged.
    expect((await view("slow")).state).toBe("CAGED");
    const missing = await daemon.request<{ error: { code: string } }>(
      "GET",
      `/api/v1/gorillas/budget/runs/${started.id}`,
    );
    expect(missing.status).toBe(404);
  });

  it("runs one cycle of each bundled gorilla end to end", async () => {
    for (const name of BUNDLED) {
      const cli = await daemon.cli(["gorilla", "run", name]);
      expect(cli.code, cli.stderr).toBe(0);
      const id = /run ([0-9a-f-]+)/.exec(cli.stdout)?.[1] as string;
      const run = await finished(name, id);
      expect(run.outcome, `${name}: ${run.error}`).toBe("ok");
      expect(run.output).toMatch(new RegExp(`^echo: \\[gorilla ${name}: cycle ${id}, trigger manual\\]`));
      const call = requestsOf(name)[0];
      const moves = (await view(name)).moves;
      expect(call?.tools.length).toBeGreaterThan(0);
      for (const tool of call?.tools ?? []) expect(moves).toContain(tool);
    }
    const listed = await daemon.request<{ gorillas: View[] }>("GET", "/api/v1/gorillas");
    for (const g of listed.body.gorillas.filter((g) => BUNDLED.includes(g.name))) {
      expect(g.last_run?.outcome).toBe("ok");
      expect(g.state).toBe("CAGED");
    }
  });
});
