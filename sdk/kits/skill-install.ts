/**
 * `spar/sdk/skill-install`: installing skills into `<data dir>/skills/`: fetching them from an https
 * URL or a `github:` source through the web guard or reading a local folder, scanning their files,
 * and installing or removing them so that the set and its lock file change all at once or not at all
 * (a change a crash cut is finished or undone by `recoverInstalled`); checking the installed files
 * against the lock. Apart from `spar/sdk/skills` because it loads the archive readers and the
 * scanner: import it when an install is asked for, not at start.
 *
 * @example
 * const { fetchSkillSource, scanSkill } = await import("spar/sdk/skill-install");
 */
export { type SkillFiles, type SkillLimits, skillDigest } from "../../lib/skills/files.js";
export {
  DEFAULT_GITHUB_ARCHIVE_URL,
  formatGithubSource,
  type GithubSource,
  githubArchiveUrl,
  isGithubSource,
  isPinnedRef,
  parseGithubSource,
} from "../../lib/skills/github.js";
export {
  fileHashes,
  type InstallEntry,
  type InstalledSkill,
  type InstallOptions,
  installSkill,
  installSkills,
  type LockEntry,
  type LockFinding,
  listInstalled,
  type RecoveryReport,
  readLock,
  recoverInstalled,
  removeSkill,
} from "../../lib/skills/installed.js";
export { COMMIT_ID, type RepoSelect, type RepoSkill } from "../../lib/skills/repo.js";
export { SCAN_RULES, type ScanOptions, scanSkill } from "../../lib/skills/scan.js";
export {
  type FetchedSkills,
  type FetchSkillOptions,
  fetchSkillSource,
  fetchSkills,
  readSkillFolder,
} from "../../lib/skills/source.js";
export { type VerifyReport, verifyInstalled, verifyOne } from "../../lib/skills/verify.js";
