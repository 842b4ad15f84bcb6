import { describe, expect, it } from "vitest";
import { matchesPattern, policyOf, refusal } from "./patterns.js";

describe("matchesPattern", () => {
  it("matches word by word, a last lone * standing for any further arguments, none included", () => {
    expect(matchesPattern("git *", ["git"])).toBe(true);
    expect(matchesPattern("git *", ["git", "status"])).toBe(true);
    expect(matchesPattern("git *", ["git", "commit", "-m", "a message; with spaces"])).toBe(true);
    expect(matchesPattern("git *", ["gitk"])).toBe(false);
    expect(matchesPattern("git *", ["/usr/bin/git", "status"])).toBe(false);
    expect(matchesPattern("*", ["anything", "at", "all"])).toBe(true);
  });

  it("matches a pattern without a trailing * exactly, argument count included", () => {
    expect(matchesPattern("ls", ["ls"])).toBe(true);
    expect(matchesPattern("ls", ["ls", "-la"])).toBe(false);
    expect(matchesPattern("git status", ["git", "status"])).toBe(true);
    expect(matchesPattern("git status", ["git", "status", "--short"])).toBe(false);
    expect(matchesPattern("  git   status ", ["git", "status"])).toBe(true);
  });

  it("never lets a * inside a word reach into the next argument", () => {
    expect(matchesPattern("cat *.txt", ["cat", "notes.txt"])).toBe(true);
    expect(matchesPattern("cat *.txt", ["cat", "/etc/shadow", "x.txt"])).toBe(false);
    expect(matchesPattern("cat *.txt", ["cat", "a b.txt"])).toBe(true);
    expect(matchesPattern("npm run *", ["npm", "run"])).toBe(true);
    expect(matchesPattern("git * --help", ["git", "log", "--help"])).toBe(true);
    expect(matchesPattern("git * --help", ["git", "--help"])).toBe(false);
  });

  it("treats everything but * literally, case and regular-expression characters included", () => {
    expect(matchesPattern("echo a.b", ["echo", "aXb"])).toBe(false);
    expect(matchesPattern("echo (x)+", ["echo", "(x)+"])).toBe(true);
    expect(matchesPattern("echo [ab]", ["echo", "a"])).toBe(false);
    expect(matchesPattern("Echo", ["echo"])).toBe(false);
    expect(matchesPattern("echo a*", ["echo", "a\nb"])).toBe(true);
  });

  it("matches nothing with an empty pattern", () => {
    expect(matchesPattern("", ["ls"])).toBe(false);
  });
});

describe("policyOf and refusal", () => {
  it("collects the patterns of every shell_exec grant, string or list", () => {
    const policy = policyOf([
      { type: "shell_exec", pattern: "git *" },
      { type: "shell_exec", pattern: ["ls", "pwd"] },
      { type: "shell_exec" },
    ]);
    expect(policy).toEqual({ any: false, patterns: ["git *", "ls", "pwd"] });
    expect(refusal(policy, ["ls"], false)).toBeUndefined();
    expect(refusal(policy, ["git", "push"], false)).toBeUndefined();
  });

  it("names the patterns that exist when none matches", () => {
    const policy = policyOf([{ type: "shell_exec", pattern: ["git *", "ls"] }]);
    expect(refusal(policy, ["rm", "-rf", "/"], false)).toBe(
      `shell_exec may not run ["rm","-rf","/"]: it matches none of this fighter's shell_exec patterns: "git *", "ls"`,
    );
  });

  it("refuses every command under a grant without a pattern, and says how to grant one", () => {
    expect(refusal(policyOf([{ type: "shell_exec" }]), ["ls"], false)).toMatch(
      /grant names no pattern, so it allows no command .*"git \*", or "\*" for any command/,
    );
  });

  it("allows a command line only where a pattern allows /bin/sh -c", () => {
    const line = ["/bin/sh", "-c", "ls | wc -l"];
    const narrow = policyOf([{ type: "shell_exec", pattern: ["ls *", "wc *"] }]);
    expect(refusal(narrow, line, true)).toMatch(
      /may not run the shell command "ls \| wc -l" \(run as \/bin\/sh -c <command>\).*such as "\/bin\/sh -c \*"/,
    );
    expect(refusal(policyOf([{ type: "shell_exec", pattern: "/bin/sh -c *" }]), line, true)).toBeUndefined();
    expect(refusal(policyOf([{ type: "shell_exec", pattern: "*" }]), line, true)).toBeUndefined();
  });

  it("lets full_access run anything", () => {
    expect(refusal(policyOf([{ type: "full_access" }]), ["rm", "-rf", "x"], false)).toBeUndefined();
  });

  it("shortens a long command in the refusal", () => {
    const message = refusal(policyOf([{ type: "shell_exec", pattern: "ls" }]), ["x".repeat(5000)], false);
    expect(message?.length).toBeLessThan(500);
  });
});
