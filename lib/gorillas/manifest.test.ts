import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/errors.js";
import { PACKAGE_ROOT } from "../../sdk/version.js";
import { GORILLA_FILE, loadGorillas, MAX_GORILLA_BYTES, parseGorilla } from "./manifest.js";
import { machineTimezone } from "./schedule.js";

/** Counts the Intl.DateTimeFormat instances made while `body` runs (ICU's date and time-zone data). */
function countDateTimeFormats(body: (made: () => number) => void): void {
  const original = Intl.DateTimeFormat;
  let made = 0;
  Intl.DateTimeFormat = new Proxy(original, {
    construct(target, args) {
      made++;
      return Reflect.construct(target, args);
    },
    apply(target, self, args) {
      made++;
      return Reflect.apply(target, self, args);
    },
  });
  try {
    body(() => made);
  } finally {
    Intl.DateTimeFormat = original;
  }
}

const MOVES = new Map([
  ["memory_store", "memory"],
  ["memory_recall", "memory"],
  ["web_fetch", "network"],
  ["web_search", "network"],
  ["file_write", "file_write"],
  ["skill_load", "none"],
]);
const FILE = "gorillas/alpha/GORILLA.toml";

const MINIMAL = `
name = "alpha"
description = "Researches things."
schedule = "every 6h"
moves = ["memory_store"]
system_prompt = "You research."
task = "Research one question."
`;

const FULL = `
name = "alpha"
display_name = "  Alpha  "
description = """
  Deep research, cross-referenced.
"""
schedule = "0 9 * * 1-5"
moves = ["web_search", "web_fetch", "memory_store", "web_fetch", "skill_load", "memory_recall"]
system_prompt = """
You are Alpha.
"""
task = '''
Run one cycle.
'''

[settings]
max_iterations = 40
timeout_s = 1800
max_tokens = 500000
overlap = "skip"
catch_up = "once"

[model]
provider = "openai_compatible"
model = "qwen2.5"
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "LOCAL_LLM_KEY"
max_tokens = 4096
temperature = 0.3
`;

/** MINIMAL with one line replaced (`key = …` lines are matched by key) or a section added. */
function withLine(line: string): string {
  const key = /^(\w+)\s*=/.exec(line)?.[1];
  if (key && new RegExp(`^${key}\\s*=`, "m").test(MINIMAL)) {
    return MINIMAL.replace(new RegExp(`^${key}\\s*=.*$`, "m"), line);
  }
  return `${MINIMAL}\n${line}\n`;
}

function without(key: string): string {
  return MINIMAL.replace(new RegExp(`^${key}\\s*=.*\\n`, "m"), "");
}

/** The VALIDATION_FAILED error parsing `text` throws. */
function refusal(text: string, options: { folder?: string; timezone?: string } = {}) {
  try {
    parseGorilla(text, FILE, { moves: MOVES, ...options });
  } catch (err) {
    expect(isSparError(err, "VALIDATION_FAILED"), String(err)).toBe(true);
    return err as Error & { extra: Record<string, unknown> };
  }
  throw new Error("expected a VALIDATION_FAILED error, got none");
}

/** Checks that the refusal names the file and the key, in the message and in the fields. */
function expectRefused(text: string, key: string | undefined, message: RegExp) {
  const err = refusal(text);
  expect(err.message.startsWith(`${FILE}: `), err.message).toBe(true);
  expect(err.message).toMatch(message);
  expect(err.extra.file).toBe(FILE);
  expect(err.extra.key).toBe(key);
  if (key) expect(err.message).toContain(`"${key}"`);
}

describe("parseGorilla", () => {
  it("reads a minimal file and fills in every default", () => {
    const gorilla = parseGorilla(MINIMAL, FILE, { moves: MOVES, timezone: "UTC" });
    expect(gorilla).toMatchObject({
      name: "alpha",
      display_name: "alpha",
      description: "Researches things.",
      moves: ["memory_store"],
      capabilities: ["memory"],
      system_prompt: "You research.",
      task: "Research one question.",
      settings: {
        max_iterations: 15,
        timeout_s: 600,
        max_tokens: 200_000,
        overlap: "skip",
        catch_up: "skip",
      },
      file: FILE,
    });
    expect(gorilla.model).toBeUndefined();
    expect(gorilla.schedule).toMatchObject({ text: "every 6h", kind: "interval", timezone: "UTC" });
    expect(gorilla.schedule.next(new Date("2025-01-01T01:00:00Z"))?.toISOString()).toBe(
      "2025-01-01T06:00:00.000Z",
    );
  });

  it("reads every key of a full file", () => {
    const gorilla = parseGorilla(FULL, FILE, { moves: MOVES, timezone: "America/New_York", folder: "alpha" });
    expect(gorilla.display_name).toBe("Alpha");
    expect(gorilla.description).toBe("Deep research, cross-referenced.");
    expect(gorilla.system_prompt).toBe("You are Alpha.");
    expect(gorilla.task).toBe("Run one cycle.");
    expect(gorilla.settings).toEqual({
      max_iterations: 40,
      timeout_s: 1800,
      max_tokens: 500_000,
      overlap: "skip",
      catch_up: "once",
    });
    expect(gorilla.model).toEqual({
      provider: "openai_compatible",
      model: "qwen2.5",
      base_url: "http://127.0.0.1:8080/v1",
      api_key_env: "LOCAL_LLM_KEY",
      max_tokens: 4096,
      temperature: 0.3,
    });
    expect(gorilla.schedule).toMatchObject({
      kind: "cron",
      cron: "0 9 * * 1-5",
      timezone: "America/New_York",
    });
    // Friday 2025-01-03 10:00 EST: next Monday 09:00 EST.
    expect(gorilla.schedule.next(new Date("2025-01-03T15:00:00Z"))?.toISOString()).toBe(
      "2025-01-06T14:00:00.000Z",
    );
  });

  it("keeps moves once each, in order, and needs the capabilities of the moves that need one", () => {
    const gorilla = parseGorilla(FULL, FILE, { moves: MOVES });
    expect(gorilla.moves).toEqual(["web_search", "web_fetch", "memory_store", "skill_load", "memory_recall"]);
    // skill_load is open to every fighter ("none"): no capability for it.
    expect(gorilla.capabilities).toEqual(["memory", "network"]);
    expect(parseGorilla(withLine("moves = []"), FILE, { moves: MOVES }).capabilities).toEqual([]);
  });

  it("reads the schedule in the machine's time zone by default", () => {
    expect(parseGorilla(MINIMAL, FILE, { moves: MOVES }).schedule.timezone).toBe(machineTimezone());
  });

  it("accepts a byte order mark and a name of one character", () => {
    const gorilla = parseGorilla(`\uFEFF${withLine('name = "x"')}`, FILE, { moves: MOVES, folder: "x" });
    expect(gorilla.name).toBe("x");
  });

  describe("refuses, naming the file and the key", () => {
    for (const key of ["name", "description", "schedule", "moves", "system_prompt", "task"]) {
      it(`a missing ${key}`, () =>
        expectRefused(without(key), key, new RegExp(`missing required key "${key}"`)));
    }

    const cases: [string, string, string, RegExp][] = [
      ["an unknown key", 'timezone = "UTC"', "timezone", /unknown key "timezone"/],
      ["an unknown settings key", "[settings]\nmax_iteration = 3", "settings.max_iteration", /unknown key/],
      [
        "an unknown model key",
        '[model]\nprovider = "ollama"\nmodel = "m"\ntemp = 1',
        "model.temp",
        /unknown key/,
      ],
      ["a model without its model", '[model]\nprovider = "ollama"', "model.model", /missing required key/],
      [
        "a model temperature out of range",
        '[model]\nprovider = "p"\nmodel = "m"\ntemperature = 3',
        "model.temperature",
        /must be <= 2/,
      ],
      [
        "a model base_url that is no URL",
        '[model]\nprovider = "p"\nmodel = "m"\nbase_url = "ftp://x"',
        "model.base_url",
        /http/,
      ],
      [
        "a model max_tokens of 0",
        '[model]\nprovider = "p"\nmodel = "m"\nmax_tokens = 0',
        "model.max_tokens",
        /must be >= 1/,
      ],
      ["a name that is not a string", "name = 7", "name", /must be string/],
      ["a name in capitals", 'name = "Alpha"', "name", /lowercase letters, digits and -/],
      ["a name that starts with -", 'name = "-alpha"', "name", /lowercase letters/],
      ["a name of 49 characters", `name = "${"a".repeat(49)}"`, "name", /1-48/],
      ["a blank display_name", 'display_name = "  "', "display_name", /text, not blank/],
      ["a blank task", 'task = """\n   \n"""', "task", /text, not blank/],
      [
        "an empty system_prompt",
        'system_prompt = ""',
        "system_prompt",
        /must NOT have fewer than 1 characters/,
      ],
      ["moves that are not a list", 'moves = "memory_store"', "moves", /must be array/],
      ["a move name that is not one", 'moves = ["Memory Store"]', "moves.0", /a move's name/],
      ["a schedule that is not a string", "schedule = 5", "schedule", /must be string/],
      ["max_iterations of 0", "[settings]\nmax_iterations = 0", "settings.max_iterations", /must be >= 1/],
      [
        "max_iterations as a string",
        '[settings]\nmax_iterations = "15"',
        "settings.max_iterations",
        /must be integer/,
      ],
      ["timeout_s of 0", "[settings]\ntimeout_s = 0", "settings.timeout_s", /must be >= 1/],
      ["a fractional max_tokens", "[settings]\nmax_tokens = 1.5", "settings.max_tokens", /must be integer/],
      [
        "an overlap other than skip",
        '[settings]\noverlap = "queue"',
        "settings.overlap",
        /must be one of: skip/,
      ],
      [
        "an unknown catch_up",
        '[settings]\ncatch_up = "all"',
        "settings.catch_up",
        /must be one of: skip, once/,
      ],
      ["settings that are not a table", 'settings = "fast"', "settings", /must be object/],
      ["a TOML date where text belongs", "description = 1979-05-27", "description", /must be string/],
    ];
    for (const [what, line, key, message] of cases) {
      it(what, () => expectRefused(withLine(line), key, message));
    }

    it("a bad schedule, saying what is wrong with it", () => {
      expectRefused(
        withLine('schedule = "every 7m"'),
        "schedule",
        /"schedule" = "every 7m" does not divide an hour/,
      );
      expectRefused(withLine('schedule = "61 * * * *"'), "schedule", /not a valid cron expression/);
    });

    it("a time zone that does not exist, under the schedule", () => {
      const err = refusal(MINIMAL, { timezone: "Mars/Olympus_Mons" });
      expect(err.message).toMatch(/"schedule": time zone "Mars\/Olympus_Mons" is not an IANA time zone/);
      expect(err.extra).toMatchObject({ file: FILE, key: "schedule" });
    });

    it("an unknown move, naming it and the known ones", () => {
      const err = refusal(withLine('moves = ["memory_store", "web_fetc"]'));
      expect(err.message).toContain(`${FILE}: "moves" names "web_fetc", which no installed plugin provides`);
      expect(err.message).toContain("known moves: file_write, memory_recall, memory_store");
      expect(err.extra).toMatchObject({ file: FILE, key: "moves", move: "web_fetc" });
    });

    it("a name that is not its folder's", () => {
      const err = refusal(MINIMAL, { folder: "beta" });
      expect(err.message).toBe(
        `${FILE}: "name" is "alpha" but the gorilla's folder is "beta": they must be equal`,
      );
      expect(err.extra).toMatchObject({ file: FILE, key: "name" });
    });

    it("a provider key taken from one of Spar's own variables", () => {
      expectRefused(
        withLine('[model]\nprovider = "openai"\nmodel = "m"\napi_key_env = "SPAR_MASTER_KEY"'),
        "model.api_key_env",
        /SPAR_\* variables are Spar's own secrets/,
      );
    });

    it("a key that reaches an object's prototype", () => {
      const err = refusal(withLine("[settings]\nconstructor = 1"));
      expect(err.message).toMatch(/^gorillas\/alpha\/GORILLA\.toml: the key "constructor"/);
      expect(err.extra).toMatchObject({ file: FILE, key: "settings.constructor" });
    });

    it("text that is not TOML, with the line", () => {
      const err = refusal(`${MINIMAL}\nmoves = [\n`);
      expect(err.message).toMatch(
        /^gorillas\/alpha\/GORILLA\.toml: is not valid TOML at line \d+, column \d+: /,
      );
      expect(err.extra.file).toBe(FILE);
    });

    it("a key given twice, as TOML does", () => {
      expect(refusal(`${MINIMAL}\nname = "beta"\n`).message).toMatch(/is not valid TOML/);
    });
  });

  it("refuses a file over the size limit as too large", () => {
    const big = withLine(`task = "${"x".repeat(MAX_GORILLA_BYTES)}"`);
    let caught: unknown;
    try {
      parseGorilla(big, FILE, { moves: MOVES });
    } catch (err) {
      caught = err;
    }
    expect(isSparError(caught, "PAYLOAD_TOO_LARGE")).toBe(true);
    expect((caught as Error).message).toContain(FILE);
  });
});

describe("loadGorillas", () => {
  let root: string;
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function write(dir: string, folder: string, text: string): string {
    mkdirSync(join(dir, folder), { recursive: true });
    const file = join(dir, folder, GORILLA_FILE);
    writeFileSync(file, text);
    return file;
  }
  const named = (name: string, extra = "") => `${withLine(`name = "${name}"`)}\n${extra}`;

  it("reads bundled and user folders, reports broken files and keeps the bundled one of a name", () => {
    root = mkdtempSync(join(tmpdir(), "spar-gorillas-"));
    const bundled = join(root, "bundled");
    const user = join(root, "user");
    write(bundled, "alpha", named("alpha"));
    write(bundled, "ghost", named("ghost"));
    const userAlpha = write(user, "alpha", named("alpha", 'display_name = "Mine"'));
    write(user, "mine", named("mine", '[settings]\ncatch_up = "once"'));
    const broken = write(user, "broken", named("broken", "[settings]\ntimeout = 5"));
    const misnamed = write(user, "other", named("elsewhere"));
    const unknownMove = write(
      user,
      "mover",
      withLine('name = "mover"').replace('["memory_store"]', '["teleport"]'),
    );
    mkdirSync(join(user, "empty"));
    write(user, ".hidden", named("hidden"));
    writeFileSync(join(user, "stray.toml"), "not a folder");

    // The user folder listed first still loses to the bundled one.
    const { gorillas, problems } = loadGorillas(
      [
        { dir: user, source: "user" },
        { dir: bundled, source: "bundled" },
        { dir: join(root, "missing"), source: "user" },
      ],
      { moves: MOVES, timezone: "UTC" },
    );

    expect(gorillas.map((g) => [g.name, g.source])).toEqual([
      ["alpha", "bundled"],
      ["ghost", "bundled"],
      ["mine", "user"],
    ]);
    const alpha = gorillas[0];
    expect(alpha?.display_name).toBe("alpha");
    expect(alpha?.dir).toBe(join(bundled, "alpha"));
    expect(alpha?.file).toBe(join(bundled, "alpha", GORILLA_FILE));
    expect(gorillas[2]?.settings.catch_up).toBe("once");
    expect(gorillas[2]?.schedule.timezone).toBe("UTC");

    const byFile = new Map(problems.map((p) => [p.file, p.error]));
    expect(problems).toHaveLength(4);
    expect(byFile.get(broken)).toBe(`${broken}: unknown key "settings.timeout"`);
    expect(byFile.get(misnamed)).toContain(`"name" is "elsewhere" but the gorilla's folder is "other"`);
    expect(byFile.get(unknownMove)).toContain(`"moves" names "teleport"`);
    expect(byFile.get(userAlpha)).toBe(
      `${userAlpha}: the gorilla "alpha" is already provided by ${join(bundled, "alpha", GORILLA_FILE)} (bundled); this one is skipped`,
    );
  });

  it("reads the bundled gorillas in the machine's zone without loading time-zone data", () => {
    // A start reads them all; while they stay caged, no Intl.DateTimeFormat (ICU's date and zone data).
    root = mkdtempSync(join(tmpdir(), "spar-gorillas-"));
    const moves = new Map(
      [
        "memory_store",
        "memory_recall",
        "web_fetch",
        "web_search",
        "file_write",
        "file_read",
        "skill_load",
      ].map((m) => [m, "none"]),
    );
    countDateTimeFormats((made) => {
      const bundled = join(PACKAGE_ROOT, "gorillas");
      const { gorillas } = loadGorillas([{ dir: bundled, source: "bundled" }], { moves });
      expect(gorillas.length).toBeGreaterThan(0);
      expect(made()).toBe(0);
      expect(gorillas[0]?.schedule.timezone).toBe(machineTimezone());
      expect(made()).toBeGreaterThan(0);
    });
  });

  it("returns nothing, and no problem, when no folder exists", () => {
    root = mkdtempSync(join(tmpdir(), "spar-gorillas-"));
    expect(loadGorillas([{ dir: join(root, "none"), source: "bundled" }], { moves: MOVES })).toEqual({
      gorillas: [],
      problems: [],
    });
  });
});
