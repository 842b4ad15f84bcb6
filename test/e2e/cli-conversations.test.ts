import { writeFileSync } from "node:fs";
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

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
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
});
