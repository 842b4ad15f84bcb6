import { type EventBus, SparError } from "../../sdk/index.js";
import type { SkillFiles, VerifyReport } from "../../sdk/kits/skill-install.js";
import type { Finding } from "../../sdk/kits/skills.js";
import { parseSkill, SKILL_FILE } from "../../sdk/kits/skills.js";

/** A skill about to be installed: read, checked, scanned. */
export interface Candidate {
  name: string;
  version: string;
  /** Its folder inside the repository or archive ("" for the root). */
  path: string;
  files: SkillFiles;
  findings: Finding[];
  high: number;
}

/** Where a set of skills came from, as the lock records it. */
export interface Origin {
  source: string;
  ref?: string;
  resolved?: string;
}

/** A finding on one line: `SKILL.md:12 high pipe-to-shell: …`, prefixed by the skill when a set has several. */
export const findingLine = (f: Finding, skill?: string) =>
  `${skill ? `${skill}: ` : ""}${f.file}:${f.line} ${f.severity} ${f.rule}: ${f.message}`;

/**
 * Each skill read and scanned. A skill in a repository folder must be named as its folder (the
 * Agent Skills standard); a bundled skill's name is taken; `names`, when given, must all be found.
 */
export async function examine(
  skills: readonly { path: string; files: SkillFiles }[],
  scan: (files: SkillFiles) => Promise<Finding[]>,
  bundled: ReadonlySet<string>,
  names: readonly string[] = [],
): Promise<Candidate[]> {
  const out: Candidate[] = [];
  for (const { path, files } of skills) {
    const skillMd = files.get(SKILL_FILE);
    if (!skillMd) throw new SparError("VALIDATION_FAILED", `the skill has no ${SKILL_FILE} at its root`);
    const where = path === "" ? SKILL_FILE : `${path}/${SKILL_FILE}`;
    const folder = path === "" ? undefined : path.split("/").at(-1);
    const { meta } = parseSkill(skillMd.toString("utf8"), where);
    if (folder !== undefined && folder !== meta.name) {
      throw new SparError(
        "VALIDATION_FAILED",
        `the folder "${path}" holds a ${SKILL_FILE} naming the skill "${meta.name}": the Agent Skills standard wants the folder named as the skill`,
        { folder: path, name: meta.name },
      );
    }
    if (bundled.has(meta.name)) {
      throw new SparError("CONFLICT", `a bundled skill is named "${meta.name}": give yours another name`);
    }
    const findings = await scan(files);
    out.push({
      name: meta.name,
      version: meta.version,
      path,
      files,
      findings,
      high: findings.filter((f) => f.severity === "high").length,
    });
  }
  const missing = names.filter((n) => !out.some((c) => c.name === n));
  if (missing.length > 0) {
    throw new SparError(
      "NOT_FOUND",
      `no skill named ${missing.map((n) => `"${n}"`).join(", ")} at the source (it holds ${out.map((c) => c.name).join(", ")})`,
    );
  }
  return names.length > 0 ? out.filter((c) => names.includes(c.name)) : out;
}

/** A high finding in any skill of the set refuses the whole set, unless forced: nothing is half installed. */
export function refuseHigh(set: readonly Candidate[], force: boolean): void {
  const risky = set.filter((c) => c.high > 0);
  if (risky.length === 0 || force) return;
  const total = risky.reduce((n, c) => n + c.high, 0);
  const many = set.length > 1;
  throw new SparError(
    "FORBIDDEN",
    many
      ? `the scan found ${total} high-severity finding(s) in ${risky.map((c) => c.name).join(", ")}; none of the ${set.length} skills was installed (a set installs whole or not at all; spar move scan shows them; --force installs anyway and is recorded)`
      : `the scan found ${total} high-severity finding(s); nothing was installed (spar move scan shows them; --force installs anyway and is recorded)`,
    {
      findings: risky.flatMap((c) =>
        c.findings.filter((f) => f.severity === "high").map((f) => findingLine(f, many ? c.name : undefined)),
      ),
    },
  );
}

/**
 * The set installed as one change (installSkills), each skill's lock entry recording the origin
 * and its folder; a replaced skill whose files had changed on disk since its install is reported.
 */
export async function installSet(
  home: string,
  set: readonly Candidate[],
  origin: Origin | ((c: Candidate) => Origin),
  options: { replace: boolean; reserved: ReadonlySet<string> },
) {
  const kit = await import("../../sdk/kits/skill-install.js");
  const lock = await kit.readLock(home);
  const modified: VerifyReport[] = [];
  for (const c of set) {
    const entry = lock.skills[c.name];
    if (!entry || !options.replace) continue;
    const report = await kit.verifyOne(`${home}/skills/${c.name}`, c.name, entry);
    if (!report.ok) modified.push(report);
  }
  const installed = await kit.installSkills(
    home,
    set.map((c) => ({
      files: c.files,
      entry: {
        ...(typeof origin === "function" ? origin(c) : origin),
        ...(c.path === "" ? {} : { path: c.path }),
        forced: c.high > 0,
        findings: c.findings.filter((f) => f.severity !== "low"),
      },
    })),
    { replace: options.replace, reserved: options.reserved },
  );
  return { installed, modified };
}

/** What a replaced skill's changed files say, on one line. */
export function modifiedLine(report: VerifyReport): string {
  const parts = [
    report.changed.length ? `changed: ${report.changed.join(", ")}` : "",
    report.missing.length ? `missing: ${report.missing.join(", ")}` : "",
    report.extra.length ? `extra: ${report.extra.join(", ")}` : "",
  ].filter(Boolean);
  return `${report.name}'s files had changed on disk since its install (${parts.join("; ") || report.note}); they were replaced`;
}

/** `move.installed` for each skill a change installed, as the routes that install say it. */
export function announceInstalled(
  events: EventBus,
  installed: readonly { name: string; source: string; version: string; forced: boolean }[],
): void {
  for (const { name, source, version, forced } of installed) {
    events.publish({ kind: "move.installed", name, source, version, forced });
  }
}
