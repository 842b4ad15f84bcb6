/**
 * The skill format (DESIGN §13): `<name>/SKILL.md`, YAML front matter between `---` lines, then
 * Markdown instructions. Shared by the daemon's skills plugin and the CLI, so both read a skill the
 * same way and refuse a bad one with the same words: the file and the key.
 */
import { createRequire } from "node:module";
import { SparError } from "../../sdk/errors.js";
import type { SkillListing } from "../../sdk/types.js";

// The YAML parser is 72 modules: loaded when the first skill is read, not when the daemon starts.
const require = createRequire(import.meta.url);
let yaml: typeof import("yaml") | undefined;

/** What a skill says about itself: its listing but for where it came from. */
export type SkillMeta = Omit<SkillListing, "source">;

/** A SKILL.md read: its front matter checked, and its Markdown body. */
export interface ParsedSkill {
  meta: SkillMeta;
  /** The Markdown after the front matter. */
  body: string;
  /** The line of SKILL.md the body starts on (1-based), for findings that point into the body. */
  bodyLine: number;
}

/** The file every skill folder holds. */
export const SKILL_FILE = "SKILL.md";
/** A skill's name: also its folder's. */
export const SKILL_NAME = /^[a-z0-9](?:[a-z0-9-]{1,46}[a-z0-9])$/;
const TAG = /^[a-z0-9][a-z0-9-]{0,39}$/;
const MOVE = /^[a-z][a-z0-9_]{0,63}$/;
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;
/** The most a SKILL.md may hold; resource files have their own cap (install.ts). */
export const MAX_SKILL_BYTES = 64 * 1024;

const REQUIRED = ["name", "description", "version", "category", "tags", "moves", "capabilities"] as const;
/** Agent Skills' optional keys, accepted and ignored, so a skill written for another host still loads. */
const TOLERATED = new Set(["license", "compatibility", "metadata", "allowed-tools"]);

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
  for (const key of REQUIRED) {
    if (!(key in record))
      throw invalid(
        file,
        "is missing (required: name, description, version, category, tags, moves, capabilities)",
        key,
      );
  }
  for (const key of Object.keys(record)) {
    if (!(REQUIRED as readonly string[]).includes(key) && !TOLERATED.has(key)) {
      throw invalid(file, `is not a skill key (allowed: ${REQUIRED.join(", ")})`, key);
    }
  }
  const text1 = (key: string, max: number): string => {
    const value = record[key];
    if (typeof value !== "string" || value.trim() === "")
      throw invalid(file, "must be a non-empty string", key);
    if (value.length > max) throw invalid(file, `must be at most ${max} characters`, key);
    if (/[\n\r]/.test(value.trim())) throw invalid(file, "must be one line", key);
    return value.trim();
  };
  const list = (key: string, pattern: RegExp, what: string, max: number): string[] => {
    const value = record[key];
    if (!Array.isArray(value)) throw invalid(file, `must be a list of ${what}`, key);
    if (value.length > max) throw invalid(file, `may hold at most ${max} entries`, key);
    for (const item of value) {
      if (typeof item !== "string" || !pattern.test(item)) {
        throw invalid(file, `has ${JSON.stringify(item)}, which is not ${what}`, key);
      }
    }
    return [...new Set(value as string[])];
  };
  const name = text1("name", 48);
  if (!SKILL_NAME.test(name)) {
    throw invalid(
      file,
      "must be 3-48 lowercase letters, digits and -, starting and ending with a letter or digit",
      "name",
    );
  }
  if (folder !== undefined && folder !== name) {
    throw invalid(file, `is "${name}" but the skill's folder is "${folder}": they must be equal`, "name");
  }
  const version = text1("version", 64);
  if (!SEMVER.test(version)) throw invalid(file, "must be a version like 1.0.0", "version");
  const category = text1("category", 48);
  if (!TAG.test(category)) throw invalid(file, "must be lowercase letters, digits and -", "category");
  return {
    meta: {
      name,
      description: text1("description", 300),
      version,
      category,
      tags: list("tags", TAG, "lowercase tags (letters, digits, -)", 16),
      moves: list("moves", MOVE, "move names (snake_case)", 32),
      capabilities: list("capabilities", MOVE, "capability types (snake_case)", 16),
    },
    body: source.slice(bodyStart),
    bodyLine: source.slice(0, bodyStart).split("\n").length,
  };
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
