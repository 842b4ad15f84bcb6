/**
 * A repository's archive, holding one skill or many: a `git archive` tarball (GitHub's codeload, any
 * git host's archive URL) or any .tar.gz. Every entry's path obeys files.ts's rules, wherever it is:
 * an archive with `../x` in it is hostile as a whole. The one top folder every entry shares
 * (`<repo>-<ref>/`, as git archive's --prefix writes it) is dropped; then a skill is a folder holding a
 * SKILL.md (`SKILL.md` at the root makes the whole archive one skill), the outermost one when they
 * nest. Only the skills asked for are read as skills, by the same rules and limits as one archive:
 * a symbolic link or device elsewhere in the repository (a README link, a test fixture) is none of
 * the skill's business and is left alone.
 */
import { gunzipSync } from "node:zlib";
import { SparError } from "../../sdk/errors.js";
import { archiveKind } from "./archive.js";
import { FileCollector, refuse, type SkillFiles, type SkillLimits, skillLimits, skillPath } from "./files.js";
import { SKILL_FILE } from "./skill.js";
import { addEntry, type TarEntry, walkTar } from "./tar.js";

/** One skill found in a repository: its folder there (`""` for the root) and its files. */
export interface RepoSkill {
  path: string;
  files: SkillFiles;
}

/** What a repository archive gave: the commit its global header names, if any, and the skills asked for. */
export interface RepoArchive {
  commit?: string;
  skills: RepoSkill[];
}

/** Which skills to take: those under `path` (a folder of the repository), and of those only `names`. */
export interface RepoSelect {
  path?: string;
  names?: readonly string[];
}

/** A commit id as git writes it (sha-1, or sha-256 for repositories using it). */
export const COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The skills of a .tar.gz (or plain tar) repository archive. `maxBytes` caps the unpacked tar
 * (total_too_large past it). NOT_FOUND when no skill is where `select` asks (naming what there is).
 *
 * @example
 * const { commit, skills } = readRepoArchive(tarball, { path: "skills" }, {}, 64 * 1024 * 1024);
 * skills.map((s) => s.path); // ["skills/review-code", "skills/write-tests"]
 */
export function readRepoArchive(
  data: Buffer,
  select: RepoSelect,
  limits: Partial<SkillLimits>,
  maxBytes: number,
): RepoArchive {
  const kind = archiveKind(data);
  if (kind !== "tar.gz" && kind !== "tar") {
    throw refuse("unsupported_archive", "a repository archive is read as a .tar.gz (or a tar)");
  }
  const tar = kind === "tar" ? data : gunzipTo(data, maxBytes);
  if (tar.length > maxBytes) {
    throw refuse("total_too_large", `the repository archive is larger than ${maxBytes} bytes`);
  }
  const entries: TarEntry[] = [];
  const { comment } = walkTar(tar, (entry) => {
    const name = skillPath(entry.name);
    // Old (V7) tars mark a folder only by the trailing slash, which skillPath drops.
    const v7Folder = isFile(entry) && entry.name.endsWith("/") && entry.body.length === 0;
    if (name !== "") entries.push({ ...entry, name, ...(v7Folder ? { type: "5" } : {}) });
  });
  const rooted = stripTop(entries);
  const found = skillFolders(rooted);
  const chosen = choose(found, rooted, select);
  const skills = chosen.map((path) => ({ path, files: skillOf(rooted, path, skillLimits(limits)) }));
  return { ...(comment !== undefined && COMMIT_ID.test(comment) ? { commit: comment } : {}), skills };
}

function gunzipTo(data: Buffer, cap: number): Buffer {
  try {
    return gunzipSync(data, { maxOutputLength: cap });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
      throw refuse("total_too_large", `the repository archive unpacks to more than ${cap} bytes`);
    }
    throw refuse("corrupt_archive", `the .tar.gz is not valid gzip (${(err as Error).message})`);
  }
}

/** The one top folder every entry sits in, dropped: `<repo>-<sha>/skills/x/SKILL.md` → `skills/x/SKILL.md`. */
function stripTop(entries: TarEntry[]): TarEntry[] {
  if (entries.some((e) => e.name === SKILL_FILE)) return entries;
  const tops = new Set(entries.map((e) => e.name.split("/")[0]));
  const [top] = tops;
  if (tops.size !== 1 || top === undefined) return entries;
  const nested = entries.filter((e) => e.name !== top);
  if (!nested.every((e) => e.name.startsWith(`${top}/`))) return entries;
  return nested.map((e) => ({ ...e, name: e.name.slice(top.length + 1) }));
}

const isFile = (e: TarEntry) => e.type === "0" || e.type === "\0" || e.type === "7";

/** Every folder holding a SKILL.md file, outermost first; one inside another skill belongs to it. */
function skillFolders(entries: TarEntry[]): string[] {
  const folders = entries
    .filter((e) => isFile(e) && (e.name === SKILL_FILE || e.name.endsWith(`/${SKILL_FILE}`)))
    .map((e) => e.name.slice(0, -SKILL_FILE.length).replace(/\/$/, ""))
    .sort();
  return folders.filter((f) => !folders.some((o) => o !== f && (o === "" || f.startsWith(`${o}/`))));
}

const baseName = (path: string) => path.split("/").at(-1) ?? "";

function choose(found: string[], entries: TarEntry[], select: RepoSelect): string[] {
  const path = select.path === undefined ? "" : skillPath(select.path);
  const under = found.filter((f) => path === "" || f === path || f.startsWith(`${path}/`));
  const where = path === "" ? "the repository" : `"${path}"`;
  if (found.length === 0 && path === "") {
    throw refuse("missing_skill_md", `no ${SKILL_FILE} anywhere in the archive: it holds no skill`);
  }
  if (under.length === 0) {
    const inside = found.find((f) => path.startsWith(`${f}/`));
    throw new SparError(
      "NOT_FOUND",
      inside !== undefined
        ? `"${path}" is inside the skill at "${inside}", not a skill of its own`
        : `no skill at ${where}: no folder there holds a ${SKILL_FILE}${listed(found)}`,
      { path },
    );
  }
  const names = select.names ?? [];
  if (names.length === 0) return under;
  const named = (f: string) => (f === "" ? rootName(entries) : baseName(f));
  const missing = names.filter((n) => !under.some((f) => named(f) === n));
  if (missing.length > 0) {
    throw new SparError(
      "NOT_FOUND",
      `no skill named ${missing.map((n) => `"${n}"`).join(", ")} in ${where}${listed(under)}`,
      { names: missing },
    );
  }
  return under.filter((f) => names.includes(named(f)));
}

/** `; it holds: a, b, …` (the first 20), for a NOT_FOUND that says what is there. */
function listed(found: string[]): string {
  if (found.length === 0) return "";
  const shownPaths = found.slice(0, 20).map((f) => (f === "" ? "(the root)" : f));
  return `; skills there: ${shownPaths.join(", ")}${found.length > 20 ? ", …" : ""}`;
}

/** A root SKILL.md's `name:` line, for --skill against a one-skill archive. */
function rootName(entries: TarEntry[]): string {
  const skill = entries.find((e) => e.name === SKILL_FILE);
  const match = skill ? /^name:\s*["']?([a-z0-9-]+)["']?\s*$/m.exec(skill.body.toString("utf8")) : null;
  return match?.[1] ?? "";
}

/** The files under `folder`, checked as one skill (links, devices, limits: archive.ts's table). */
function skillOf(entries: TarEntry[], folder: string, limits: SkillLimits): SkillFiles {
  const collector = new FileCollector(limits);
  const prefix = folder === "" ? "" : `${folder}/`;
  for (const entry of entries) {
    if (!entry.name.startsWith(prefix) || entry.name === folder) continue;
    addEntry(collector, { ...entry, name: entry.name.slice(prefix.length) });
  }
  return collector.finish(false);
}
