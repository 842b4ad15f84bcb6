import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Finding } from "../../lib/skills/scan.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import type { MoveDeclaration, SkillListing } from "../../sdk/types.js";
import { api } from "../client.js";
import { type GlobalOptions, printable, printJson, table } from "../output.js";

type MoveOptions = GlobalOptions & {
  force?: boolean;
  replace?: boolean;
  limit?: string;
  skill?: string;
  ref?: string;
  yes?: boolean;
};

/**
 * `spar move list|search|install|scan|info|verify|update|remove`: the tools fighters can be granted
 * and the skills they can load. `list` asks the running daemon (it also knows MCP servers' tools)
 * and reads the plugin manifests and skill folders itself when none runs; the others are the
 * daemon's work (move-lock.ts: info, verify, update).
 */
export async function move(action: string, args: string[], options: MoveOptions): Promise<void> {
  switch (action) {
    case "list":
      return list(options);
    case "search":
      return search(args.join(" "), options);
    case "install":
      return install(args[0] as string, options);
    case "scan":
      return scan(args[0] as string, options);
    case "remove":
      return remove(args[0] as string, options);
    case "info":
      return (await import("./move-lock.js")).info(args[0] as string, options);
    case "verify":
      return (await import("./move-lock.js")).verify(args[0], options);
    case "update":
      return (await import("./move-lock.js")).update(args[0], options);
    case "doctor":
      return (await import("./move-doctor.js")).moveDoctor(options);
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for move`);
  }
}

async function list(options: MoveOptions): Promise<void> {
  let listed: { moves: (MoveDeclaration & { plugin?: string })[]; skills: SkillListing[] };
  try {
    listed = await api("GET", "/api/v1/moves");
  } catch (err) {
    if (!isSparError(err, "DAEMON_UNREACHABLE")) throw err;
    listed = await offline();
  }
  const moves = listed.moves.map((m) => ({
    name: m.name,
    capability: m.capability,
    plugin: m.plugin ?? "",
    description: m.description,
  }));
  if (options.json) return printJson({ moves, skills: listed.skills });
  const rows = moves.map((m) => [m.name, m.capability, m.plugin, m.description]);
  process.stdout.write(`${table([["NAME", "CAPABILITY", "PLUGIN", "DESCRIPTION"], ...rows])}\n`);
  const installed = listed.skills.filter((s) => s.source === "installed").length;
  process.stdout.write(
    `\nSkills: ${listed.skills.length} (${listed.skills.length - installed} bundled, ${installed} installed)\n`,
  );
  const skillRows = listed.skills.map((s) => [
    s.name,
    s.category,
    s.source,
    s.capabilities.join(",") || "-",
    s.description,
  ]);
  process.stdout.write(
    `${table([["SKILL", "CATEGORY", "SOURCE", "CAPABILITIES", "DESCRIPTION"], ...skillRows])}\n`,
  );
}

/** Without a daemon: the moves plugin manifests declare, and the skills in their folders. */
async function offline(): Promise<{
  moves: (MoveDeclaration & { plugin: string })[];
  skills: SkillListing[];
}> {
  const { localSkills } = await import("./move-doctor.js");
  const { listing } = await import("../../lib/skills/catalog.js");
  const { disabledNames } = await import("../../lib/skills/disabled.js");
  const { plugins, skills, home } = await localSkills();
  const moves = plugins.flatMap(({ manifest }) =>
    (manifest.contributes?.moves ?? []).map((m) => ({ ...m, plugin: manifest.id })),
  );
  const off = disabledNames(home);
  return { moves, skills: skills.filter((s) => !(s.source === "bundled" && off.has(s.name))).map(listing) };
}

interface SearchResult {
  kind: "skill" | "move";
  name: string;
  description: string;
  score: number;
  category?: string;
  capability?: string;
  source?: string;
}

async function search(query: string, options: MoveOptions): Promise<void> {
  if (query.trim() === "")
    throw new SparError("VALIDATION_FAILED", "say what to search for: spar move search <query>");
  const limit = options.limit ?? "10";
  const { results } = await api<{ results: SearchResult[] }>(
    "GET",
    `/api/v1/moves/search?q=${encodeURIComponent(query)}&limit=${encodeURIComponent(limit)}`,
  );
  if (options.json) return printJson({ query, results });
  if (results.length === 0) {
    process.stdout.write(`nothing matches "${printable(query)}"; spar move list shows everything\n`);
    return;
  }
  const rows = results.map((r) => [
    r.name,
    r.kind === "skill" ? `skill (${r.source})` : "tool",
    r.kind === "skill" ? (r.category ?? "") : (r.capability ?? ""),
    r.description,
  ]);
  process.stdout.write(`${table([["NAME", "KIND", "CATEGORY/CAPABILITY", "DESCRIPTION"], ...rows])}\n`);
}

/**
 * What to send for a source: a URL or a name as it is; a folder's files, read here (the daemon never
 * reads a path a client names).
 */
async function sourceBody(
  source: string,
): Promise<
  { source: string } | { files: Record<string, string>; local: { path: string; kind: "folder" | "archive" } }
> {
  if (/^https?:\/\//i.test(source) || /^github:/i.test(source)) return { source };
  // A file:// URL is a path on this machine, read here like any other.
  const isFileUrl = /^file:\/\//i.test(source);
  const given = isFileUrl ? fileURLToPath(source) : source;
  const looksLikePath = isFileUrl || given.includes("/") || given.startsWith(".") || given.startsWith("~");
  const path = resolve(given.replace(/^~(?=\/|$)/, process.env.HOME ?? "~"));
  if (!looksLikePath && !existsSync(path)) return { source };
  if (!existsSync(path)) throw new SparError("NOT_FOUND", `no folder or archive at ${path}`);
  const encode = (files: Map<string, Buffer>) =>
    Object.fromEntries([...files].map(([name, data]) => [name, data.toString("base64")]));
  if (statSync(path).isDirectory()) {
    const { readSkillFolder } = await import("../../lib/skills/source.js");
    return { files: encode(await readSkillFolder(path)), local: { path, kind: "folder" } };
  }
  // A .tar.gz or .zip on this machine: unpacked here with the same checks a downloaded one gets.
  const { archiveKind, readArchive } = await import("../../lib/skills/archive.js");
  const data = readFileSync(path);
  if (!archiveKind(data)) {
    throw new SparError(
      "VALIDATION_FAILED",
      `${path} is neither a skill folder nor a .tar.gz or .zip archive`,
    );
  }
  return { files: encode(readArchive(data)), local: { path, kind: "archive" } };
}

export function printFindings(findings: readonly (Finding & { skill?: string })[]): void {
  for (const f of findings) {
    const file = f.skill ? `${f.skill}/${f.file}` : f.file;
    process.stdout.write(
      `${f.severity.toUpperCase().padEnd(6)} ${f.rule}  ${file}:${f.line}  ${printable(f.message)}\n`,
    );
    if (f.excerpt) process.stdout.write(`       ${printable(f.excerpt)}\n`);
  }
}

type InstalledLine = {
  name: string;
  version: string;
  source: string;
  forced?: boolean;
  path?: string;
  resolved?: string;
};

async function install(source: string, options: MoveOptions): Promise<void> {
  const skills = options.skill ? [...new Set(options.skill.split(","))] : undefined;
  const body = {
    ...(await sourceBody(source)),
    ...(skills ? { skills } : {}),
    ...(options.force ? { force: true } : {}),
    ...(options.replace ? { replace: true } : {}),
  };
  let result: {
    skill: InstalledLine;
    skills?: InstalledLine[];
    findings: (Finding & { skill?: string })[];
    enabled?: boolean;
    modified?: string[];
  };
  try {
    result = await api("POST", "/api/v1/moves/install", body);
  } catch (err) {
    if (!options.json && isSparError(err) && Array.isArray(err.extra.findings)) {
      for (const line of err.extra.findings) process.stdout.write(`${printable(String(line))}\n`);
    }
    throw err;
  }
  if (options.json) return printJson(result);
  const { skill } = result;
  if (skill.source === "bundled") {
    process.stdout.write(
      result.enabled
        ? `${skill.name} ${skill.version} (bundled) is enabled again\n`
        : `${skill.name} ${skill.version} is bundled and already enabled\n`,
    );
    return;
  }
  printFindings(result.findings);
  for (const line of result.modified ?? []) process.stdout.write(`note: ${printable(line)}\n`);
  for (const one of result.skills ?? [skill]) {
    const at = one.resolved && one.resolved !== one.source ? ` at ${printable(one.resolved)}` : "";
    const path = one.path ? ` (${printable(one.path)})` : "";
    process.stdout.write(
      `installed ${one.name} ${one.version} from ${printable(one.source)}${path}${at}${one.forced ? " (forced past high findings: recorded)" : ""}\n`,
    );
  }
}

async function scan(source: string, options: MoveOptions): Promise<void> {
  const result = await api<{ findings: Finding[]; high: number; medium: number; low: number }>(
    "POST",
    "/api/v1/moves/scan",
    await sourceBody(source),
  );
  if (result.high > 0) process.exitCode = 1;
  if (options.json) return printJson(result);
  printFindings(result.findings);
  process.stdout.write(
    result.findings.length === 0
      ? `${printable(source)}: no findings\n`
      : `${printable(source)}: ${result.high} high, ${result.medium} medium, ${result.low} low\n`,
  );
}

async function remove(name: string, options: MoveOptions): Promise<void> {
  const result = await api<{ removed: string; source: string }>(
    "DELETE",
    `/api/v1/moves/${encodeURIComponent(name)}`,
  );
  if (options.json) return printJson(result);
  process.stdout.write(
    result.source === "bundled"
      ? `${name} (bundled) is disabled; spar move install ${name} enables it again\n`
      : `removed ${name}\n`,
  );
}
