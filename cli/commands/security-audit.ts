import { join } from "node:path";
import { type MasterSecretFacts, weakSecretFix } from "../../lib/home.js";
import { isLoopbackHost } from "../../lib/loopback.js";
import { secretWeakness } from "../../lib/secret-strength.js";
import { parseListen } from "../../sdk/config.js";
import type { Capability } from "../../sdk/types.js";
import { type CheckResult, type Finding, fail, type Severity, shellWord } from "./security-finding.js";
import { checkFullAccess, checkGrantScopes, checkShellPatterns } from "./security-grants.js";
import {
  checkScheduledJobs,
  checkUserPlugins,
  type PluginStatus,
  pluginStatus,
  type ScheduledJobs,
  type UserPluginFact,
} from "./security-inventory.js";

/**
 * `spar security audit`: facts are gathered from disk (and, by the CLI, from the daemon) into an
 * `AuditInput`, and `auditReport` judges them without touching anything, so tests feed facts directly.
 * Findings name paths, modes, fighters and account names, never key material or `.env` values.
 */

export type { Finding, Severity };

export type CheckName =
  | "api_listen"
  | "unsigned_loopback"
  | "cors_origins"
  | "file_permissions"
  | "dotenv"
  | "master_secret"
  | "provider_keys"
  | "manifest_base_urls"
  | "channel_allowlists"
  | "full_access"
  | "grant_scopes"
  | "shell_patterns"
  | "forced_skills"
  | "user_plugins"
  | "scheduled_jobs"
  | "sandbox"
  | "approvals";

export interface AuditReport {
  /** False when any finding is high: the CLI exits 1. */
  ok: boolean;
  findings: Finding[];
  passed: { check: CheckName; detail: string }[];
  skipped: { check: CheckName; reason: string }[];
  /** Every user plugin with its entry file's hash, and how that compares with the last audit's. */
  user_plugins: { id: string; entry: string | null; sha256: string | null; status: PluginStatus }[];
}

/** What a path is for decides which bits are dangerous on it and how bad they are. */
export type FileRole =
  | "data_dir"
  | "master_key"
  | "cli_key"
  | "database"
  | "authorized_key"
  | "key_dir"
  | "config"
  | "plugins_dir"
  | "audit_state"
  | "dotenv";

export interface FileFact {
  path: string;
  role: FileRole;
  /** Permission bits only (`mode & 0o777`). */
  mode: number;
}

export interface FighterFact {
  name: string;
  capabilities: Capability[];
  /** Why its model breaks the provider-key pairing rule, when it does (see provider-check.ts). */
  key_problem?: string;
}

export interface AuditInput {
  home: string;
  /** What `~` in a grant's scope means (the user's home). */
  user_home: string;
  api_listen: string;
  /** Set when `SPAR_API_LISTEN` overrides config.toml, so the fix names the right place. */
  api_listen_from_env: boolean;
  allow_unsigned_loopback: boolean;
  cors_origins: string[];
  /** Names of the keys in `keys/authorized/`. */
  authorized_keys: string[];
  /** Human accounts that could reach a loopback port; undefined when they could not be counted. */
  human_accounts: string[] | undefined;
  /** Modes of the paths that exist; undefined where POSIX modes mean nothing (Windows). */
  files: FileFact[] | undefined;
  /** The master secret by its lengths (never its bytes), or why there is none to judge. */
  master_secret: MasterSecretFacts | { unavailable: string };
  /** `[providers] allow_manifest_base_url`: URLs any client may make the daemon call. */
  manifest_base_urls: string[];
  /** `[channels.<platform>]` sections with their raw `allowlist` value. */
  channels: { platform: string; allowlist: unknown }[];
  /** The daemon's fighters, or why they could not be listed (the check is then skipped). */
  fighters: FighterFact[] | { unavailable: string };
  /** Installed skills that `spar move install --force` put in despite high-severity scan findings. */
  forced_skills: { name: string; source: string; findings: string[] }[];
  /** The plugins in `<data dir>/plugins/` and `[plugins] dirs`, hashed against the last audit. */
  user_plugins: UserPluginFact[];
  /** Gorillas and fighters' schedules from the daemon, or why they could not be listed. */
  scheduled_jobs: ScheduledJobs | { unavailable: string };
  /** `[sandbox] mode`, and whether a sandbox can run here (and if not, why). */
  sandbox: { mode: "required" | "off"; kind: string; ready: boolean; problem?: string };
  /** `[approvals] mode` and `after_untrusted` (the policy-approvals plugin's table), or their defaults. */
  approvals: { mode: "on" | "off"; after_untrusted: "ask" | "deny" | "off" };
}

/** A check judges the facts and touches nothing; it reports findings, a pass, or why it was skipped. */
type Check = (input: AuditInput) => CheckResult;

const SEVERITY_ORDER: Record<Severity, number> = { high: 0, medium: 1, low: 2 };

/** The findings alone, most severe first. */
export function auditSecurity(input: AuditInput): Finding[] {
  return auditReport(input).findings;
}

/** Every check over the facts: findings (most severe first), checks passed, checks skipped. */
export function auditReport(input: AuditInput): AuditReport {
  const report: AuditReport = {
    ok: true,
    findings: [],
    passed: [],
    skipped: [],
    user_plugins: input.user_plugins.map((p) => ({
      id: p.id,
      entry: p.entry ?? null,
      sha256: p.sha256 ?? null,
      status: pluginStatus(p),
    })),
  };
  for (const [check, run] of Object.entries(CHECKS) as [CheckName, Check][]) {
    const result = run(input);
    if (result.skipped !== undefined) report.skipped.push({ check, reason: result.skipped });
    else if (result.findings?.length) report.findings.push(...result.findings);
    else report.passed.push({ check, detail: result.passed ?? "" });
  }
  report.findings.sort((a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity]);
  report.ok = !report.findings.some((f) => f.severity === "high");
  return report;
}

/**
 * Every check, in the order reports list them. Adding one is a name in `CheckName`, a fact in
 * `AuditInput` (gathered in security-facts.ts, or by the CLI from the daemon), and one function here:
 * a `[sandbox] mode = "off"` finding, say, is `sandbox_mode: (i) => i.sandbox_mode === "off" ? fail(…) : { passed: … }`.
 */
const CHECKS: Record<CheckName, Check> = {
  api_listen: checkApiListen,
  unsigned_loopback: checkUnsignedLoopback,
  cors_origins: checkCorsOrigins,
  file_permissions: (input) => checkModes(input, false),
  dotenv: (input) => checkModes(input, true),
  master_secret: checkMasterSecret,
  provider_keys: checkProviderKeys,
  manifest_base_urls: checkManifestBaseUrls,
  channel_allowlists: checkChannels,
  forced_skills: checkForcedSkills,
  full_access: checkFullAccess,
  grant_scopes: checkGrantScopes,
  shell_patterns: checkShellPatterns,
  user_plugins: checkUserPlugins,
  scheduled_jobs: checkScheduledJobs,
  sandbox: checkSandbox,
  approvals: checkApprovals,
};

function checkApprovals(input: AuditInput): CheckResult {
  const config = join(input.home, "config.toml");
  if (input.approvals.mode === "off") {
    return fail(
      "approvals",
      "medium",
      "approvals are off ([approvals] mode = \"off\", or the policy-approvals plugin disabled): every call a fighter's grants allow runs unasked (shell commands, new fighters, schedules, posts to new chats), even one a web page or a stranger's message talked the model into",
      `remove mode = "off" from [approvals] in ${config} (and policy-approvals from [plugins] disable), and allow what should run unasked with [[approvals.rules]]`,
    );
  }
  if (input.approvals.after_untrusted === "off") {
    return fail(
      "approvals",
      "medium",
      '[approvals] after_untrusted = "off": a turn that read a web page, an MCP result or a stranger\'s message may act outside its workspace without asking',
      `remove after_untrusted = "off" from [approvals] in ${config} (the default is "ask")`,
    );
  }
  return {
    passed: `risky calls wait for an answer, and a turn that took in untrusted content ${input.approvals.after_untrusted}s before acting outside its workspace`,
  };
}

function checkSandbox(input: AuditInput): CheckResult {
  const { sandbox } = input;
  const config = join(input.home, "config.toml");
  if (sandbox.mode === "off") {
    return fail(
      "sandbox",
      "high",
      "[sandbox] mode = \"off\": every process a fighter starts (shell_exec, the desktop tools) runs unsandboxed as the daemon's user: it can read the master key and the database, reach the daemon's API on loopback and the local network",
      `remove mode = "off" from [sandbox] in ${config} (the default is "required"), and install bubblewrap if it is missing`,
    );
  }
  if (!sandbox.ready) {
    return fail(
      "sandbox",
      "high",
      `the sandbox is required but cannot run here, so every process-starting move refuses: ${sandbox.problem ?? "no sandbox"}`,
      "install bubblewrap (Debian/Ubuntu: apt install bubblewrap), then run spar doctor to prove it",
    );
  }
  return { passed: `every process a move starts runs in the sandbox (${sandbox.kind})` };
}

function checkApiListen(input: AuditInput): CheckResult {
  const { host, port } = parseListen(input.api_listen);
  if (isLoopbackHost(host)) return { passed: `the API listens on ${input.api_listen}, this machine only` };
  const keys = input.authorized_keys;
  const signers = keys.length
    ? `${keys.length} authorized key(s) can sign requests (${keys.join(", ")})`
    : "no key is authorized to sign requests";
  const where = input.api_listen_from_env
    ? `unset SPAR_API_LISTEN (or set it to 127.0.0.1:${port})`
    : `set api_listen = "127.0.0.1:${port}" in ${join(input.home, "config.toml")}`;
  return fail(
    "api_listen",
    "high",
    `the API listens on ${input.api_listen}, reachable from other machines; ${signers}`,
    `${where}; if other machines must reach it, set [auth] allow_unsigned_loopback = false so every request must be signed`,
  );
}

function checkUnsignedLoopback(input: AuditInput): CheckResult {
  if (!input.allow_unsigned_loopback) return { passed: "unsigned requests are refused" };
  const humans = input.human_accounts;
  if (humans === undefined) return { skipped: "could not count the user accounts on this machine" };
  if (humans.length <= 1) {
    return { passed: `unsigned loopback requests allowed, but ${humans[0] ?? "one user"} is the only user` };
  }
  return fail(
    "unsigned_loopback",
    "medium",
    `unsigned requests from this machine are allowed ([auth] allow_unsigned_loopback = true) and it has ` +
      `${humans.length} user accounts (${humans.join(", ")}): any of them can drive your fighters`,
    `set allow_unsigned_loopback = false under [auth] in ${join(input.home, "config.toml")}`,
  );
}

/** A listed origin passes the daemon's Origin check, so its pages may call the API unsigned. */
function checkCorsOrigins(input: AuditInput): CheckResult {
  const foreign = input.cors_origins.filter((o) => !isLoopbackHost(URL.parse(o)?.hostname ?? o));
  if (foreign.length === 0 || !input.allow_unsigned_loopback) {
    return {
      passed: foreign.length ? "listed origins must sign their requests" : "no foreign origin allowed",
    };
  }
  return fail(
    "cors_origins",
    "medium",
    `[api] cors_origins allows ${foreign.join(", ")}: scripts from there, in a browser on this machine, can call the API without a signature`,
    `remove them from [api] cors_origins in ${join(input.home, "config.toml")}, or set [auth] allow_unsigned_loopback = false`,
  );
}

interface ModeRule {
  /** The group/other bits that matter: 0o077 for secrets, 0o022 where only writing is dangerous. */
  mask: number;
  severity: Severity;
  chmod: string;
  what: string;
}

const MODE_RULES: Record<FileRole, ModeRule> = {
  data_dir: { mask: 0o077, severity: "high", chmod: "700", what: "the data dir holds keys and the database" },
  master_key: { mask: 0o077, severity: "high", chmod: "600", what: "the database key is derived from it" },
  cli_key: { mask: 0o077, severity: "high", chmod: "600", what: "it signs the CLI's requests" },
  database: { mask: 0o077, severity: "high", chmod: "600", what: "the encrypted store" },
  dotenv: { mask: 0o077, severity: "high", chmod: "600", what: "it holds provider keys and bot tokens" },
  // A public key is no secret, but whoever can replace it can sign as that client.
  authorized_key: { mask: 0o077, severity: "medium", chmod: "600", what: "an authorized public key" },
  key_dir: {
    mask: 0o022,
    severity: "high",
    chmod: "700",
    what: "whoever can write here can authorize a key",
  },
  config: {
    mask: 0o022,
    severity: "high",
    chmod: "600",
    what: "it chooses the listen address and plugin dirs",
  },
  plugins_dir: { mask: 0o022, severity: "high", chmod: "700", what: "code here runs inside the daemon" },
  audit_state: {
    mask: 0o022,
    severity: "medium",
    chmod: "600",
    what: "whoever can write it can hide a changed plugin from the next audit",
  },
};

/** The file-permission check, or with `dotenvOnly` the `.env` check (separate so each reports alone). */
function checkModes(input: AuditInput, dotenvOnly: boolean): CheckResult {
  if (input.files === undefined) return { skipped: "file modes are not POSIX permissions on this platform" };
  const files = input.files.filter((f) => (f.role === "dotenv") === dotenvOnly);
  if (dotenvOnly && files.length === 0) return { passed: "no .env in the data dir" };
  const findings: Finding[] = [];
  for (const file of files) {
    const rule = MODE_RULES[file.role];
    const loose = file.mode & rule.mask;
    if (!loose) continue;
    const writable = (loose & 0o022) !== 0;
    findings.push({
      id: dotenvOnly ? "dotenv" : `file_permissions:${relativeTo(input.home, file.path)}`,
      severity: file.role === "authorized_key" && writable ? "high" : rule.severity,
      message: `${file.path} has mode ${octal(file.mode)}: ${access(loose)} (${rule.what})`,
      fix: `chmod ${rule.chmod} ${shellWord(file.path)}`,
    });
  }
  const detail = dotenvOnly ? ".env is private" : `${files.length} path(s) private to their owner`;
  return findings.length ? { findings } : { passed: detail };
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, "0")}`;
}

/** "group and others can read it", "others can read and write it" … from the loose bits. */
function access(bits: number): string {
  const who = [(bits & 0o070) !== 0 && "group", (bits & 0o007) !== 0 && "others"].filter(Boolean);
  const any = (bits >> 3) | bits;
  const can = [any & 4 && "read", any & 2 && "write", any & 1 && "enter"].filter(Boolean);
  return `${who.join(" and ")} can ${can.join(" and ")} it`;
}

function relativeTo(home: string, path: string): string {
  if (path === home) return ".";
  return path.startsWith(`${home}/`) ? path.slice(home.length + 1) : path;
}

/** The database key is only as strong as the secret it is derived from: Argon2id slows guessing, no more. */
function checkMasterSecret(input: AuditInput): CheckResult {
  const secret = input.master_secret;
  if ("unavailable" in secret) return { skipped: secret.unavailable };
  const { encoding, bytes } = secret.strength;
  const weakness = secretWeakness(secret.strength);
  if (!weakness) {
    return {
      passed: `${secret.source} carries ${bytes} bytes${encoding === "raw" ? "" : ` (${encoding}-decoded)`}`,
    };
  }
  const made = secret.database_exists ? "; the database was created with it" : "";
  return fail(
    "master_secret",
    "high",
    `the master secret (${secret.source}) ${weakness}${made}`,
    weakSecretFix(input.home, secret),
  );
}

/** Fighters stored before keys were paired with endpoints: refused at message time, but say so. */
function checkProviderKeys(input: AuditInput): CheckResult {
  if (!Array.isArray(input.fighters)) return { skipped: input.fighters.unavailable };
  const bad = input.fighters.filter((f) => f.key_problem);
  if (bad.length === 0)
    return { passed: "every fighter's model sends keys only where config.toml pairs them" };
  return {
    findings: bad.map((f) => ({
      id: `provider_keys:${f.name}`,
      severity: "high" as const,
      message: `fighter ${f.name}'s model would aim a provider key or request where config.toml does not: ${f.key_problem}. Spar refuses to call it`,
      fix: `spar fighter kill ${shellWord(f.name)}, then spawn it with a model config.toml pairs (see [[providers.endpoints]])`,
    })),
  };
}

/** A listed URL is one any client (a fighter manifest) may make the daemon send requests to. */
function checkManifestBaseUrls(input: AuditInput): CheckResult {
  const remote = input.manifest_base_urls.filter((u) => !isLoopbackHost(URL.parse(u)?.hostname));
  if (remote.length === 0) {
    return {
      passed: input.manifest_base_urls.length
        ? "listed manifest base URLs are on this machine"
        : "none listed",
    };
  }
  return fail(
    "manifest_base_urls",
    "low",
    `[providers] allow_manifest_base_url lists ${remote.join(", ")}: any API client can make the daemon send requests there (without a key)`,
    `keep only the servers fighters need in allow_manifest_base_url in ${join(input.home, "config.toml")}`,
  );
}

function checkChannels(input: AuditInput): CheckResult {
  if (input.channels.length === 0) return { passed: "no channel configured" };
  const open = input.channels.filter(({ allowlist }) => !isRealAllowlist(allowlist));
  if (open.length === 0) return { passed: `${input.channels.length} channel(s), each with an allowlist` };
  return {
    findings: open.map(({ platform }) => ({
      id: `channel_allowlists:${platform}`,
      severity: "high" as const,
      message: `channel ${platform} has no allowlist (none, empty, or "*"): Spar's channels then answer nobody, and a channel plugin that reads it as "everyone" would let anyone who finds the bot talk to your fighters`,
      fix: `set allowlist = [<sender ids>] under [channels.${platform}] in ${join(input.home, "config.toml")}`,
    })),
  };
}

/** A non-empty list of senders; `"*"` lets everyone in, so it is no allowlist. */
function isRealAllowlist(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0 && !value.some((v) => String(v).trim() === "*");
}

function checkForcedSkills(input: AuditInput): CheckResult {
  if (input.forced_skills.length === 0)
    return { passed: "no skill was installed past a high-severity scan finding" };
  return {
    findings: input.forced_skills.map((s) => ({
      id: `forced_skills:${s.name}`,
      severity: "high" as const,
      message: `skill ${s.name} (from ${s.source}) was installed with --force past ${s.findings.length} high or medium scan finding(s): ${s.findings.slice(0, 3).join("; ")}`,
      fix: `spar move scan ${shellWord(s.name)} to read them; spar move remove ${shellWord(s.name)} unless you have checked every one`,
    })),
  };
}
