import { readdirSync, readFileSync, statSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { join } from "node:path";
import type { DiscoveredPlugin } from "../../kernel/host/plugin-manifest.js";
import { inspectMasterSecret, MASTER_KEY_FILE } from "../../lib/home.js";
import { authorizedDir } from "../../lib/keys.js";
import type { SparConfig } from "../../sdk/config.js";
import type { AuditInput, FileFact, FileRole } from "./security-audit.js";
import { AUDIT_STATE_FILE, userPluginFacts } from "./security-plugin-hashes.js";

/**
 * Reads every fact but the fighters and scheduled jobs (those need the daemon; the CLI asks it).
 * `config` is the loaded config; channels are read from the raw TOML, since `[channels.*]` is not a
 * typed key yet. `plugins` are the discovered plugins: the user ones are hashed.
 */
export function gatherAuditInput(
  home: string,
  config: SparConfig,
  env: NodeJS.ProcessEnv = process.env,
  plugins: DiscoveredPlugin[] = [],
): Omit<AuditInput, "fighters" | "scheduled_jobs" | "sandbox"> {
  const posix = process.platform !== "win32";
  return {
    home,
    user_home: homedir(),
    api_listen: config.api_listen,
    api_listen_from_env: Boolean(env.SPAR_API_LISTEN),
    // The Arena's tables, checked and completed with their defaults like the daemon's.
    allow_unsigned_loopback: config.sections.auth?.allow_unsigned_loopback !== false,
    cors_origins: (config.sections.api?.cors_origins as string[] | undefined) ?? [],
    authorized_keys: listDir(authorizedDir(home))
      .filter((f) => f.endsWith(".pub"))
      .map((f) => f.slice(0, -4)),
    human_accounts: posix ? readHumanAccounts() : undefined,
    files: posix ? gatherFiles(home) : undefined,
    master_secret: inspectMasterSecret(home, env) ?? {
      unavailable: `there is no master secret yet (no ${MASTER_KEY_FILE}, no SPAR_MASTER_KEY); spar init writes one`,
    },
    manifest_base_urls: config.providers.allow_manifest_base_url,
    // The approvals plugin's table, with its defaults when config.toml has none.
    approvals: {
      mode:
        config.sections.approvals?.mode === "off" || config.plugins.disable.includes("policy-approvals")
          ? "off"
          : "on",
      after_untrusted:
        (config.sections.approvals?.after_untrusted as "ask" | "deny" | "off" | undefined) ?? "ask",
    },
    channels: readChannels(config),
    forced_skills: readForcedSkills(home),
    user_plugins: userPluginFacts(home, plugins),
  };
}

/** Entries of the installed skills' lock file marked `forced`. */
function readForcedSkills(home: string): AuditInput["forced_skills"] {
  let lock: { skills?: Record<string, { source?: string; forced?: boolean; findings?: unknown[] }> };
  try {
    lock = JSON.parse(readFileSync(join(home, "skills", "skills.lock.json"), "utf8"));
  } catch {
    return [];
  }
  return Object.entries(lock.skills ?? {})
    .filter(([, entry]) => entry.forced === true)
    .map(([name, entry]) => ({
      name,
      source: String(entry.source ?? "?"),
      findings: (entry.findings ?? []).map((f) => {
        const x = f as { rule?: string; file?: string; line?: number };
        return `${x.rule ?? "?"} at ${x.file ?? "?"}:${x.line ?? "?"}`;
      }),
    }));
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

function gatherFiles(home: string): FileFact[] {
  const facts: FileFact[] = [];
  const add = (path: string, role: FileRole) => {
    try {
      facts.push({ path, role, mode: statSync(path).mode & 0o777 });
    } catch {
      // Absent: nothing to expose (SPAR_MASTER_KEY instead of a file, no database yet …).
    }
  };
  add(home, "data_dir");
  add(join(home, MASTER_KEY_FILE), "master_key");
  add(join(home, "keys", "cli.key"), "cli_key");
  for (const name of ["spar.db", "spar.db-wal", "spar.db-shm", "spar.db.salt"])
    add(join(home, name), "database");
  add(join(home, "keys"), "key_dir");
  add(authorizedDir(home), "key_dir");
  for (const name of listDir(authorizedDir(home))) add(join(authorizedDir(home), name), "authorized_key");
  add(join(home, "config.toml"), "config");
  add(join(home, "plugins"), "plugins_dir");
  add(join(home, AUDIT_STATE_FILE), "audit_state");
  add(join(home, ".env"), "dotenv");
  return facts;
}

/** `[channels.<platform>]` tables, as their owning channel plugins checked them. */
function readChannels(config: SparConfig): AuditInput["channels"] {
  return Object.entries(config.sections)
    .filter(([path]) => /^channels\.[^.]+$/.test(path))
    .map(([path, table]) => ({ platform: path.slice("channels.".length), allowlist: table.allowlist }));
}

/** The range `useradd` gives people (login.defs), outside of which accounts belong to the system. */
export interface UidRange {
  min: number;
  max: number;
}

export function parseUidRange(loginDefs: string): UidRange {
  const value = (name: string, fallback: number) => {
    const match = new RegExp(`^\\s*${name}\\s+(\\d+)`, "m").exec(loginDefs);
    return match?.[1] ? Number(match[1]) : fallback;
  };
  return { min: value("UID_MIN", 1000), max: value("UID_MAX", 60000) };
}

/**
 * The people who could call a loopback port: accounts in the human uid range with a login shell,
 * owners of running processes in that range, and the current user. Root is not counted unless it is
 * the current user: root can read the data dir anyway, so an unsigned API gives it nothing new.
 */
export function humanAccounts(
  passwd: string,
  processUids: number[],
  current: { uid: number; name: string },
  range: UidRange = { min: 1000, max: 60000 },
): string[] {
  const names = new Map<number, string>();
  const people = new Map<number, string>();
  const isHuman = (uid: number) => uid >= range.min && uid <= range.max;
  for (const line of passwd.split("\n")) {
    const [name, , uidText, , , , shell = ""] = line.split(":");
    const uid = Number(uidText);
    if (!name || !Number.isInteger(uid)) continue;
    names.set(uid, name);
    if (isHuman(uid) && !/(nologin|false)$/.test(shell.trim())) people.set(uid, name);
  }
  for (const uid of processUids) if (isHuman(uid)) people.set(uid, names.get(uid) ?? `uid ${uid}`);
  people.set(current.uid, current.name);
  return [...people.values()].sort();
}

function readHumanAccounts(): string[] | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const read = (path: string) => {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return "";
    }
  };
  let name = `uid ${uid}`;
  try {
    name = userInfo().username;
  } catch {
    // A uid without a passwd entry (some containers): keep the number.
  }
  return humanAccounts(
    read("/etc/passwd"),
    processOwners(),
    { uid, name },
    parseUidRange(read("/etc/login.defs")),
  );
}

/** Real uids of the processes in /proc (Linux); none elsewhere, where passwd alone must do. */
function processOwners(): number[] {
  const uids = new Set<number>();
  for (const pid of listDir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const match = /^Uid:\s+(\d+)/m.exec(readFileSync(join("/proc", pid, "status"), "utf8"));
      if (match?.[1]) uids.add(Number(match[1]));
    } catch {
      // The process ended between listing and reading.
    }
  }
  return [...uids];
}
