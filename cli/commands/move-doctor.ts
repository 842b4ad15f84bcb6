import type { DiscoveredPlugin } from "../../kernel/host/plugin-manifest.js";
import { resolveHome, withDotEnv } from "../../lib/home.js";
import type { LoadProblem, Skill } from "../../lib/skills/catalog.js";
import { type GlobalOptions, printable, printJson } from "../output.js";

/** Every skill folder the daemon would read, read the same way, without asking the daemon. */
export async function localSkills(): Promise<{
  skills: Skill[];
  problems: LoadProblem[];
  home: string;
  plugins: DiscoveredPlugin[];
}> {
  const { loadConfig } = await import("../../kernel/host/config.js");
  const { discoverPlugins, pluginRoots } = await import("../../kernel/host/plugin-manifest.js");
  const { KERNEL_VERSION } = await import("../../sdk/version.js");
  const { loadSkills, skillRoots } = await import("../../lib/skills/catalog.js");
  const home = resolveHome();
  const config = loadConfig(home, withDotEnv(home));
  const plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  const packs = plugins
    .filter((p) => p.manifest.kind === "skill-pack")
    .map((p) => ({
      id: p.manifest.id,
      source: p.source,
      dir: p.dir,
      folders: p.manifest.contributes?.skills ?? [],
    }));
  return { ...loadSkills(await skillRoots(home, packs)), home, plugins };
}

/**
 * `spar move doctor`: the skills that do not load and why, the ones in Spar's layout before the
 * Agent Skills standard (with the `metadata` block to write instead), and keys or tools a skill
 * names that Spar ignores. Reads the folders itself, so it works with the daemon stopped. Exits 1
 * when a skill does not load.
 */
export async function moveDoctor(options: GlobalOptions): Promise<void> {
  const { metadataBlock } = await import("../../lib/skills/skill.js");
  const { skills, problems } = await localSkills();
  const notes = skills
    .filter((s) => s.legacy || s.warnings.length > 0)
    .map((s) => ({
      name: s.name,
      source: s.source,
      dir: s.dir,
      legacy: s.legacy,
      warnings: s.warnings,
      ...(s.legacy ? { metadata: metadataBlock(s) } : {}),
    }));
  if (options.json) {
    printJson({ skills: skills.length, not_loaded: problems, notes });
  } else {
    const out: string[] = [];
    for (const p of problems) out.push(`NOT LOADED  ${printable(p.file)}\n  ${printable(p.error)}`);
    for (const n of notes) {
      const lines = n.warnings.map((w) => `  ${printable(w.message)}`);
      if (n.legacy) {
        lines.push(
          "  To follow the Agent Skills standard, replace its top-level version, category, tags, moves",
          "  and capabilities in SKILL.md's front matter with:",
          ...(n.metadata ?? "")
            .trimEnd()
            .split("\n")
            .map((l) => `    ${printable(l)}`),
          n.source === "installed"
            ? "  then install it again from its source with --replace (an installed skill's files are locked)."
            : "  It still loads as it is.",
        );
      }
      out.push(
        `${n.source === "installed" ? "INSTALLED" : "BUNDLED"}   ${n.name} (${printable(n.dir)})\n${lines.join("\n")}`,
      );
    }
    const summary = `${skills.length} skills load; ${problems.length} do not; ${notes.filter((n) => n.legacy).length} use the old layout`;
    process.stdout.write(`${out.length > 0 ? `${out.join("\n\n")}\n\n` : ""}${summary}\n`);
  }
  if (problems.length > 0) process.exitCode = 1;
}
