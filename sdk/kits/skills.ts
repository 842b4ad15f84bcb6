/**
 * `spar/sdk/skills`: skills (`<name>/SKILL.md`, DESIGN §13) as the daemon reads them: the folders
 * skill packs contribute and the installed set, each skill parsed and checked the same way the CLI
 * does, the bundled ones the user switched off, and a deterministic ranking for search. The skills
 * moves (moves-skills) are built on these alone.
 *
 * @example
 * import { loadSkills, skillRoots } from "spar/sdk/skills";
 * const { skills, problems } = loadSkills(await skillRoots(api.home, packs));
 */
export {
  deriveCapabilities,
  type LoadProblem,
  listing,
  loadSkills,
  missingCapabilities,
  readSkillFile,
  type Skill,
  type SkillPack,
  type SkillRoot,
  skillRoots,
  skillsFor,
} from "../../lib/skills/catalog.js";
export { bundledSwitch, disabledNames } from "../../lib/skills/disabled.js";
export { DEFAULT_LIMITS } from "../../lib/skills/files.js";
export { type Rankable, type Ranked, rankIndex } from "../../lib/skills/rank.js";
export type { Finding, Severity } from "../../lib/skills/scan.js";
export {
  MAX_SKILL_BYTES,
  type ParsedSkill,
  parseSkill,
  SKILL_FILE,
  SKILL_NAME,
  type SkillMeta,
} from "../../lib/skills/skill.js";
export {
  hasScripts,
  mediaType,
  READ_DEFAULT_CHARS,
  READ_MAX_CHARS,
  readSkillPage,
  SCRIPTS_FOLDER,
  type SkillFileEntry,
  type SkillFileKind,
  type SkillPage,
  skillFileList,
} from "../../lib/skills/skill-read.js";
