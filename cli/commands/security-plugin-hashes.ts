import { createHash } from "node:crypto";
import { chmodSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { DiscoveredPlugin } from "../../kernel/host/plugin-manifest.js";
import type { UserPluginFact } from "./security-inventory.js";

/**
 * What the last `spar security audit` knew of the user plugins: `<data dir>/security-audit.json`
 * (mode 0600), `{"plugins": {"<id>": {"entry": "<path>", "sha256": "<hex>"}}}`. Each audit compares
 * the entry files with it, then writes what it saw, so "changed" means changed since the last audit.
 */
export const AUDIT_STATE_FILE = "security-audit.json";

interface AuditState {
  plugins: Record<string, { entry: string; sha256: string }>;
}

/** The user plugins (not the bundled ones), each entry file hashed and set beside the last audit's hash. */
export function userPluginFacts(home: string, plugins: DiscoveredPlugin[]): UserPluginFact[] {
  const last = readState(home).plugins;
  return plugins
    .filter((p) => p.source === "user")
    .map((p) => {
      const fact: UserPluginFact = { id: p.manifest.id, dir: p.dir };
      if (p.manifest.entry === undefined) return fact;
      fact.entry = resolve(p.dir, p.manifest.entry);
      try {
        fact.sha256 = createHash("sha256").update(readFileSync(fact.entry)).digest("hex");
      } catch (err) {
        fact.unreadable = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      }
      const known = Object.hasOwn(last, fact.id) ? last[fact.id] : undefined;
      if (known) fact.last_sha256 = known.sha256;
      return fact;
    });
}

/**
 * Records the hashes this audit saw, through a temporary file and a rename so a crash never leaves
 * half a file. A plugin whose entry could not be read keeps its last hash; a removed one is forgotten.
 */
export function recordPluginHashes(home: string, facts: UserPluginFact[]): void {
  const plugins: AuditState["plugins"] = {};
  for (const fact of facts) {
    const sha256 = fact.sha256 ?? fact.last_sha256;
    if (fact.entry !== undefined && sha256 !== undefined) plugins[fact.id] = { entry: fact.entry, sha256 };
  }
  const path = join(home, AUDIT_STATE_FILE);
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ plugins }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, path);
}

/** An absent or unreadable file is no history: every plugin is then new. */
function readState(home: string): AuditState {
  try {
    const parsed = JSON.parse(readFileSync(join(home, AUDIT_STATE_FILE), "utf8")) as Partial<AuditState>;
    const plugins = parsed.plugins;
    if (typeof plugins !== "object" || plugins === null || Array.isArray(plugins)) return { plugins: {} };
    const valid = Object.entries(plugins).filter(
      ([, v]) =>
        typeof v === "object" && v !== null && typeof (v as { sha256?: unknown }).sha256 === "string",
    );
    return { plugins: Object.fromEntries(valid) };
  } catch {
    return { plugins: {} };
  }
}
