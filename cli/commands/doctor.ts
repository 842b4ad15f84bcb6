import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { loadSparConfig } from "../../kernel/host/config-sections.js";
import type { DiscoveredPlugin } from "../../kernel/host/plugin-manifest.js";
import {
  inspectMasterSecret,
  MASTER_KEY_FILE,
  missingMasterKeyAdvice,
  resolveHome,
  weakSecretFix,
  withDotEnv,
} from "../../lib/home.js";
import { secretWeakness } from "../../lib/secret-strength.js";
import type { SparConfig } from "../../sdk/config.js";
import { isSparError } from "../../sdk/errors.js";
import { validatorWithDefaults } from "../../sdk/schema.js";
import { CONFIG_SCHEMA } from "../../sdk/schemas.js";
import type { FighterRecord, ModelSettings } from "../../sdk/types.js";
import { api, daemonUrl } from "../client.js";
import { type GlobalOptions, printable, printJson } from "../output.js";
import { checkMcpServers } from "./doctor-mcp.js";
import { pluginsCheck } from "./doctor-plugins.js";
import { checkProviders, configuredModels } from "./doctor-providers.js";
import { sandboxCheck } from "./doctor-sandbox.js";

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * `spar doctor`: the config, the data dir, the sandbox (proved by a probe), the daemon, every configured provider (reachable or
 * not, key present or not: the variable's name, never the key) and every MCP server (started or
 * not, its tools, its last failure). Exits 1 when something is wrong.
 */
export async function doctor(options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  const env = withDotEnv(home);
  const checks: Check[] = [];
  const { config, plugins, valid } = readConfig(home, env, checks);
  checks.push(masterKeyCheck(home, env));
  // A file that does not parse names no plugin to check: its FAIL line above says why.
  const pluginChoices = valid ? pluginsCheck(config, plugins) : undefined;
  if (pluginChoices) checks.push(pluginChoices);
  checks.push(await sandboxCheck(home, config, env));
  checks.push(approvalsCheck(config));
  checks.push(recallCheck(config));

  // The models the file names only when it can be read; the running daemon's fighters' in any case.
  const models = valid ? configuredModels(config) : [];
  checks.push(...(await daemonChecks(home, config, models)));

  // The provider check builds the plugin host, which a wrong [plugins] entry stops.
  const providers =
    pluginChoices?.ok !== false ? await providerChecks(home, config, models, env, checks) : [];
  const mcp = await checkMcpServers(config);
  const gorillas = await gorillaProblems(home, config);
  const failed =
    checks.some((c) => !c.ok) ||
    providers.some((p) => !p.reachable) ||
    mcp.some((m) => !m.ok) ||
    gorillas.length > 0;
  if (failed) process.exitCode = 1;
  if (options.json)
    return printJson({ ok: !failed, checks, providers, mcp, gorillas: { problems: gorillas } });

  const mark = (ok: boolean) => (ok ? "ok  " : "FAIL");
  const lines = [
    `Spar doctor (data: ${home})`,
    ...checks.map((c) => `  ${mark(c.ok)} ${c.name}: ${c.detail}`),
  ];
  lines.push("Providers:");
  // Only without a readable config (it names the default model) and a daemon to ask.
  if (providers.length === 0) lines.push("  none checked: config.toml does not load, and no daemon runs");
  for (const p of providers) {
    const key =
      p.key.names.length === 0
        ? "no key needed"
        : p.key.present
          ? `key ${p.key.present} set`
          : `key ${p.key.names.join(" or ")} missing`;
    const where = p.base_url ? ` at ${p.base_url}` : "";
    lines.push(
      `  ${mark(p.reachable)} ${p.provider} ${p.model}${where} (${p.used_by.join(", ")}): ${key}; ${p.detail}`,
    );
  }
  if (mcp.length > 0)
    lines.push("MCP servers:", ...mcp.map((m) => `  ${mark(m.ok)} ${m.server}: ${m.detail}`));
  lines.push("Gorillas:");
  if (gorillas.length === 0) lines.push(`  ${mark(true)} every GORILLA.toml loads`);
  for (const g of gorillas) lines.push(`  ${mark(false)} ${printable(g.error)}`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** `[approvals]`: off is a failure, as the sandbox's is (the security audit rates it too). */
function approvalsCheck(config: SparConfig): Check {
  const table = config.sections.approvals as { mode?: string; rules?: unknown[] } | undefined;
  if (config.plugins.disable.includes("policy-approvals")) {
    return {
      name: "approvals",
      ok: false,
      detail:
        "[plugins] disable names policy-approvals: every call a fighter's grants allow runs unasked, shell commands included; remove it from the list",
    };
  }
  if (table?.mode === "off") {
    return {
      name: "approvals",
      ok: false,
      detail:
        '[approvals] mode = "off": every call a fighter\'s grants allow runs unasked, shell commands included; remove the setting, and allow what should run unasked with [[approvals.rules]]',
    };
  }
  const rules = table?.rules?.length ?? 0;
  return {
    name: "approvals",
    ok: true,
    detail: `risky calls wait for an operator's answer (spar approvals list); ${rules} rule${rules === 1 ? "" : "s"} in config.toml`,
  };
}

/** How memory recall finds things: by words only, unless `[memory.embeddings]` names a model (not a failure). */
function recallCheck(config: SparConfig): Check {
  const embeddings = config.memory.embeddings;
  if (config.plugins.disable.includes("moves-memory")) {
    return { name: "memory", ok: true, detail: "moves-memory is disabled: fighters have no memory moves" };
  }
  return embeddings
    ? {
        name: "memory",
        ok: true,
        detail: `recall by words and by meaning (${embeddings.provider}/${embeddings.model}); the model is checked below`,
      }
    : {
        name: "memory",
        ok: true,
        detail:
          "recall by words only: memories and past conversations are not found by meaning until [memory.embeddings] names an embedding model (README: Recall)",
      };
}

/**
 * The config, checked as start would. A file that does not load is one FAIL line (its path, line and
 * column for a syntax error) and the other checks go on: those that need a config take the built-in
 * defaults, and the daemon is still reached at the `api_listen` the file names (client.ts).
 */
function readConfig(
  home: string,
  env: NodeJS.ProcessEnv,
  checks: Check[],
): { config: SparConfig; plugins: DiscoveredPlugin[]; valid: boolean } {
  try {
    const { config, plugins } = loadSparConfig(home, env);
    checks.push({ name: "config", ok: true, detail: `${join(home, "config.toml")} is valid` });
    return { config, plugins, valid: true };
  } catch (err) {
    if (!isSparError(err, "CONFIG_INVALID") && !isSparError(err, "PLUGIN_INVALID")) throw err;
    const detail = `${err.message}; the checks below that need the config use the built-in defaults`;
    checks.push({ name: "config", ok: false, detail });
    return { config: builtInConfig(), plugins: [], valid: false };
  }
}

/** The config of an empty config.toml: every default, no plugin tables. */
function builtInConfig(): SparConfig {
  const core = {};
  validatorWithDefaults(CONFIG_SCHEMA)(core);
  return { ...(core as Omit<SparConfig, "sections">), sections: {} };
}

/**
 * The providers, unless the plugin host cannot be built: a plugin.json that does not load (the
 * config line already says so) or a plugin the host refuses (a FAIL line here).
 */
async function providerChecks(
  home: string,
  config: SparConfig,
  models: { settings: ModelSettings; used_by: string }[],
  env: NodeJS.ProcessEnv,
  checks: Check[],
): Promise<Awaited<ReturnType<typeof checkProviders>>> {
  try {
    return await checkProviders(home, config, models, env);
  } catch (err) {
    if (!isSparError(err, "PLUGIN_INVALID")) throw err;
    if (!checks.some((c) => !c.ok && c.detail.includes(err.message)))
      checks.push({ name: "plugins", ok: false, detail: `${err.message} (PLUGIN_INVALID)` });
    return [];
  }
}

/**
 * GORILLA.toml files that do not load (the daemon skips them): as the running daemon reports them,
 * else read here against the moves the plugins' manifests declare.
 */
async function gorillaProblems(home: string, config: SparConfig): Promise<{ file: string; error: string }[]> {
  try {
    return (await api<{ problems: { file: string; error: string }[] }>("GET", "/api/v1/gorillas")).problems;
  } catch (err) {
    if (!isSparError(err, "DAEMON_UNREACHABLE")) return [];
  }
  const { loadGorillas } = await import("../../lib/gorillas/manifest.js");
  const { discoverPlugins, pluginRoots } = await import("../../kernel/host/plugin-manifest.js");
  const { KERNEL_VERSION, PACKAGE_ROOT } = await import("../../sdk/version.js");
  let plugins: DiscoveredPlugin[];
  try {
    plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  } catch (err) {
    // A plugin.json that does not load: the config FAIL line names it, and gorillas wait for the fix.
    if (isSparError(err, "PLUGIN_INVALID")) return [];
    throw err;
  }
  const moves = new Map(
    plugins.flatMap(({ manifest }) =>
      (manifest.contributes?.moves ?? []).map((m) => [m.name, m.capability] as const),
    ),
  );
  const timezone = config.sections.gorillas?.timezone;
  return loadGorillas(
    [
      { dir: join(PACKAGE_ROOT, "gorillas"), source: "bundled" },
      { dir: join(home, "gorillas"), source: "user" },
    ],
    { moves, ...(typeof timezone === "string" ? { timezone } : {}) },
  ).problems;
}

/**
 * The daemon and its database. A running daemon is asked (a signed call, then its health); a daemon
 * that is not running leaves the database to doctor, which opens it as start would and checks it.
 * Only DAEMON_UNREACHABLE means "not running": any other error is the daemon's, and a failure.
 */
async function daemonChecks(
  home: string,
  config: SparConfig,
  models: { settings: ModelSettings; used_by: string }[],
): Promise<Check[]> {
  const url = daemonUrl();
  let fighters: FighterRecord[];
  try {
    ({ fighters } = await api<{ fighters: FighterRecord[] }>("GET", "/api/v1/fighters"));
  } catch (err) {
    const message = (err as Error).message;
    if (isSparError(err, "DAEMON_UNREACHABLE")) {
      return [
        { name: "daemon", ok: true, detail: `not running (${message})` },
        await databaseCheck(home, config),
      ];
    }
    if (isSparError(err, "STORE_CORRUPT")) {
      return [
        { name: "daemon", ok: true, detail: `running at ${url}` },
        { name: "database", ok: false, detail: message },
      ];
    }
    const code = isSparError(err) ? ` (${err.code})` : "";
    return [{ name: "daemon", ok: false, detail: `running at ${url}, but it failed: ${message}${code}` }];
  }
  for (const f of fighters) models.push({ settings: f.model, used_by: `fighter ${f.name}` });
  return [
    { name: "daemon", ok: true, detail: `running at ${url}, ${fighters.length} fighter(s)` },
    await reportedHealth(home, url),
  ];
}

/** The daemon's own verdict on its store (its integrity check runs at start, calls may find more). */
async function reportedHealth(home: string, url: string): Promise<Check> {
  const response = await fetch(`${url}/api/v1/health`).catch(() => undefined);
  const body = (await response?.json().catch(() => undefined)) as { store?: string } | undefined;
  if (response?.ok) return { name: "database", ok: true, detail: "the daemon reports no damage" };
  if (body?.store !== "corrupt") {
    return { name: "database", ok: false, detail: `the daemon's health check answered ${response?.status}` };
  }
  const db = join(home, "spar.db");
  return {
    name: "database",
    ok: false,
    detail:
      `the daemon reports its database ${db} damaged. To recover: stop the daemon (spar stop); move ` +
      "spar.db aside, with spar.db-wal and spar.db-shm if they exist; restore spar.db and spar.db.salt from a " +
      "backup (the master key stays as it is). With the daemon stopped, spar doctor checks the file itself",
  };
}

/** With no daemon running, doctor opens the database itself and runs the store's integrity check. */
async function databaseCheck(home: string, config: SparConfig): Promise<Check> {
  const name = "database";
  const db = join(home, "spar.db");
  if (!existsSync(db) && !existsSync(`${db}-wal`)) {
    return { name, ok: true, detail: `none yet (${db} is created by spar start)` };
  }
  const { readPidFile } = await import("../daemon.js");
  const pid = readPidFile(home);
  if (pid) {
    return {
      name,
      ok: false,
      detail: `not checked: Spar (pid ${pid}) holds ${home} but does not answer at ${daemonUrl()}`,
    };
  }
  try {
    const { checkStoreOffline } = await import("./store-check.js");
    const check = await checkStoreOffline(home, config);
    if (check.status === "corrupt") return { name, ok: false, detail: check.detail ?? `${db} is damaged` };
    if (!check.checked)
      return { name, ok: false, detail: `${db} opens, but ${check.detail ?? "its check did not run"}` };
    return { name, ok: true, detail: `${db} opens and passes the quick integrity check` };
  } catch (err) {
    const code = isSparError(err) ? ` (${err.code})` : "";
    return { name, ok: false, detail: `${(err as Error).message}${code}` };
  }
}

function masterKeyCheck(home: string, env: NodeJS.ProcessEnv): Check {
  const facts = inspectMasterSecret(home, env);
  const weakness = facts && secretWeakness(facts.strength);
  if (facts && weakness) {
    return {
      name: "master key",
      ok: false,
      detail: `${facts.source} ${weakness}. Fix: ${weakSecretFix(home, facts)}`,
    };
  }
  if (env.SPAR_MASTER_KEY) return { name: "master key", ok: true, detail: "from SPAR_MASTER_KEY" };
  const path = join(home, MASTER_KEY_FILE);
  try {
    const mode = statSync(path).mode & 0o777;
    return mode & 0o077
      ? { name: "master key", ok: false, detail: `${path} is readable by others (run: chmod 600 ${path})` }
      : { name: "master key", ok: true, detail: `${path} is private` };
  } catch {
    return { name: "master key", ok: false, detail: missingMasterKeyAdvice(home) };
  }
}
