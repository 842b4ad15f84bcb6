/**
 * The skill format: the Agent Skills specification (agentskills.io) as written, DESIGN §13.
 * `<name>/SKILL.md` holds YAML front matter between `---` lines, then Markdown instructions.
 *
 * The front matter keys are these.
 * - Required: `name` and `description`.
 * - Optional, from the standard: `license`, `compatibility`, `metadata` and `allowed-tools`.
 * - Spar's own fields live under `metadata`, as strings: `spar.moves`, `spar.capabilities`,
 *   `category`, `tags` and `version`. Each has a default when absent.
 *
 * A key no one here knows is a warning, not a refusal: other agents add their own.
 *
 * Skills written in Spar's old layout still load. That layout put `version`, `category`, `tags`,
 * `moves` and `capabilities` at the top level. Such a skill is marked `legacy`, and
 * `spar move doctor` says how to convert it.
 *
 * The daemon's skills plugin and the CLI both read skills through this file. So both read a skill
 * the same way, and refuse a bad one with the same words: the file and the key.
 */
import { createRequire } from "node:module";
import { SparError } from "../../sdk/errors.js";
import type { SkillListing } from "../../sdk/types.js";

// The YAML parser is 72 modules: loaded when the first skill is read, not when the daemon starts.
const require = createRequire(import.meta.url);
let yaml: typeof import("yaml") | undefined;

/** What a skill says about itself: its listing but for where it came from. */
export type SkillMeta = Omit<SkillListing, "source">;

/** Something in a SKILL.md that loads but deserves a word: an unknown key, the old layout. */
export interface SkillWarning {
  /** The front matter key it is about (`metadata.tags` for a metadata entry). */
  key: string;
  message: string;
}

/** A SKILL.md read: its front matter checked, and its Markdown body. */
export interface ParsedSkill {
  meta: SkillMeta;
  /** The Markdown after the front matter. */
  body: string;
  /** The line of SKILL.md the body starts on (1-based), for findings that point into the body. */
  bodyLine: number;
  /** Spar's old layout (its fields at the top level), read for skills installed before the standard. */
  legacy: boolean;
  /**
   * Whether the skill lists its capabilities (`spar.capabilities`). A skill written for another
   * agent does not: the catalog derives them from its moves, and the scanner does not hold the
   * omission against it.
   */
  capabilitiesDeclared: boolean;
  warnings: SkillWarning[];
}

/** The file every skill folder holds. */
export const SKILL_FILE = "SKILL.md";
/** A skill's name, and its folder's: 1-64 lowercase letters, digits and single hyphens inside. */
export const SKILL_NAME = /^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$/;
const TAG = /^[a-z0-9][a-z0-9-]{0,39}$/;
const MOVE = /^[a-z][a-z0-9_]{0,63}$/;
/** A version as authors write it: `1.0.0`, or the standard's own example `"1.0"`. */
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/;
/** The most a SKILL.md may hold; resource files have their own cap (files.ts). */
export const MAX_SKILL_BYTES = 64 * 1024;
/** The standard's limits. */
export const MAX_DESCRIPTION = 1024;
export const MAX_COMPATIBILITY = 500;

/** The standard's keys. */
const STANDARD = new Set(["name", "description", "license", "compatibility", "metadata", "allowed-tools"]);
/** Spar's old top-level keys, read from skills installed before the standard. */
const LEGACY = ["version", "category", "tags", "moves", "capabilities"] as const;
/** The keys only Spar's old layout had: a skill with one of them is read the old way. */
const LEGACY_MARKS = ["moves", "capabilities"] as const;
/** Defaults for a skill that does not say. */
export const DEFAULT_VERSION = "0.0.0";
export const DEFAULT_CATEGORY = "general";

/**
 * `allowed-tools` names other agents use, and the Spar move each corresponds to. A tool written as
 * `Bash(git:*)` maps by the name before the parenthesis; a snake_case name is taken as a move name.
 */
const TOOL_MOVES: Readonly<Record<string, string>> = Object.freeze({
  bash: "shell_exec",
  shell: "shell_exec",
  read: "file_read",
  grep: "file_read",
  glob: "file_list",
  ls: "file_list",
  write: "file_write",
  edit: "file_edit",
  multiedit: "file_edit",
  webfetch: "web_fetch",
  websearch: "web_search",
});

const invalid = (file: string, message: string, key?: string) =>
  new SparError("VALIDATION_FAILED", `${file}: ${key ? `"${key}" ` : ""}${message}`, {
    file,
    ...(key ? { key } : {}),
  });

/**
 * Reads a SKILL.md. `file` names it in errors (`skills/review-pull-request/SKILL.md`); `folder`,
 * when given, must equal the skill's name. Throws VALIDATION_FAILED naming the file and the key.
 */
export function parseSkill(text: string, file: string, folder?: string): ParsedSkill {
  if (Buffer.byteLength(text) > MAX_SKILL_BYTES) {
    throw new SparError("PAYLOAD_TOO_LARGE", `${file} is larger than ${MAX_SKILL_BYTES / 1024} KiB`, {
      file,
    });
  }
  const source = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  const open = /^---[ \t]*\n/.exec(source);
  const close = open ? /\n---[ \t]*(?:\n|$)/.exec(source.slice(open[0].length - 1)) : null;
  if (!open || !close) {
    throw invalid(file, "must start with YAML front matter between two --- lines");
  }
  const yamlText = source.slice(open[0].length, open[0].length - 1 + close.index);
  const bodyStart = open[0].length - 1 + close.index + close[0].length;
  let data: unknown;
  try {
    yaml ??= require("yaml") as typeof import("yaml");
    data = yaml.parse(yamlText, { prettyErrors: true, uniqueKeys: true, maxAliasCount: 0 });
  } catch (err) {
    throw invalid(file, `front matter is not valid YAML ${yamlWhere(err, yamlText)}`);
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw invalid(file, "front matter must be a YAML mapping of keys to values");
  }
  const record = data as Record<string, unknown>;
  const warnings: SkillWarning[] = [];
  for (const key of ["name", "description"]) {
    if (!(key in record)) throw invalid(file, "is missing (required: name, description)", key);
  }
  const legacy = LEGACY_MARKS.some((key) => key in record);
  for (const key of Object.keys(record)) {
    if (STANDARD.has(key) || (legacy && (LEGACY as readonly string[]).includes(key))) continue;
    warnings.push({
      key,
      message: `"${key}" is not an Agent Skills key; ignored (Spar's own fields go under metadata)`,
    });
  }
  if (legacy) {
    warnings.push({
      key: LEGACY.find((key) => key in record) as string,
      message:
        "uses Spar's old layout (version, category, tags, moves, capabilities at the top level); " +
        "move them under metadata (see spar move doctor)",
    });
  }

  const text1 = (value: unknown, key: string, max: number, oneLine = true): string => {
    if (typeof value !== "string" || value.trim() === "")
      throw invalid(file, "must be a non-empty string", key);
    if (value.trim().length > max) throw invalid(file, `must be at most ${max} characters`, key);
    if (oneLine && /[\n\r]/.test(value.trim())) throw invalid(file, "must be one line", key);
    return value.trim();
  };

  const name = text1(record.name, "name", 64);
  if (!SKILL_NAME.test(name)) {
    throw invalid(
      file,
      "must be 1-64 lowercase letters, digits and single hyphens, not starting or ending with a hyphen",
      "name",
    );
  }
  if (folder !== undefined && folder !== name) {
    throw invalid(file, `is "${name}" but the skill's folder is "${folder}": they must be equal`, "name");
  }
  // The standard allows a folded multi-line description; it is read as one paragraph.
  const description = text1(record.description, "description", MAX_DESCRIPTION, false).replace(/\s+/g, " ");
  // The standard sets no length for `license`; SKILL.md's own size bounds it.
  if ("license" in record) text1(record.license, "license", MAX_SKILL_BYTES, false);
  if ("compatibility" in record) text1(record.compatibility, "compatibility", MAX_COMPATIBILITY, false);

  const metadata = readMetadata(record.metadata, file);
  const fields = legacy ? legacyFields(record, file) : metadataFields(metadata, file);
  const allowed = allowedTools(record["allowed-tools"], file, warnings);
  const moves = [...new Set([...fields.moves, ...allowed])];

  if (!VERSION.test(fields.version))
    throw invalid(file, "must be a version like 1.0.0 (letters, digits, . + -)", fields.versionKey);
  if (!TAG.test(fields.category))
    throw invalid(file, "must be lowercase letters, digits and -", fields.categoryKey);
  return {
    meta: {
      name,
      description,
      version: fields.version,
      category: fields.category,
      tags: fields.tags,
      moves,
      capabilities: fields.capabilities,
    },
    body: source.slice(bodyStart),
    bodyLine: source.slice(0, bodyStart).split("\n").length,
    legacy,
    capabilitiesDeclared: legacy ? "capabilities" in record : "spar.capabilities" in metadata,
    warnings,
  };
}

interface SparFields {
  version: string;
  category: string;
  tags: string[];
  moves: string[];
  capabilities: string[];
  versionKey: string;
  categoryKey: string;
}

/** `metadata`: a map of string keys to string values (numbers and booleans are taken as written). */
function readMetadata(value: unknown, file: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw invalid(file, "must be a mapping of string keys to string values", "metadata");
  }
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v === "string") out[key] = v;
    else if (typeof v === "number" || typeof v === "boolean") out[key] = String(v);
    else throw invalid(file, "must be a string", `metadata.${key}`);
  }
  return out;
}

/** A metadata list: names separated by commas or spaces (`"a, b"`, `"a b"`). */
function words(
  value: string | undefined,
  pattern: RegExp,
  what: string,
  max: number,
  key: string,
  file: string,
) {
  if (value === undefined) return [];
  const items = value.split(/[\s,]+/).filter((s) => s !== "");
  if (items.length > max) throw invalid(file, `may hold at most ${max} entries`, key);
  for (const item of items) {
    if (!pattern.test(item)) throw invalid(file, `has ${JSON.stringify(item)}, which is not ${what}`, key);
  }
  return [...new Set(items)];
}

function metadataFields(metadata: Record<string, string>, file: string): SparFields {
  return {
    version: metadata.version?.trim() || DEFAULT_VERSION,
    category: metadata.category?.trim() || DEFAULT_CATEGORY,
    tags: words(metadata.tags, TAG, "a lowercase tag (letters, digits, -)", 16, "metadata.tags", file),
    moves: words(metadata["spar.moves"], MOVE, "a move name (snake_case)", 32, "metadata.spar.moves", file),
    capabilities: words(
      metadata["spar.capabilities"],
      MOVE,
      "a capability type (snake_case)",
      16,
      "metadata.spar.capabilities",
      file,
    ),
    versionKey: "metadata.version",
    categoryKey: "metadata.category",
  };
}

/** The old layout: the same fields at the top level, `version`/`category` strings and YAML lists. */
function legacyFields(record: Record<string, unknown>, file: string): SparFields {
  const list = (key: string, pattern: RegExp, what: string, max: number): string[] => {
    const value = record[key];
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw invalid(file, `must be a list of ${what}`, key);
    if (value.length > max) throw invalid(file, `may hold at most ${max} entries`, key);
    for (const item of value) {
      if (typeof item !== "string" || !pattern.test(item)) {
        throw invalid(file, `has ${JSON.stringify(item)}, which is not ${what}`, key);
      }
    }
    return [...new Set(value as string[])];
  };
  const str = (key: string, fallback: string) => {
    const value = record[key];
    if (value === undefined) return fallback;
    if (typeof value !== "string" || value.trim() === "")
      throw invalid(file, "must be a non-empty string", key);
    return value.trim();
  };
  return {
    version: str("version", DEFAULT_VERSION),
    category: str("category", DEFAULT_CATEGORY),
    tags: list("tags", TAG, "lowercase tags (letters, digits, -)", 16),
    moves: list("moves", MOVE, "move names (snake_case)", 32),
    capabilities: list("capabilities", MOVE, "capability types (snake_case)", 16),
    versionKey: "version",
    categoryKey: "category",
  };
}

/**
 * `allowed-tools` (experimental in the standard): a space-separated string or a list. Each entry
 * that corresponds to a Spar move adds it to the skill's moves; the others are warned about. It
 * grants nothing: a fighter still needs the grant for every move it calls.
 */
function allowedTools(value: unknown, file: string, warnings: SkillWarning[]): string[] {
  if (value === undefined || value === null) return [];
  let entries: string[];
  if (typeof value === "string") entries = value.split(/\s+/).filter((s) => s !== "");
  else if (Array.isArray(value) && value.every((v) => typeof v === "string")) entries = value as string[];
  else throw invalid(file, "must be a space-separated string or a list of tool names", "allowed-tools");
  const moves: string[] = [];
  const unknown: string[] = [];
  for (const entry of entries) {
    const tool = entry.replace(/\(.*$/s, "");
    const move = MOVE.test(tool) && tool.includes("_") ? tool : TOOL_MOVES[tool.toLowerCase()];
    if (move) moves.push(move);
    else unknown.push(entry);
  }
  if (unknown.length > 0) {
    warnings.push({
      key: "allowed-tools",
      message: `${unknown.slice(0, 5).join(", ")}${unknown.length > 5 ? ", …" : ""}: no Spar move corresponds; ignored`,
    });
  }
  return [...new Set(moves)];
}

/**
 * Spar's fields as the standard's `metadata` block, for a skill in the old layout to paste in place
 * of its top-level `version`, `category`, `tags`, `moves` and `capabilities`.
 */
export function metadataBlock(meta: SkillMeta): string {
  const lines = [
    "metadata:",
    `  version: ${meta.version}`,
    `  category: ${meta.category}`,
    ...(meta.tags.length > 0 ? [`  tags: ${meta.tags.join(", ")}`] : []),
    ...(meta.moves.length > 0 ? [`  spar.moves: ${meta.moves.join(" ")}`] : []),
    `  spar.capabilities: "${meta.capabilities.join(" ")}"`,
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * A YAML error said whole: where it is in the file (the front matter starts on line 2), what is
 * wrong, and the line itself. The parser's own message ends its first line with a colon before a
 * pointer drawing, which cut at the line break read as if the message had been cut short.
 */
function yamlWhere(err: unknown, yamlText: string): string {
  const error = err as Error & { linePos?: { line: number; col: number }[] };
  const what = (error.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "");
  const pos = error.linePos?.[0];
  if (!pos) return `: ${what}`;
  const line = (yamlText.split("\n")[pos.line - 1] ?? "").trim();
  return `at line ${pos.line + 1}, column ${pos.col}: ${what}${line ? ` (in: ${line})` : ""}`;
}
