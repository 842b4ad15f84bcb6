import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BoutRecord } from "../../sdk/types.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/** `spar chat` continues the latest bout; `--new` starts one; `spar bout list` shows them. */
describe("conversations from the CLI", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let port: number;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    // A context window large enough for the 200 KB messages below (one may take half of it).
    writeConfig(home, port, fake.url, "context_window = 1000000\n\n[creed]\nreflect = false\n");
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  /** The user messages the model was sent with the last message: the bout's history, in order. */
  const userTurns = () =>
    (fake.requests.at(-1)?.body?.messages ?? []).filter((m) => m.role === "user").map((m) => m.content);
  const bouts = async (...args: string[]) =>
    JSON.parse((await daemon.cli(["bout", "list", "--json", ...args])).stdout) as { bouts: BoutRecord[] };

  it("continues the latest bout by default, and starts a new one with --new", async () => {
    const empty = await daemon.cli(["bout", "list"]);
    expect(empty.stdout).toBe("spar has no bouts yet; spar chat starts one\n");

    expect((await daemon.cli(["chat", "first"])).stdout).toBe("echo: first\n");
    expect((await daemon.cli(["chat", "second"])).stdout).toBe("echo: second\n");
    expect(userTurns()).toEqual(["first", "second"]);
    const one = await bouts();
    expect(one.bouts).toHaveLength(1);

    expect((await daemon.cli(["chat", "--new", "fresh start"])).stdout).toBe("echo: fresh start\n");
    expect(userTurns()).toEqual(["fresh start"]);
    const two = await bouts("--fighter", "spar");
    expect(two.bouts).toHaveLength(2);
    // The most recently active first: the new bout, then the old one with its four messages.
    expect(two.bouts[1]?.id).toBe(one.bouts[0]?.id);
    expect(two.bouts.map((b) => b.message_count)).toEqual([2, 4]);
    expect(Object.keys(two.bouts[0] ?? {}).sort()).toEqual(
      ["created_at", "fighter_id", "id", "message_count", "origin", "updated_at"].sort(),
    );
    expect(two.bouts.map((b) => b.origin)).toEqual(["user", "user"]);

    // A plain chat now continues the new bout; --bout goes back to the old one.
    await daemon.cli(["chat", "and again"]);
    expect(userTurns()).toEqual(["fresh start", "and again"]);
    await daemon.cli(["chat", "--bout", one.bouts[0]?.id ?? "", "back"]);
    expect(userTurns()).toEqual(["first", "second", "back"]);

    const table = await daemon.cli(["bout", "list"]);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+ORIGIN\s+CREATED\s+UPDATED\s+MESSAGES$/);
    expect(lines[1]).toMatch(new RegExp(`^${one.bouts[0]?.id}\\s+user\\s+\\S+\\s+\\S+\\s+6$`));
    expect(lines).toHaveLength(3);
  });

  it("refuses --new with --bout, and names an unknown fighter", async () => {
    const both = await daemon.cli(["chat", "--new", "--bout", "00000000-0000-0000-0000-000000000000", "x"]);
    expect(both.stderr).toBe(
      "spar: use --new (a new bout) or --bout <id> (that bout), not both (VALIDATION_FAILED)\n",
    );
    const nobody = await daemon.cli(["bout", "list", "--fighter", "nobody", "--json"]);
    expect(nobody.code).toBe(1);
    expect(JSON.parse(nobody.stdout)).toMatchObject({ error: { code: "FIGHTER_NOT_FOUND" } });
  });

  it("names the option typed when the daemon refuses a field, across commands (issue 28 item 13)", async () => {
    const bout = await daemon.cli(["chat", "--bout", "xyz", "hello"]);
    expect(bout).toMatchObject({ code: 1, stdout: "" });
    expect(bout.stderr).toBe('spar: --bout must be a bout id (a UUID), not "xyz" (VALIDATION_FAILED)\n');
    const before = await daemon.cli(["gorilla", "runs", "alpha", "--before", "not a run"]);
    expect(before.stderr).toBe('spar: --before must be a run id, not "not a run" (VALIDATION_FAILED)\n');
    // The same with --json, where the option and the daemon's field both come along.
    const json = await daemon.cli(["chat", "--bout", "xyz", "hello", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({
      error: {
        code: "VALIDATION_FAILED",
        message: '--bout must be a bout id (a UUID), not "xyz"',
        option: "--bout",
        path: "/body/bout_id",
      },
    });
    // The API itself refuses what the CLI checks, in its own words, rather than bending it.
    const search = await daemon.request<{ error: { message: string; path: string } }>(
      "GET",
      "/api/v1/moves/search?q=web&limit=0",
    );
    expect(search.status).toBe(400);
    expect(search.body.error).toMatchObject({
      message: '?limit must be an integer from 1 to 100, not "0"',
      path: "/querystring/limit",
    });
  });

  it("reaches the running daemon through a typo in config.toml, and says where the typo is", async () => {
    const path = join(home, "config.toml");
    const good = readFileSync(path, "utf8");
    // A string left open on the last line: smol-toml calls it "control characters are not allowed".
    const line = good.split("\n").length;
    writeFileSync(path, `${good}note = "left open\n`);
    const where = `${path}:${line}:8: unterminated string: the " at line ${line}, column 8 has no closing " on its line`;
    try {
      const status = await daemon.cli(["status"]);
      expect(status.stderr).toBe("");
      expect(status.stdout).toMatch(/^Spar \S+ is running/);
      expect((await daemon.cli(["chat", "still there?"])).stdout).toBe("echo: still there?\n");

      // One FAIL line for the file, then the checks that go on: the daemon answers.
      const doctor = await daemon.cli(["doctor"]);
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toContain(`\n  FAIL config: ${where}; `);
      expect(doctor.stdout).toMatch(
        /\n {2}ok {3}daemon: running at http:\/\/127\.0\.0\.1:\d+, 1 fighter\(s\)\n/,
      );

      // What needs the whole file refuses, in one line that says what is wrong and where.
      const start = await daemon.cli(["start"]);
      expect(start.stderr).toBe(`spar: ${where} (CONFIG_INVALID)\n`);
    } finally {
      writeFileSync(path, good);
    }
  });

  describe("a message from standard input or a file", () => {
    /** Over 200 KB, past what one argv word may hold on Linux (128 KB). */
    const long = `${"a long line of text to send to the fighter, ".repeat(4_800)}the end`;
    const lastUser = () => userTurns().at(-1);

    // A short answer that says what arrived: the long message is what is tested, not a long reply.
    beforeAll(() => {
      fake.setDefault((body) => {
        const user = body.messages.findLast((m) => m.role === "user")?.content;
        return { text: `received ${typeof user === "string" ? user.length : 0} characters` };
      });
    });

    it("reads stdin for -, and for no text when stdin is a pipe", async () => {
      expect(long.length).toBeGreaterThan(200 * 1024);
      const dash = await daemon.cli(["chat", "--new", "-"], {}, long);
      expect(dash.code, dash.stderr).toBe(0);
      expect(lastUser()).toBe(long);
      expect(dash.stdout).toBe(`received ${long.length} characters\n`);

      const piped = await daemon.cli(["chat", "--new", "--json"], {}, "piped in\n");
      expect(piped.code, piped.stderr).toBe(0);
      expect(lastUser()).toBe("piped in\n");
      expect(JSON.parse(piped.stdout)).toMatchObject({ response: "received 9 characters" });
    });

    it("sends a file's text with --file", async () => {
      const path = join(home, "message.txt");
      writeFileSync(path, long);
      const run = await daemon.cli(["chat", "--new", "--file", path]);
      expect(run.code, run.stderr).toBe(0);
      expect(lastUser()).toBe(long);
    });

    it("refuses an empty or doubled message, and a file it cannot read", async () => {
      const sent = fake.requests.length;
      const empty = await daemon.cli(["chat", "-"], {}, " \n");
      expect(empty).toMatchObject({
        code: 1,
        stderr: "spar: the message from standard input is empty (VALIDATION_FAILED)\n",
      });
      const both = await daemon.cli(["chat", "hi", "--file", join(home, "message.txt")]);
      expect(both.stderr).toBe(
        "spar: give the message as text, - (stdin) or --file <path>, not two of them (VALIDATION_FAILED)\n",
      );
      const missing = await daemon.cli(["chat", "--file", join(home, "nowhere.txt")]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(
        /^spar: --file .*nowhere\.txt cannot be read \(ENOENT\) \(VALIDATION_FAILED\)\n$/,
      );
      expect(fake.requests.length).toBe(sent);
    });
  });

  // Last: it kills the daemon, and leaves a new one for afterAll.
  it("says that a chat a daemon crash cut off was saved and interrupted, and bout show finds it", async () => {
    // The model holds the turn open until the daemon is gone.
    fake.enqueue({ text: "never sent", delay_ms: 60_000 });
    const asked = fake.requests.length;
    const chat = daemon.cli(["chat", "--new", "are you there?"]);
    while (fake.requests.length === asked) await new Promise((resolve) => setTimeout(resolve, 20));
    daemon.process.kill("SIGKILL");
    const cut = await chat;
    expect(cut.stdout).toBe("");
    expect(cut.stderr).toBe(
      "spar: Spar stopped during this turn (its connection closed before the reply): your message was saved " +
        "and the turn interrupted. Once Spar runs again (spar start), see them with: spar bout list (this bout " +
        "is the first), then spar bout show <id> (INTERRUPTED)\n",
    );
    expect(cut.code).toBe(1);

    await daemon.stop();
    daemon = await startDaemon(home, port);
    const latest = (await bouts()).bouts[0]?.id ?? "";
    const shown = await daemon.cli(["bout", "show", latest]);
    expect(shown.stdout).toBe(
      "user: are you there?\n" +
        "  [turn failed: the daemon stopped before this turn ended; its steps so far are kept (INTERRUPTED)]\n",
    );
  });
});
