/**
 * `spar/sdk/skill-install`: installing skills into `<data dir>/skills/`: fetching one from an https
 * URL through the web guard or reading a local folder, scanning its files, and installing or
 * removing it so that the set and its lock file change all at once or not at all (a change a crash
 * cut is finished or undone by `recoverInstalled`). Apart from `spar/sdk/skills` because it loads
 * the archive readers and the scanner: import it when an install is asked for, not at start.
 *
 * @example
 * const { fetchSkillSource, scanSkill } = await import("spar/sdk/skill-install");
 */
export type { SkillFiles, SkillLimits } from "../../lib/skills/files.js";
export {
  type InstallEntry,
  type InstalledSkill,
  type InstallOptions,
  installSkill,
  type RecoveryReport,
  recoverInstalled,
  removeSkill,
} from "../../lib/skills/installed.js";
export { SCAN_RULES, type ScanOptions, scanSkill } from "../../lib/skills/scan.js";
export { type FetchSkillOptions, fetchSkillSource, readSkillFolder } from "../../lib/skills/source.js";
