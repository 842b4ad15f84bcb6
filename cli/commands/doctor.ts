import { statSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../kernel/config.js";
import { checkProviders, configuredModels } from "../../kernel/doctor.js";
import { loadDotEnv, MASTER_KEY_FILE, resolveHome } from "../../kernel/home.js";
import type { FighterRecord } from "../../kernel/types.js";
import { api, daemonUrl } from "../client.js";
import { type GlobalOptions, printJson } from "../output.js";

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * `spar doctor`: the config, the data dir, the daemon, and every configured provider (reachable or
 * not, key present or not: the variable's name, never the key). Exits 1 when something is wrong.
 */
export async function doctor(options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  loadDotEnv(home);
  const checks: Check[] = [];
  const config = loadConfig(home);
  checks.push({ name: "config", ok: true, detail: `${join(home, "config.toml")} is valid` });
  checks.push(masterKeyCheck(home));

  const models = configuredModels(config);
  try {
    const { fighters } = await api<{ fighters: FighterRecord[] }>("GET", "/api/v1/fighters");
    checks.push({
      name: "daemon",
      ok: true,
      detail: `running at ${daemonUrl()}, ${fighters.length} fighter(s)`,
    });
    for (const f of fighters) models.push({ settings: f.model, used_by: `fighter ${f.name}` });
  } catch (err) {
    checks.push({ name: "daemon", ok: true, detail: `not running (${(err as Error).message})` });
  }

  const providers = await checkProviders(home, config, models);
  const failed = checks.some((c) => !c.ok) || providers.some((p) => !p.reachable);
  if (failed) process.exitCode = 1;
  if (options.json) return printJson({ ok: !failed, checks, providers });

  const mark = (ok: boolean) => (ok ? "ok  " : "FAIL");
  const lines = [
    `Spar doctor (data: ${home})`,
    ...checks.map((c) => `  ${mark(c.ok)} ${c.name}: ${c.detail}`),
  ];
  lines.push("Providers:");
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
  process.stdout.write(`${lines.join("\n")}\n`);
}

function masterKeyCheck(home: string): Check {
  if (process.env.SPAR_MASTER_KEY) return { name: "master key", ok: true, detail: "from SPAR_MASTER_KEY" };
  const path = join(home, MASTER_KEY_FILE);
  try {
    const mode = statSync(path).mode & 0o777;
    return mode & 0o077
      ? { name: "master key", ok: false, detail: `${path} is readable by others (run: chmod 600 ${path})` }
      : { name: "master key", ok: true, detail: `${path} is private` };
  } catch {
    return { name: "master key", ok: false, detail: `${path} is missing (run: spar init)` };
  }
}
