import { describe, expect, it } from "vitest";
import {
  type ApprovalSettings,
  type CallFacts,
  decide,
  globMatches,
  type StoredRule,
  taintWords,
  unattended,
} from "./policy.js";

const settings = (extra: Partial<ApprovalSettings> = {}): ApprovalSettings => ({
  mode: "on",
  after_untrusted: "ask",
  timeout_s: 900,
  rules: [],
  ...extra,
});

const facts = (move: string, extra: Partial<CallFacts> = {}): CallFacts => ({
  move,
  fighter: { id: "f-1", name: "coder" },
  subject: "",
  canonical: "{}",
  effects: "read",
  destructive: false,
  grants: [undefined],
  taint: [],
  ...extra,
});

const shell = (command: string, extra: Partial<CallFacts> = {}) =>
  facts("shell_exec", {
    subject: command,
    canonical: JSON.stringify({ argv: command.split(" ") }),
    effects: "external",
    ...extra,
  });

const web = { kind: "web" as const, detail: "https://evil.example/page", move: "web_fetch" };

const stored = (extra: Partial<StoredRule> = {}): StoredRule => ({
  id: "r-1",
  fighter_id: "f-1",
  fighter: "coder",
  move: "shell_exec",
  created_at: "2026-01-01T00:00:00.000Z",
  created_by: "cli",
  ...extra,
});

describe("the defaults", () => {
  it("ask for shell_exec, fighter_spawn and schedule_add, whatever their arguments", () => {
    for (const move of ["shell_exec", "fighter_spawn", "schedule_add"]) {
      const decision = decide(facts(move, { effects: "external" }), settings(), []);
      expect(decision.action, move).toBe("ask");
      expect(decision.why).toContain("the default: ask");
    }
  });

  it("allow reads, workspace writes and other external moves", () => {
    for (const f of [
      facts("file_read"),
      facts("memory_store", { effects: "workspace" }),
      facts("file_write", { effects: "workspace", file: { outside: false, exists: true } }),
      facts("fighter_message", { effects: "external" }),
      facts("web_fetch", { fetch: { host: "a.example", query: true, seen: false } }),
    ]) {
      expect(decide(f, settings(), []), f.move).toEqual({ action: "allow", why: "allowed by default" });
    }
  });

  it("ask before a file move changes an existing file outside the workspace, not a new one", () => {
    const write = (file: CallFacts["file"]) =>
      facts("file_write", { effects: "workspace", ...(file ? { file } : {}) });
    expect(decide(write({ outside: true, exists: true }), settings(), []).action).toBe("ask");
    expect(decide(write({ outside: true, exists: false }), settings(), []).action).toBe("allow");
    expect(decide(write({ outside: false, exists: true }), settings(), []).action).toBe("allow");
  });

  it("ask before channel_notify posts to a chat the fighter never posted to", () => {
    const notify = (known: boolean) =>
      facts("channel_notify", { effects: "external", notify: { target: "telegram:42", known } });
    expect(decide(notify(false), settings(), [])).toMatchObject({
      action: "ask",
      why: expect.stringContaining("telegram:42, a chat this fighter has never posted to"),
    });
    expect(decide(notify(true), settings(), []).action).toBe("allow");
    // Without a chat, the channel's notify_chat: the operator's own choice.
    expect(decide(facts("channel_notify", { effects: "external" }), settings(), []).action).toBe("allow");
  });

  it("ask before a destructive (or unannotated) MCP tool, not a read-only or additive one", () => {
    const mcp = (effects: CallFacts["effects"], destructive: boolean) =>
      facts("mcp_mail_send", { effects, destructive });
    expect(decide(mcp("external", true), settings(), []).action).toBe("ask");
    expect(decide(mcp("external", false), settings(), []).action).toBe("allow");
    expect(decide(mcp("read", false), settings(), []).action).toBe("allow");
  });
});

describe("the order: operator rules, stored rules, the grant, the defaults", () => {
  it("takes the first operator rule that fits: fighter by name, id or *, move by glob, pattern by glob or exact arguments", () => {
    const rules = [
      { fighter: "someone-else", move: "shell_exec", action: "deny" as const },
      { fighter: "coder", move: "shell_exec", pattern: "git *", action: "allow" as const },
      { fighter: "*", move: "shell_*", pattern: "rm *", action: "deny" as const },
      { fighter: "f-1", move: "shell_exec", pattern: '{"argv":["make"]}', action: "allow" as const },
    ];
    expect(decide(shell("git status"), settings({ rules }), [])).toMatchObject({
      action: "allow",
      rule: "config:1",
    });
    expect(decide(shell("rm -rf /"), settings({ rules }), [])).toMatchObject({
      action: "deny",
      rule: "config:2",
    });
    expect(decide(shell("make"), settings({ rules }), [])).toMatchObject({
      action: "allow",
      rule: "config:3",
    });
    expect(decide(shell("ls"), settings({ rules }), []).action).toBe("ask");
  });

  it("lets an operator rule ask for a move the defaults allow, and deny one", () => {
    const rules = [{ fighter: "*", move: "web_fetch", action: "ask" as const }];
    expect(decide(facts("web_fetch"), settings({ rules }), []).action).toBe("ask");
  });

  it("allows by a stored rule: the fighter's exact call, or its pattern; never another fighter's", () => {
    const exact = stored({ arguments: JSON.stringify({ argv: ["make", "test"] }) });
    expect(decide(shell("make test"), settings(), [exact])).toMatchObject({ action: "allow", rule: "r-1" });
    expect(decide(shell("make install"), settings(), [exact]).action).toBe("ask");
    const pattern = stored({ pattern: "npm run *" });
    expect(decide(shell("npm run build"), settings(), [pattern]).action).toBe("allow");
    const other = { ...facts("shell_exec"), fighter: { id: "f-2", name: "coder" } };
    expect(decide({ ...shell("npm run build"), fighter: other.fighter }, settings(), [pattern]).action).toBe(
      "ask",
    );
  });

  it("never turns an allow into anything else by a stored rule (the gate reads them only when not allowed)", () => {
    const rules = [stored({ pattern: "*" }), stored({ move: "web_fetch", pattern: "*" })];
    for (const f of [
      facts("file_read"),
      facts("web_fetch"),
      shell("ls", { grants: ["deny"] }),
      shell("ls"),
    ]) {
      if (decide(f, settings(), []).action === "allow")
        expect(decide(f, settings(), rules).action).toBe("allow");
    }
  });

  it("puts operator rules before stored ones, and both before the grant", () => {
    const rules = [{ fighter: "coder", move: "shell_exec", action: "deny" as const }];
    expect(decide(shell("make"), settings({ rules }), [stored({ pattern: "*" })]).action).toBe("deny");
    expect(decide(shell("make", { grants: ["deny"] }), settings(), [stored({ pattern: "*" })]).action).toBe(
      "allow",
    );
  });

  it("reads the grant's approval: deny wins over ask, both over the defaults", () => {
    expect(decide(facts("memory_store", { grants: ["ask"] }), settings(), []).action).toBe("ask");
    expect(decide(facts("memory_store", { grants: ["ask", "deny"] }), settings(), []).action).toBe("deny");
    expect(decide(facts("memory_store", { grants: [undefined, "ask"] }), settings(), [])).toMatchObject({
      action: "ask",
      why: 'the fighter\'s memory_store grant says approval = "ask"',
    });
  });

  it("allows everything when [approvals] mode is off", () => {
    expect(decide(shell("rm -rf /", { taint: [web] }), settings({ mode: "off" }), [])).toEqual({
      action: "allow",
      why: "[approvals] mode is off",
    });
  });
});

describe("a tainted turn", () => {
  it("asks before every side effect outside the workspace, naming where the taint came from", () => {
    const decision = decide(facts("fighter_message", { effects: "external", taint: [web] }), settings(), []);
    expect(decision.action).toBe("ask");
    expect(decision.why).toContain(
      "https://evil.example/page (web, web_fetch) before asking to run fighter_message",
    );
    expect(
      decide(facts("channel_notify", { effects: "external", taint: [web] }), settings(), []).action,
    ).toBe("ask");
    // Already asked by default: the taint is added to why.
    expect(decide(shell("ls", { taint: [web] }), settings(), []).why).toMatch(
      /\(the default: ask\); and this turn took in/,
    );
  });

  it("lets reads and workspace writes through, but not a write outside the workspace", () => {
    expect(decide(facts("file_read", { taint: [web] }), settings(), []).action).toBe("allow");
    const inside = facts("file_write", {
      effects: "workspace",
      taint: [web],
      file: { outside: false, exists: false },
    });
    expect(decide(inside, settings(), []).action).toBe("allow");
    const outside = { ...inside, file: { outside: true, exists: false } };
    expect(decide(outside, settings(), []).action).toBe("ask");
  });

  it("asks before a fetch with a query string to a host not yet fetched in the turn", () => {
    const fetch = (query: boolean, seen: boolean) =>
      facts("web_fetch", { taint: [web], fetch: { host: "x.example", query, seen } });
    expect(decide(fetch(true, false), settings(), []).action).toBe("ask");
    expect(decide(fetch(true, true), settings(), []).action).toBe("allow");
    expect(decide(fetch(false, false), settings(), []).action).toBe("allow");
  });

  it("denies instead with after_untrusted = deny, and asks nothing more with off", () => {
    const message = facts("fighter_message", { effects: "external", taint: [web] });
    expect(decide(message, settings({ after_untrusted: "deny" }), []).action).toBe("deny");
    expect(decide(shell("ls", { taint: [web] }), settings({ after_untrusted: "deny" }), []).action).toBe(
      "deny",
    );
    expect(decide(message, settings({ after_untrusted: "off" }), []).action).toBe("allow");
    expect(decide(shell("ls", { taint: [web] }), settings({ after_untrusted: "off" }), []).action).toBe(
      "ask",
    );
  });

  it("runs a call a rule allows by name, and never one the grant or a rule denies", () => {
    const rules = [{ fighter: "coder", move: "shell_exec", pattern: "ls", action: "allow" as const }];
    expect(decide(shell("ls", { taint: [web] }), settings({ rules }), []).action).toBe("allow");
    expect(decide(shell("make", { taint: [web] }), settings(), [stored({ pattern: "make" })]).action).toBe(
      "allow",
    );
    expect(
      decide(
        facts("fighter_message", { effects: "external", taint: [web], grants: ["deny"] }),
        settings(),
        [],
      ).action,
    ).toBe("deny");
  });

  it("says at most three sources, then how many more", () => {
    const many = [1, 2, 3, 4, 5].map((n) => ({ kind: "web" as const, detail: `https://e.example/${n}` }));
    expect(taintWords(many)).toBe(
      "this turn took in untrusted content: https://e.example/1 (web), https://e.example/2 (web), https://e.example/3 (web) and 2 more",
    );
  });
});

describe("patterns and origins", () => {
  it("match a glob as a whole: * any run (spaces and / too), ? one character, the rest as written", () => {
    expect(globMatches("git *", "git log --oneline")).toBe(true);
    expect(globMatches("git *", "gitk")).toBe(false);
    expect(globMatches("/home/*/notes.txt", "/home/me/a/notes.txt")).toBe(true);
    expect(globMatches("v?.txt", "v1.txt")).toBe(true);
    expect(globMatches("a.c", "abc")).toBe(false);
    expect(globMatches("(x)+[y]", "(x)+[y]")).toBe(true);
  });

  it("finds no one to ask in a gorilla's or a schedule's turn", () => {
    expect(unattended("gorilla:digest")).toBe(true);
    expect(unattended("schedule")).toBe(true);
    for (const origin of ["user", "channel:telegram:42", "fighter:f-1", "troop-task:t-1"]) {
      expect(unattended(origin), origin).toBe(false);
    }
  });
});
