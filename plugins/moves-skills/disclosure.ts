/**
 * Progressive disclosure with files: what `skill_load` says about a skill's other files (their list,
 * how to read one, how to run a script), and which skill folders a fighter's sandboxed processes see
 * (`/skills/<name>`, read-only, only skills holding `scripts/`).
 */
import { realpathSync } from "node:fs";
import { join } from "node:path";
import type { Capability, SandboxMount } from "../../sdk/index.js";
import {
  hasScripts,
  READ_DEFAULT_CHARS,
  type Skill,
  type SkillFileEntry,
  skillFileList,
} from "../../sdk/kits/skills.js";

/** Where a skill's folder is inside the sandbox. */
export const SANDBOX_SKILLS = "/skills";

/** The interpreter a script is shown run with, by its extension (none: run it by its path). */
const RUNNERS: Record<string, string> = { py: "python3", sh: "bash", js: "node", mjs: "node", rb: "ruby" };

/** A skill's files for `skill_load`, and how to read and run them when it has any. */
export function filesNote(skill: Skill, grants: readonly Capability[]) {
  const files = skillFileList(skill.dir);
  const scripts = files.filter((f) => f.kind === "script");
  return {
    files,
    ...(files.length
      ? {
          read: `skill_read {"name": "${skill.name}", "path": "<a path above>"} reads a file in pages of ${READ_DEFAULT_CHARS} characters (limit: at most 32000); pass next_offset as offset until it is null. A binary file gives its size and media type, not its bytes.`,
        }
      : {}),
    ...(scripts.length ? { run: runNote(skill, scripts[0] as SkillFileEntry, grants) } : {}),
  };
}

function runNote(skill: Skill, script: SkillFileEntry, grants: readonly Capability[]): string {
  const shell = grants.some((g) => g.type === "shell_exec" || g.type === "full_access");
  if (!shell) {
    return "Its scripts run only through shell_exec, which you do not hold: follow the instructions without them.";
  }
  const path = `${SANDBOX_SKILLS}/${skill.name}/${script.path}`;
  const runner = RUNNERS[script.path.split(".").pop() ?? ""];
  const argv = JSON.stringify(runner ? [runner, path] : [path]);
  return `Run a script only with shell_exec, in the sandbox, where this skill's folder is ${SANDBOX_SKILLS}/${skill.name} (read-only): e.g. {"argv": ${argv}}. It runs in your workspace: write output there.`;
}

/**
 * The mounts for a fighter's sandboxed processes: each skill it may use (`usable`) that holds a
 * `scripts/` folder, by its real path. An installed skill's folder must really be
 * `<data dir>/skills/<name>` (a folder swapped for a link elsewhere is left out), never more.
 */
export function scriptMounts(usable: readonly Skill[], home: string): SandboxMount[] {
  const installed = realOrNone(join(home, "skills"));
  const mounts: SandboxMount[] = [];
  for (const skill of usable) {
    if (!hasScripts(skill.dir)) continue;
    const source = realOrNone(skill.dir);
    if (source === undefined) continue;
    if (skill.source === "installed" && source !== (installed && join(installed, skill.name))) continue;
    mounts.push({ source, target: `${SANDBOX_SKILLS}/${skill.name}` });
  }
  return mounts;
}

function realOrNone(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
