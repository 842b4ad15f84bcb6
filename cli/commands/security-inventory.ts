import type { AuditInput } from "./security-audit.js";
import { type CheckResult, type Finding, shellWord } from "./security-finding.js";

/**
 * The checks over what runs without anyone asking: user plugins (code inside the daemon, known by
 * the hash of each entry file against the last audit's) and scheduled jobs (unleashed gorillas and
 * `schedule_add` schedules).
 */

export interface UserPluginFact {
  id: string;
  /** Its folder (removing it removes the plugin). */
  dir: string;
  /** Absolute path of its entry file; absent for a plugin with no code (data only). */
  entry?: string;
  /** sha256 (hex) of the entry file now; absent when it could not be read (see `unreadable`). */
  sha256?: string;
  unreadable?: string;
  /** The hash the last audit recorded for it; absent when no audit saw it before. */
  last_sha256?: string;
}

export type PluginStatus = "new" | "unchanged" | "changed" | "unreadable" | "no_code";

export function pluginStatus(plugin: UserPluginFact): PluginStatus {
  if (plugin.entry === undefined) return "no_code";
  if (plugin.sha256 === undefined) return "unreadable";
  if (plugin.last_sha256 === undefined) return "new";
  return plugin.last_sha256 === plugin.sha256 ? "unchanged" : "changed";
}

export interface GorillaFact {
  name: string;
  /** CAGED, UNLEASHED or RAMPAGING (a cycle running). */
  state: string;
  schedule: string;
  timezone: string;
  moves: string[];
  next_run_at: string | null;
}

export interface ScheduleFact {
  id: string;
  /** The fighter's name (its id when the fighter is gone). */
  fighter: string;
  /** The capability types that fighter holds: what its scheduled turn may do. */
  capabilities: string[];
  message: string;
  cron?: string;
  timezone?: string;
  next_run_at: string;
}

export interface ScheduledJobs {
  gorillas: GorillaFact[];
  schedules: ScheduleFact[];
}

export function checkUserPlugins(input: AuditInput): CheckResult {
  const plugins = input.user_plugins;
  if (plugins.length === 0) return { passed: "no user plugin" };
  const findings = plugins.flatMap((p) => pluginFinding(p));
  if (findings.length) return { findings };
  return { passed: `${plugins.length} user plugin(s), each entry file unchanged since the last audit` };
}

function pluginFinding(plugin: UserPluginFact): Finding[] {
  const { id, entry = "", sha256 = "" } = plugin;
  const remove = `if you did not install it, remove ${shellWord(plugin.dir)}`;
  switch (pluginStatus(plugin)) {
    case "new":
      return [
        {
          id: `user_plugins:${id}`,
          severity: "low",
          message: `user plugin ${id} is new since the last audit: its entry file ${entry} (sha256 ${sha256}) runs inside the daemon, with all the daemon may do`,
          fix: `read ${shellWord(entry)}; ${remove}`,
        },
      ];
    case "changed":
      return [
        {
          id: `user_plugins:${id}`,
          severity: "high",
          message: `user plugin ${id}'s entry file ${entry} changed since the last audit (sha256 ${plugin.last_sha256} then, ${sha256} now): the daemon runs the new code at its next start`,
          fix: `if you did not update it yourself, remove ${shellWord(plugin.dir)} and find out who could write there; the next audit takes the new hash as known`,
        },
      ];
    case "unreadable":
      return [
        {
          id: `user_plugins:${id}`,
          severity: "low",
          message: `user plugin ${id}'s entry file ${entry} cannot be read (${plugin.unreadable}), so its code cannot be checked`,
          fix: `restore ${shellWord(entry)}, or remove ${shellWord(plugin.dir)}`,
        },
      ];
    default:
      return [];
  }
}

/** Unleashed gorillas and fighters' schedules: each runs turns with no one asking at the time. */
export function checkScheduledJobs(input: AuditInput): CheckResult {
  const jobs = input.scheduled_jobs;
  if ("unavailable" in jobs) return { skipped: jobs.unavailable };
  const running = jobs.gorillas.filter((g) => g.state !== "CAGED");
  const findings: Finding[] = [
    ...running.map((g) => ({
      id: `scheduled_jobs:gorilla:${g.name}`,
      severity: "low" as const,
      message: `gorilla ${g.name} is ${g.state.toLowerCase()}: on "${g.schedule}" (${g.timezone})${g.next_run_at ? `, next at ${g.next_run_at}` : ""}, it runs a cycle with the moves ${g.moves.join(", ") || "(none)"}`,
      fix: `spar gorilla cage ${shellWord(g.name)}, if it should not run`,
    })),
    ...jobs.schedules.map((s) => ({
      id: `scheduled_jobs:schedule:${s.id}`,
      severity: "low" as const,
      message: `fighter ${s.fighter} scheduled a message to itself (${s.cron ? `cron "${s.cron}" ${s.timezone ?? "UTC"}` : "once"}, next at ${s.next_run_at}): ${JSON.stringify(excerpt(s.message))}, run as a turn with its grants (${s.capabilities.join(", ") || "none"})`,
      fix: `ask ${s.fighter} to schedule_remove ${s.id}; or spar fighter kill ${shellWord(s.fighter)}`,
    })),
  ];
  if (findings.length) return { findings };
  const caged = jobs.gorillas.length ? `${jobs.gorillas.length} gorilla(s), all caged` : "no gorilla";
  return { passed: `nothing runs on a schedule: ${caged}; no fighter's schedule` };
}

function excerpt(text: string): string {
  const chars = [...text.replace(/\s+/g, " ").trim()];
  return chars.length > 80 ? `${chars.slice(0, 79).join("")}…` : chars.join("");
}
