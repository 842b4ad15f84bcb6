import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { type Capability, type SkillListing, SparError } from "../../sdk/index.js";
import { PACKAGE_ROOT } from "../../sdk/version.js";
import { readLock } from "./lock.js";
import { rankIndex } from "./rank.js";
import { type ParsedSkill, parseSkill, SKILL_FILE, type SkillWarning } from "./skill.js";

/** One skill the daemon knows: its front matter, where it came from, and its files. */
export interface Skill extends SkillListing {
  /** The skill's folder. */
  dir: string;
  /** The skill pack that ships it (`skill-pack-bundled`), or `installed`. */
  pack: string;
  /** Resource files beside SKILL.md, relative to its folder. */
  resources: string[];
  /** An installed skill's source as its install recorded it (a URL, `local:<path>`, `upload`). */
  origin?: string;
  /** False when the skill does not list its capabilities: deriveCapabilities fills them from its moves. */
  capabilitiesDeclared: boolean;
  /** Written in Spar's layout before the standard (spar move doctor says how to convert it). */
  legacy: boolean;
  /** What parseSkill warned about: keys the standard does not have, tools with no Spar move. */
  warnings: SkillWarning[];
}

/** A folder of skills and who contributes it. */
export interface SkillRoot {
  dir: string;
  pack: string;
  source: SkillListing["source"];
  /** Only these names (the installed set's lock file lists them); all folders when absent. */
  only?: ReadonlySet<string>;
  /** Each name's source as its install recorded it (the lock file's `source`). */
  origins?: ReadonlyMap<string, string>;
}

/** A skill that did not load: its SKILL.md, and why (the skill is left out, the rest load). */
export interface LoadProblem {
  file: string;
  error: string;
}

/** A skill pack as the plugin list shows it. */
export interface SkillPack {
  id: string;
  source: "bundled" | "user";
  /** The plugin's folder. */
  dir: string;
  /** `contributes.skills`. */
  folders: readonly string[];
}

/**
 * Where skills are read from: every skill pack's folders (a bundled pack's relative to Spar's own
 * folder, a user's to its plugin folder, and never outside it), then the installed set, only the
 * names its lock file lists. `refused` gets each folder that would lead outside its pack.
 */
export async function skillRoots(
  home: string,
  packs: readonly SkillPack[],
  refused?: (pack: string, folder: string) => void,
): Promise<SkillRoot[]> {
  const roots: SkillRoot[] = [];
  for (const pack of packs) {
    const base = pack.source === "bundled" ? PACKAGE_ROOT : pack.dir;
    for (const folder of pack.folders) {
      const dir = resolve(base, folder);
      const inside = relative(base, dir);
      if (inside.startsWith("..") || isAbsolute(inside)) {
        refused?.(pack.id, folder);
        continue;
      }
      roots.push({ dir, pack: pack.id, source: "bundled" });
    }
  }
  const locked = Object.entries((await readLock(home)).skills);
  roots.push({
    dir: join(home, "skills"),
    pack: "installed",
    source: "installed",
    only: new Set(locked.map(([name]) => name)),
    origins: new Map(locked.map(([name, entry]) => [name, entry.source])),
  });
  return roots;
}

/** The most resource files listed per skill, and how deep they are looked for. */
const MAX_RESOURCES = 64;

/**
 * Reads every `<root>/<name>/SKILL.md`. A skill that does not parse is reported and left out; a name
 * that two roots share keeps the first root's skill (bundled before installed) and reports the other.
 */
export function loadSkills(roots: readonly SkillRoot[]): { skills: Skill[]; problems: LoadProblem[] } {
  const skills: Skill[] = [];
  const problems: LoadProblem[] = [];
  const seen = new Map<string, Skill>();
  for (const root of roots) {
    if (!existsSync(root.dir)) continue;
    for (const entry of readdirSync(root.dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
      if (root.only && !root.only.has(entry.name)) continue;
      const dir = join(root.dir, entry.name);
      const file = join(dir, SKILL_FILE);
      if (!existsSync(file)) continue;
      let parsed: ParsedSkill;
      try {
        parsed = parseSkill(readFileSync(file, "utf8"), file, entry.name);
      } catch (err) {
        problems.push({ file, error: (err as Error).message });
        continue;
      }
      const earlier = seen.get(parsed.meta.name);
      if (earlier) {
        problems.push({
          file,
          error: `the skill "${parsed.meta.name}" is already provided by ${earlier.pack}`,
        });
        continue;
      }
      const skill: Skill = {
        ...parsed.meta,
        capabilitiesDeclared: parsed.capabilitiesDeclared,
        legacy: parsed.legacy,
        warnings: parsed.warnings,
        source: root.source,
        dir,
        pack: root.pack,
        resources: resources(dir),
        ...(root.origins?.has(entry.name) ? { origin: root.origins.get(entry.name) } : {}),
      };
      seen.set(skill.name, skill);
      skills.push(skill);
    }
  }
  skills.sort((a, b) => a.name.localeCompare(b.name));
  return { skills, problems };
}

/** The regular files beside SKILL.md, up to two folders down, sorted. */
function resources(dir: string): string[] {
  const found: string[] = [];
  const walk = (folder: string, depth: number) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (found.length >= MAX_RESOURCES || entry.name.startsWith(".")) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory() && depth < 2) walk(path, depth + 1);
      else if (entry.isFile() && path !== join(dir, SKILL_FILE))
        found.push(relative(dir, path).split(sep).join("/"));
    }
  };
  walk(dir, 0);
  return found.sort();
}

/** The skill's body, or one of its resource files: only files listed beside it, never a path outside. */
export function readSkillFile(skill: Skill, file?: string): string {
  if (file === undefined || file === SKILL_FILE) {
    const path = join(skill.dir, SKILL_FILE);
    return parseSkill(readFileSync(path, "utf8"), path).body.trimStart();
  }
  const wanted = file.replace(/^\.\//, "");
  if (!skill.resources.includes(wanted)) {
    const listed = skill.resources.length
      ? `its files are: ${skill.resources.join(", ")}`
      : "it has no other files";
    throw new SparError("NOT_FOUND", `the skill "${skill.name}" has no file "${file}"; ${listed}`);
  }
  const path = resolve(skill.dir, wanted);
  const real = realpathSync(path);
  if (!real.startsWith(realpathSync(skill.dir) + sep) || !statSync(real).isFile()) {
    throw new SparError("FORBIDDEN", `"${file}" is not a file inside the skill "${skill.name}"`);
  }
  return readFileSync(real, "utf8");
}

/** What a fighter may use: a manifest's `skills` list restricts it to those names (all when empty). */
export function skillsFor(all: readonly Skill[], allowed: readonly string[]): Skill[] {
  if (allowed.length === 0) return [...all];
  const names = new Set(allowed);
  return all.filter((s) => names.has(s.name));
}

/**
 * The capability types `skill` needs that `grants` do not give (none under `full_access`), so a
 * skill says so instead of loading.
 */
export function missingCapabilities(skill: Skill, grants: readonly Capability[]): string[] {
  if (grants.some((g) => g.type === "full_access")) return [];
  const held = new Set(grants.map((g) => g.type));
  return skill.capabilities.filter((c) => !held.has(c));
}

/**
 * A skill that does not list its capabilities (one written for another agent) needs those of its
 * moves: `moves` maps a move's name to its capability type ("none" for moves that need no grant).
 */
export function deriveCapabilities(skills: Skill[], moves: ReadonlyMap<string, string>): void {
  for (const skill of skills) {
    if (skill.capabilitiesDeclared) continue;
    const types = skill.moves
      .map((m) => moves.get(m))
      .filter((c): c is string => c !== undefined && c !== "none");
    skill.capabilities = [...new Set(types)];
  }
}

/** The catalog's search: by name, tags and description. */
export function skillIndex(skills: readonly Skill[]) {
  return rankIndex(skills);
}

/** A skill as listings and search show it (no paths). */
export function listing(skill: Skill): SkillListing {
  const { name, description, version, category, tags, moves, capabilities, source } = skill;
  return { name, description, version, category, tags, moves, capabilities, source };
}
