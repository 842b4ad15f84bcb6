import { basename, join, resolve } from "node:path";
import { DEFAULT_FIGHTER_NAME, nameSlug } from "../../lib/fighter-files.js";
import type { Capability } from "../../sdk/types.js";
import type { AuditInput, FighterFact } from "./security-audit.js";
import { type CheckResult, type Finding, shellWord } from "./security-finding.js";

/**
 * The checks over what fighters are granted: grants that reach past a move's own containment (file
 * scopes outside the workspace, network grants without hosts), shell patterns, and full_access.
 * They judge the grants as stored; the moves enforce them (plugins/moves-*), and these checks only
 * say where a grant is wider than the move's default.
 */

const FILE_TYPES = ["file_read", "file_write"] as const;
const NETWORK_TYPES = new Set(["network", "web_fetch"]);

/** Scopes outside a fighter's workspace, and network grants with no host list or `*`. */
export function checkGrantScopes(input: AuditInput): CheckResult {
  if (!Array.isArray(input.fighters)) return { skipped: input.fighters.unavailable };
  const findings = input.fighters.flatMap((f) => [
    ...FILE_TYPES.flatMap((type) => fileReach(input, f, type)),
    ...networkReach(f),
  ]);
  if (findings.length) return { findings };
  return {
    passed: "file grants stay in their fighter's workspace; network grants list their hosts",
  };
}

/** A fighter's own folder, as kernel/fighters/fighter-manifest.ts's workspaceOf names it (not created). */
function workspaceOf(home: string, name: string): string {
  return join(home, "workspaces", nameSlug(name));
}

function fileReach(input: AuditInput, fighter: FighterFact, type: (typeof FILE_TYPES)[number]): Finding[] {
  const workspace = workspaceOf(input.home, fighter.name);
  const outside = fighter.capabilities
    .filter((c) => c.type === type)
    .flatMap((c) => list(c.scope))
    .filter((scope) => {
      const folder = expandHome(scope, input.user_home);
      // The file moves refuse a relative scope outright, so it reaches nothing.
      return folder.startsWith("/") && !inside(resolve(folder), workspace);
    });
  if (outside.length === 0) return [];
  const verb = type === "file_read" ? "read" : "write";
  return [
    {
      id: `grant_scopes:${fighter.name}:${type}`,
      severity: "medium",
      message: `fighter ${fighter.name}'s ${type} grant reaches outside its workspace (${workspace}): it may ${verb} files under ${outside.join(", ")}`,
      fix: `spar fighter kill ${shellWord(fighter.name)}, then spawn it again with scopes it needs inside its workspace, or none (its workspace alone)`,
    },
  ];
}

function networkReach(fighter: FighterFact): Finding[] {
  const open = fighter.capabilities.filter(
    (c) =>
      NETWORK_TYPES.has(c.type) && (c.hosts === undefined || list(c.hosts).some((h) => h.trim() === "*")),
  );
  const type = open[0]?.type;
  if (type === undefined) return [];
  return [
    {
      id: `grant_scopes:${fighter.name}:${type}`,
      severity: "medium",
      message: `fighter ${fighter.name}'s ${type} grant has ${open.some((c) => c.hosts === undefined) ? "no hosts" : 'hosts "*"'}: web_fetch may fetch any public address, so any page can put instructions before its model, and what it puts in a URL leaves the machine`,
      fix: `spar fighter kill ${shellWord(fighter.name)}, then spawn it again with "hosts": [the sites it needs]`,
    },
  ];
}

/**
 * Programs that run whatever their arguments say (shells, interpreters, `env`, `xargs`, `find
 * -exec`, git hooks and aliases, npm scripts, makefiles): a pattern starting with one allows any
 * code, however narrow the rest of it looks.
 */
const RUNS_CODE =
  /^(?:(?:ba|da|z|k|c|tc|fi|a|mk|yash|rbash)?sh|busybox|toybox|env|xargs|find|parallel|git|npm|npx|pnpm|pnpx|yarn|corepack|make|gmake|cmake|ninja|python[\d.]*|pypy[\d.]*|pip[\d.]*|uv|uvx|node|nodejs|deno|bun|bunx|tsx|ts-node|perl[\d.]*|ruby[\d.]*|irb|php[\d.]*|lua[\d.]*|luajit|tclsh|wish|awk|gawk|mawk|nawk|sed|gsed|vim?|nvim|emacs|sudo|doas|su|nice|nohup|timeout|stdbuf|setsid|chroot|nsenter|unshare|strace|gdb|ssh|docker|podman|kubectl|cargo|go|java|jshell|dotnet|pwsh|powershell|osascript|R|Rscript|julia|guile|sbcl|racket)$/;

/** `*` (any command) is medium; a pattern starting with a program that runs code is a low note. */
export function checkShellPatterns(input: AuditInput): CheckResult {
  if (!Array.isArray(input.fighters)) return { skipped: input.fighters.unavailable };
  const findings = input.fighters.flatMap((f) => shellFindings(f));
  if (findings.length) return { findings };
  return { passed: "no shell_exec pattern allows any command or a program that runs code" };
}

function shellFindings(fighter: FighterFact): Finding[] {
  const patterns = fighter.capabilities
    .filter((c) => c.type === "shell_exec")
    .flatMap((c) => list(c.pattern));
  const firstWords = patterns.map((p) => p.trim().split(/\s+/)[0] ?? "");
  const any = patterns.filter((_, i) => firstWords[i] === "*");
  const code = patterns.filter((_, i) => firstWords[i] !== "*" && runsCode(firstWords[i] as string));
  const quoted = (list: string[]) => list.map((p) => JSON.stringify(p)).join(", ");
  const findings: Finding[] = [];
  if (any.length) {
    findings.push({
      id: `shell_patterns:${fighter.name}`,
      severity: "medium",
      message: `fighter ${fighter.name}'s shell_exec pattern ${quoted(any)} allows any command: only the shell's sandbox contains what it runs`,
      fix: `spar fighter kill ${shellWord(fighter.name)}, then spawn it again with the commands it needs (e.g. "npm test", "git status")`,
    });
  }
  if (code.length) {
    findings.push({
      id: `shell_patterns:${fighter.name}:runs_code`,
      severity: "low",
      message: `fighter ${fighter.name}'s shell_exec pattern(s) ${quoted(code)} start with a program that runs arbitrary code: the pattern is a convenience, not a boundary; the sandbox is the boundary`,
      fix: "count on the shell's sandbox, not the pattern, to contain it; where you can, allow exact commands instead",
    });
  }
  return findings;
}

/** The first word's program (a path counts by its name; a `*` in it may match any program). */
function runsCode(word: string): boolean {
  return word.includes("*") || RUNS_CODE.test(basename(word));
}

/** `full_access` held by any fighter but the default one. */
export function checkFullAccess(input: AuditInput): CheckResult {
  if (!Array.isArray(input.fighters)) return { skipped: input.fighters.unavailable };
  const broad = input.fighters.filter(
    (f) => f.name !== DEFAULT_FIGHTER_NAME && f.capabilities.some((c) => c.type === "full_access"),
  );
  if (broad.length === 0) return { passed: `only ${DEFAULT_FIGHTER_NAME} has full_access` };
  return {
    findings: broad.map((f) => ({
      id: `full_access:${f.name}`,
      severity: "medium" as const,
      message: `fighter ${f.name} has full_access: every move installed now or later, each inside its own containment and no further (the file moves in its workspace, shell_exec any command inside the shell's sandbox, web_fetch any public address), with no narrower grant`,
      fix: `spar fighter kill ${shellWord(f.name)}, then spawn it again with only the capabilities it needs`,
    })),
  };
}

function list(value: Capability["scope"]): string[] {
  return value === undefined ? [] : [value].flat();
}

/** `~` and `~/…` mean the user's home, as the file moves read them; nothing else is expanded. */
function expandHome(path: string, userHome: string): string {
  if (path === "~") return userHome;
  return path.startsWith("~/") ? join(userHome, path.slice(2)) : path;
}

function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(`${folder}/`);
}
