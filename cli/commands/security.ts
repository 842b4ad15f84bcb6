import { loadSparConfig } from "../../kernel/host/config-sections.js";
import type { DiscoveredPlugin } from "../../kernel/host/plugin-manifest.js";
import { resolveHome, withDotEnv } from "../../lib/home.js";
import { createProviderPolicy, resolveCredential } from "../../lib/provider-keys.js";
import type { SparConfig } from "../../sdk/config.js";
import { isSparError } from "../../sdk/errors.js";
import type { FighterRecord, ModelSettings } from "../../sdk/types.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson } from "../output.js";
import { type AuditInput, auditReport } from "./security-audit.js";
import { gatherAuditInput } from "./security-facts.js";

/**
 * `spar security audit`: checks the listen address, unsigned access, file modes in the data dir,
 * `.env`, channel allowlists and (with the daemon running) fighters holding full_access. Exits 1
 * when a finding is high. Prints paths, modes and names only: never a key or a `.env` value.
 */
export async function security(options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  const env = withDotEnv(home);
  const { config, plugins } = loadSparConfig(home, env);
  const report = auditReport({
    ...gatherAuditInput(home, config, env),
    fighters: await daemonFighters(keyProblemFor(home, config, plugins, env)),
  });
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
async function daemonFighters(
  keyProblem: (model: ModelSettings) => string | undefined,
): Promise<AuditInput["fighters"]> {
  try {
    const { fighters } = await api<{ fighters: FighterRecord[] }>("GET", "/api/v1/fighters");
    return fighters.map((f) => {
      const problem = keyProblem(f.model);
      return { name: f.name, capabilities: f.capabilities, ...(problem ? { key_problem: problem } : {}) };
    });
  } catch (err) {
    if (isSparError(err, "DAEMON_UNREACHABLE")) {
      return { unavailable: "the daemon is not running; start it to check fighters" };
    }
    return { unavailable: `could not list fighters: ${(err as Error).message}` };
  }
}
