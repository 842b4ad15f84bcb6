/**
 * The gorilla format (DESIGN §11): `<name>/GORILLA.toml`, one folder per gorilla, bundled under
 * `gorillas/` and the user's under `<data dir>/gorillas/`. A bad file is refused with its path and the
 * dotted key at fault, so `spar doctor` can say exactly what to fix; the loader reports it and goes on.
 *
 * @example
 * const { gorillas, problems } = loadGorillas(
 *   [{ dir: join(PACKAGE_ROOT, "gorillas"), source: "bundled" }, { dir: join(home, "gorillas"), source: "user" }],
 *   { moves: new Map([["memory_store", "memory"]]), timezone: "Europe/Paris" },
 * );
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { ErrorObject, ValidateFunction } from "ajv";
import { parse as parseToml, TomlError } from "smol-toml";
import { SparError } from "../../sdk/errors.js";
import { findForbiddenKey, forbiddenKeyMessage } from "../../sdk/safe-keys.js";
import { formatSchemaErrors, validatorWithDefaults } from "../../sdk/schema.js";
import { BUDGET_SCHEMA, badBudgetKey, MODEL_SETTINGS_SCHEMA } from "../../sdk/schemas.js";
import { type BudgetLimits, type ModelSettings, OPEN_CAPABILITY } from "../../sdk/types.js";
import { isReservedVariable } from "../provider-keys.js";
import { parseSchedule, type Schedule } from "./schedule.js";

export const GORILLA_FILE = "GORILLA.toml";
/** The most a GORILLA.toml may hold. */
export const MAX_GORILLA_BYTES = 256 * 1024;
/** A gorilla's name: also its folder's, its id in the CLI and the API. */
export const GORILLA_NAME = /^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$/;

/** A cycle's budgets and policies (`[settings]`). */
export interface GorillaSettings {
  /** Model calls in one cycle at most. */
  max_iterations: number;
  /** A cycle still running after this many seconds ends `failed`. */
  timeout_s: number;
  /** Input plus output tokens over the whole cycle at most. */
  max_tokens: number;
  /** A fire while a cycle runs is recorded `skipped` (the only policy). */
  overlap: "skip";
  /** Fires missed while the daemon was down: none run (`skip`), or one cycle at start (`once`). */
  catch_up: "skip" | "once";
}

/** A GORILLA.toml as read and checked: what the gorilla does, when, and within what budgets. */
export interface GorillaManifest {
  name: string;
  /** For people; the name when the file gives none. */
  display_name: string;
  description: string;
  schedule: Schedule;
  /** The moves its fighter is restricted to. */
  moves: string[];
  /** The capability types those moves need, sorted (moves open to every fighter add none). */
  capabilities: string[];
  system_prompt: string;
  /** The prompt of every cycle. */
  task: string;
  settings: GorillaSettings;
  /**
   * Its spend per day and month across cycles (`[budget]`, README "Budgets"): a cycle that passes
   * it fails BUDGET_EXCEEDED, and the gorilla is caged until the period turns.
   */
  budget?: BudgetLimits;
  /** Model settings of its own; the default model's when absent. */
  model?: ModelSettings;
  /** The file it was read from, as given. */
  file: string;
}

/** A gorilla as the loader found it: where it came from too. */
export interface LoadedGorilla extends GorillaManifest {
  source: "bundled" | "user";
  /** Its folder. */
  dir: string;
}

/** What a GORILLA.toml is checked against: the moves there are, and the time zone of schedules. */
export interface GorillaOptions {
  /** Every known move → the capability type it needs (`none` for moves open to all). */
  moves: ReadonlyMap<string, string>;
  /** The time zone schedules are read in (`[gorillas] timezone`); the machine's by default. */
  timezone?: string;
}

export interface GorillaDir {
  dir: string;
  source: "bundled" | "user";
}

export interface GorillaProblem {
  file: string;
  error: string;
}

const text = (maxLength: number) =>
  ({ type: "string", minLength: 1, maxLength, pattern: "\\S", description: "text, not blank" }) as const;

export const GORILLA_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["name", "description", "schedule", "moves", "system_prompt", "task"],
  properties: {
    name: {
      type: "string",
      pattern: GORILLA_NAME.source,
      description: "1-48 lowercase letters, digits and -, starting and ending with a letter or digit",
    },
    display_name: text(64),
    description: text(1000),
    schedule: { type: "string", maxLength: 200 },
    moves: {
      type: "array",
      maxItems: 64,
      items: {
        type: "string",
        pattern: "^[a-z][a-z0-9_]{0,63}$",
        description: "a move's name (lowercase letters, digits and _)",
      },
    },
    system_prompt: text(100_000),
    task: text(100_000),
    settings: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        max_iterations: { type: "integer", minimum: 1, maximum: 1000, default: 15 },
        timeout_s: { type: "integer", minimum: 1, maximum: 86_400, default: 600 },
        max_tokens: { type: "integer", minimum: 1, maximum: 100_000_000, default: 200_000 },
        overlap: { enum: ["skip"], default: "skip" },
        catch_up: { enum: ["skip", "once"], default: "skip" },
      },
    },
    model: MODEL_SETTINGS_SCHEMA,
    budget: BUDGET_SCHEMA,
  },
} as const;

const invalid = (file: string, message: string, key?: string, extra: Record<string, string> = {}) =>
  new SparError("VALIDATION_FAILED", `${file}: ${message}`, { file, ...(key ? { key } : {}), ...extra });

/** One thing wrong with a file: the words, the dotted key at fault, and any more fields. */
interface Problem {
  message: string;
  key?: string;
  extra?: Record<string, string>;
}

/**
 * Reads a GORILLA.toml. `file` names it in errors; `folder`, when given, must equal the name. Every
 * move must be one of `options.moves`. Throws VALIDATION_FAILED with the file and the dotted key
 * (`settings.max_tokens`) in the message and in the error's `file` and `key` fields. Every problem
 * of the file is reported at once (`problems`, and each in the message), so fixing one does not
 * reveal the next only at the next start; a file that is no TOML at all has that one problem.
 */
export function parseGorilla(
  source: string,
  file: string,
  options: GorillaOptions & { folder?: string },
): GorillaManifest {
  if (Buffer.byteLength(source) > MAX_GORILLA_BYTES) {
    throw new SparError("PAYLOAD_TOO_LARGE", `${file} is larger than ${MAX_GORILLA_BYTES / 1024} KiB`, {
      file,
    });
  }
  const data = readToml(source.replace(/^\uFEFF/, ""), file);
  const forbidden = findForbiddenKey(data);
  if (forbidden) {
    throw new SparError("VALIDATION_FAILED", forbiddenKeyMessage(forbidden, file), {
      file,
      key: forbidden.path.split("/").filter(Boolean).join("."),
    });
  }
  const problems: Problem[] = [];
  const validate = validatorWithDefaults(GORILLA_SCHEMA);
  if (!validate(data)) problems.push(...schemaProblems(data, validate.errors));
  // The checks below read only keys the schema found sound, so each problem is said once.
  const sound = (key: string) => !problems.some((p) => p.key === key || p.key?.startsWith(`${key}.`));
  const raw = data as unknown as Raw;
  if (options.folder !== undefined && sound("name") && options.folder !== raw.name) {
    problems.push({
      message: `"name" is "${raw.name}" but the gorilla's folder is "${options.folder}": they must be equal`,
      key: "name",
    });
  }
  const keyEnv = sound("model") ? raw.model?.api_key_env : undefined;
  if (keyEnv && isReservedVariable(keyEnv)) {
    problems.push({
      message: `"model.api_key_env" = "${keyEnv}": SPAR_* variables are Spar's own secrets and are never sent as a provider key`,
      key: "model.api_key_env",
    });
  }
  let schedule: Schedule | undefined;
  if (sound("schedule")) {
    try {
      schedule = parseSchedule(raw.schedule, options.timezone);
    } catch (err) {
      const message = (err as Error).message.replace(/^schedule "/, '"schedule" = "');
      problems.push({
        message: message.startsWith('"schedule"') ? message : `"schedule": ${message}`,
        key: "schedule",
      });
    }
  }
  const badBudget =
    sound("budget") && raw.budget ? badBudgetKey(raw.budget as Record<string, unknown>) : undefined;
  if (badBudget) {
    problems.push({
      message: `"budget.${badBudget}" must be a finite number from 0`,
      key: `budget.${badBudget}`,
    });
  }
  const moves = sound("moves") ? [...new Set(raw.moves)] : [];
  const capabilities = new Set<string>();
  for (const move of moves) {
    const capability = options.moves.get(move);
    if (capability === undefined) {
      problems.push({
        message: `"moves" names "${move}", which no installed plugin provides; known moves: ${[...options.moves.keys()].sort().join(", ")}`,
        key: "moves",
        extra: { move },
      });
    } else if (capability !== OPEN_CAPABILITY) capabilities.add(capability);
  }
  const [first, ...more] = problems;
  if (first && more.length === 0) throw invalid(file, first.message, first.key, first.extra);
  if (first) {
    throw new SparError(
      "VALIDATION_FAILED",
      `${file}: ${problems.length} problems: ${problems.map((p, i) => `(${i + 1}) ${p.message}`).join("; ")}`,
      { file, ...(first.key ? { key: first.key } : {}), problems: problems.map((p) => p.message) },
    );
  }
  return {
    name: raw.name,
    display_name: raw.display_name?.trim() ?? raw.name,
    description: raw.description.trim(),
    schedule: schedule as Schedule,
    moves,
    capabilities: [...capabilities].sort(),
    system_prompt: raw.system_prompt.trim(),
    task: raw.task.trim(),
    settings: raw.settings,
    ...(raw.budget ? { budget: raw.budget } : {}),
    ...(raw.model ? { model: raw.model } : {}),
    file,
  };
}

/**
 * Every schema error of a file, not only the first the daemon's validator stops at: on this error
 * path only, the file is checked again by a validator that collects them all.
 */
function schemaProblems(data: unknown, firstErrors: ErrorObject[] | null | undefined): Problem[] {
  allErrors ??= new (createRequire(import.meta.url)("ajv") as typeof import("ajv")).Ajv({
    allErrors: true,
    strict: false,
    useDefaults: true,
    verbose: true,
    validateFormats: false,
  }).compile(GORILLA_SCHEMA);
  const errors = allErrors(structuredClone(data)) ? firstErrors : allErrors.errors;
  const seen = new Set<string>();
  const problems: Problem[] = [];
  for (const error of errors ?? []) {
    // anyOf/oneOf add a summary error beside their branches' own; the branches say more.
    if (error.keyword === "anyOf" || error.keyword === "oneOf") continue;
    const message = formatSchemaErrors([error], "");
    if (seen.has(message)) continue;
    seen.add(message);
    const key = keyOf(error);
    problems.push({ message, ...(key ? { key } : {}) });
  }
  return problems.length > 0
    ? problems
    : [{ message: formatSchemaErrors(firstErrors, ""), key: keyOf(firstErrors?.[0]) ?? "" }];
}

let allErrors: ValidateFunction | undefined;

/**
 * Reads every `<dir>/<name>/GORILLA.toml`, bundled folders first. A file that does not parse is
 * reported and left out; a name found twice keeps the first (a bundled gorilla wins over a user's)
 * and reports the other. Missing folders are skipped.
 */
export function loadGorillas(
  dirs: readonly GorillaDir[],
  options: GorillaOptions,
): { gorillas: LoadedGorilla[]; problems: GorillaProblem[] } {
  const gorillas: LoadedGorilla[] = [];
  const problems: GorillaProblem[] = [];
  const seen = new Map<string, LoadedGorilla>();
  const ordered = [
    ...dirs.filter((d) => d.source === "bundled"),
    ...dirs.filter((d) => d.source !== "bundled"),
  ];
  for (const root of ordered) {
    if (!existsSync(root.dir)) continue;
    const entries = readdirSync(root.dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith("."))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const dir = join(root.dir, entry.name);
      const file = join(dir, GORILLA_FILE);
      if (!existsSync(file)) continue;
      let manifest: GorillaManifest;
      try {
        manifest = parseGorilla(readFileSync(file, "utf8"), file, { ...options, folder: entry.name });
      } catch (err) {
        problems.push({ file, error: (err as Error).message });
        continue;
      }
      const earlier = seen.get(manifest.name);
      if (earlier) {
        problems.push({
          file,
          error: `${file}: the gorilla "${manifest.name}" is already provided by ${earlier.file} (${earlier.source}); this one is skipped`,
        });
        continue;
      }
      const loaded: LoadedGorilla = { ...manifest, source: root.source, dir };
      seen.set(loaded.name, loaded);
      gorillas.push(loaded);
    }
  }
  gorillas.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { gorillas, problems };
}

/** The file's keys after the schema has checked them and filled in the settings' defaults. */
interface Raw {
  name: string;
  display_name?: string;
  description: string;
  schedule: string;
  moves: string[];
  system_prompt: string;
  task: string;
  settings: GorillaSettings;
  budget?: BudgetLimits;
  model?: ModelSettings;
}

function readToml(source: string, file: string): Record<string, unknown> {
  try {
    return parseToml(source) as Record<string, unknown>;
  } catch (err) {
    const where = err instanceof TomlError ? ` at line ${err.line}, column ${err.column}` : "";
    const what = ((err as Error).message.split("\n")[0] ?? "").replace(/^Invalid TOML document:\s*/, "");
    throw invalid(file, `is not valid TOML${where}: ${what}`);
  }
}

/** The dotted key an ajv error is about: the unknown or missing key itself, else the value's path. */
function keyOf(error: ErrorObject | undefined): string | undefined {
  if (!error) return undefined;
  const path = error.instancePath.split("/").filter(Boolean);
  const params = error.params as { additionalProperty?: string; missingProperty?: string };
  const named = params.additionalProperty ?? params.missingProperty;
  if (named !== undefined) path.push(named);
  return path.length > 0 ? path.join(".") : undefined;
}
