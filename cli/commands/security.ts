import { loadSparConfig } from "../../kernel/host/config-sections.js";
import type { DiscoveredPlugin } from "../../kernel/host/plugin-manifest.js";
import { resolveHome, withDotEnv } from "../../lib/home.js";
import { createProviderPolicy, resolveCredential } from "../../lib/provider-keys.js";
import type { ScheduleRecord } from "../../plugins/moves-schedule/schedules.js";
import type { SparConfig } from "../../sdk/config.js";
import { isSparError } from "../../sdk/errors.js";
import type { FighterRecord, ModelSettings } from "../../sdk/types.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson } from "../output.js";
import { type AuditInput, auditReport } from "./security-audit.js";
import { gatherAuditInput } from "./security-facts.js";
import type { GorillaFact } from "./security-inventory.js";
import { AUDIT_STATE_FILE, recordPluginHashes } from "./security-plugin-hashes.js";

/**
 * `spar security audit`: checks the listen address, unsigned access, file modes in the data dir,
 * `.env`, channel allowlists, user plugins' entry files against the last audit and (with the daemon
 * running) fighters' grants and scheduled jobs. Exits 1 when a finding is high. Prints paths, modes,
 * hashes and names only: never a key or a `.env` value. Writes one file: the plugin hashes it saw.
 */
/** The sandbox as the daemon would find it with this environment. */
async function sandboxFacts(
  home: string,
  config: SparConfig,
  env: NodeJS.ProcessEnv,
): Promise<AuditInput["sandbox"]> {
  const { createSandbox } = await import("../../lib/sandbox/index.js");
  const status = await createSandbox(config.sandbox, home, env).status();
  return {
    mode: status.mode,
    kind: status.kind,
    ready: status.ready,
    ...(status.problem ? { problem: status.problem } : {}),
  };
}

export async function security(options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  const env = withDotEnv(home);
  const { config, plugins } = loadSparConfig(home, env);
  const facts = gatherAuditInput(home, config, env, plugins);
  const fighters = await daemonFighters();
  const keyProblem = keyProblemFor(home, config, plugins, env);
  const report = auditReport({
    ...facts,
    fighters: Array.isArray(fighters)
      ? fighters.map((f) => {
          const problem = keyProblem(f.model);
          return { name: f.name, capabilities: f.capabilities, ...(problem ? { key_problem: problem } : {}) };
        })
      : fighters,
    scheduled_jobs: Array.isArray(fighters) ? await daemonJobs(fighters) : fighters,
    sandbox: await sandboxFacts(home, config, env),
  });
  try {
    recordPluginHashes(home, facts.user_plugins);
  } catch (err) {
    process.stderr.write(
      `spar: could not record the plugin hashes in ${AUDIT_STATE_FILE}: ${(err as Error).message}\n`,
    );
  }
  if (!report.ok) process.exitCode = 1;
  if (options.json) return printJson(report);

  const lines = report.findings.map(
    (f) => `${f.severity.toUpperCase().padEnd(7)}${f.message}\n${" ".repeat(7)}fix: ${f.fix}`,
  );
  const count = (severity: string) => report.findings.filter((f) => f.severity === severity).length;
  let summary = `${count("high")} high, ${count("medium")} medium, ${count("low")} low`;
  summary += `; checks passed: ${report.passed.map((p) => p.check).join(", ") || "none"}`;
  if (report.skipped.length) {
    summary += `; skipped: ${report.skipped.map((s) => `${s.check} (${s.reason})`).join(", ")}`;
  }
  lines.push(summary);
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** The pairing rule over a fighter's model, judged from the plugin manifests (no plugin code runs). */
function keyProblemFor(
  home: string,
  config: SparConfig,
  plugins: DiscoveredPlugin[],
  env: NodeJS.ProcessEnv,
): (model: ModelSettings) => string | undefined {
  const declarations = new Map(
    plugins.flatMap((p) => (p.manifest.contributes?.providers ?? []).map((d) => [d.id, d] as const)),
  );
  const policy = createProviderPolicy(config, declarations, home);
  return (model) => {
    const check = resolveCredential(model, policy, env);
    return !check.ok && check.kind === "unpaired" ? check.problem : undefined;
  };
}

/** The fighter checks need the daemon; without it they are skipped, not failed. */
async function daemonFighters(): Promise<FighterRecord[] | { unavailable: string }> {
  try {
    return (await api<{ fighters: FighterRecord[] }>("GET", "/api/v1/fighters")).fighters;
  } catch (err) {
    if (isSparError(err, "DAEMON_UNREACHABLE")) {
      return { unavailable: "the daemon is not running; start it to check fighters" };
    }
    return { unavailable: `could not list fighters: ${(err as Error).message}` };
  }
}

/**
 * The gorillas (their files and the state the store keeps) and the fighters' schedules (in the
 * store), as the daemon serves them. A route the daemon lacks (its plugin not loaded) is no job.
 */
async function daemonJobs(fighters: FighterRecord[]): Promise<AuditInput["scheduled_jobs"]> {
  const listed = async <T>(path: string, key: string): Promise<T[]> => {
    try {
      return (await api<Record<string, T[]>>("GET", path))[key] ?? [];
    } catch (err) {
      if (isSparError(err, "NOT_FOUND")) return [];
      throw err;
    }
  };
  try {
    const gorillas = await listed<GorillaFact>("/api/v1/gorillas", "gorillas");
    const schedules = await listed<ScheduleRecord>("/api/v1/schedules", "schedules");
    const byId = new Map(fighters.map((f) => [f.id, f]));
    return {
      gorillas: gorillas.map(({ name, state, schedule, timezone, moves, next_run_at }) => ({
        name,
        state,
        schedule,
        timezone,
        moves,
        next_run_at,
      })),
      schedules: schedules.map((s) => {
        const fighter = byId.get(s.fighter_id);
        return {
          id: s.id,
          fighter: fighter?.name ?? s.fighter_id,
          capabilities: fighter?.capabilities.map((c) => c.type) ?? [],
          message: s.message,
          next_run_at: s.next_run_at,
          ...(s.cron ? { cron: s.cron, timezone: s.timezone ?? "UTC" } : {}),
        };
      }),
    };
  } catch (err) {
    return { unavailable: `could not list the scheduled jobs: ${(err as Error).message}` };
  }
}
