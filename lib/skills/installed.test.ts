/**
 * The installed set on a real disk: install, replace, remove, the lock file's bytes, refusals that
 * leave everything as it was, and a crash cut at every durable step of every change, then
 * recoverInstalled: the set and the lock must be byte for byte as before the change or as after it.
 */

import { createHash } from "node:crypto";
import {
  cpSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { refusal, skillMd, tempDir } from "../../test/helpers/archives.js";
import { DEFAULT_LIMITS, type SkillFiles, skillDigest } from "./files.js";
import {
  type InstallOptions,
  installSkill,
  LOCK_FILE,
  listInstalled,
  readLock,
  recoverInstalled,
  removeSkill,
  type SkillStep,
} from "./installed.js";

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const NOW = () => new Date("2030-01-02T03:04:05.000Z");

function skillFiles(name: string, extra: Record<string, string> = {}, version = "1.0.0"): SkillFiles {
  const files: SkillFiles = new Map([["SKILL.md", Buffer.from(skillMd(name, `# ${name}\n`, version))]]);
  for (const [path, content] of Object.entries(extra)) files.set(path, Buffer.from(content));
  return files;
}

const entry = (source = "https://example.org/skill.tgz") => ({ source, forced: false, findings: [] });

/** Every entry under `<home>/skills`, folders as "/" and files as their bytes (base64). */
function snapshot(home: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const rel = `${prefix}${name}`;
      if (lstatSync(path).isDirectory()) {
        out[`${rel}/`] = "/";
        walk(path, `${rel}/`);
      } else out[rel] = readFileSync(path).toString("base64");
    }
  };
  walk(join(home, "skills"), "");
  return out;
}

const lockBytes = (home: string) => readFileSync(join(home, "skills", LOCK_FILE), "utf8");
const crashAt =
  (step: SkillStep): InstallOptions["onStep"] =>
  (s) => {
    if (s === step) throw new Error(`crash at ${s}`);
  };

let temp: ReturnType<typeof tempDir>;
let home: string;

/** A home with two skills installed, and another one's disabled.json beside them. */
async function seeded(dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  await installSkill(dir, skillFiles("alpha-skill", { "refs/guide.md": "alpha guide" }), entry(), {
    now: NOW,
  });
  await installSkill(dir, skillFiles("beta-skill"), entry("/home/me/beta-skill"), { now: NOW });
  writeFileSync(join(dir, "skills", "disabled.json"), '{"disabled":[]}\n');
  return dir;
}

beforeEach(async () => {
  temp = tempDir("spar-installed-");
  home = await seeded(join(temp.dir, "home"));
});
afterEach(() => temp.remove());

describe("installing", () => {
  it("puts the files in skills/<name>/ and the entry in the lock file, in a fixed form", async () => {
    const files = skillFiles("gamma-skill", { "refs/a.md": "A", "scripts/run.txt": "R" });
    const skill = await installSkill(
      home,
      files,
      {
        source: "https://example.org/gamma.zip",
        forced: true,
        findings: [
          { rule: "pipe-to-shell", severity: "high", file: "SKILL.md", line: 12, message: "curl | sh" },
          { rule: "undeclared-move", severity: "medium", file: "SKILL.md", line: 3, message: "uses shell" },
          { rule: "long-line", severity: "low", file: "refs/a.md", line: 1, message: "style" },
        ],
      },
      { now: NOW },
    );
    expect(skill).toEqual({
      name: "gamma-skill",
      dir: join(home, "skills", "gamma-skill"),
      source: "https://example.org/gamma.zip",
      version: "1.0.0",
      sha256: skillDigest(files),
      files: {
        "SKILL.md": sha256(files.get("SKILL.md") as Buffer),
        "refs/a.md": sha256(Buffer.from("A")),
        "scripts/run.txt": sha256(Buffer.from("R")),
      },
      installed_at: "2030-01-02T03:04:05.000Z",
      forced: true,
      findings: [
        { rule: "pipe-to-shell", severity: "high", file: "SKILL.md", line: 12, message: "curl | sh" },
        { rule: "undeclared-move", severity: "medium", file: "SKILL.md", line: 3, message: "uses shell" },
      ],
    });
    const dir = join(home, "skills", "gamma-skill");
    expect(readFileSync(join(dir, "scripts", "run.txt"), "utf8")).toBe("R");
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "SKILL.md")).mode & 0o777).toBe(0o600);
    const lock = JSON.parse(lockBytes(home));
    expect(Object.keys(lock)).toEqual(["version", "skills"]);
    expect(Object.keys(lock.skills)).toEqual(["alpha-skill", "beta-skill", "gamma-skill"]);
    expect(lock.skills["gamma-skill"]).toEqual({ ...skill, name: undefined, dir: undefined });
    expect(lockBytes(home).endsWith("}\n")).toBe(true);
    expect((await listInstalled(home)).map((s) => s.name)).toEqual([
      "alpha-skill",
      "beta-skill",
      "gamma-skill",
    ]);
    expect(await recoverInstalled(home)).toEqual({ removed: [], restored: [], missing: [], modified: [] });
  });

  it("refuses a name installed already unless replace, and a reserved (bundled) name", async () => {
    const before = snapshot(home);
    const again = await refusal(() => installSkill(home, skillFiles("alpha-skill", {}, "2.0.0"), entry()));
    expect(again).toMatchObject({ code: "CONFLICT", extra: { name: "alpha-skill" } });
    expect(again.message).toMatch(
      /installed already \(version 1\.0\.0 from https:\/\/example\.org\/skill\.tgz\)/,
    );
    const bundled = await refusal(() =>
      installSkill(home, skillFiles("delta-skill"), entry(), { reserved: new Set(["delta-skill"]) }),
    );
    expect(bundled).toMatchObject({ code: "CONFLICT" });
    expect(snapshot(home)).toEqual(before);

    const replaced = await installSkill(
      home,
      skillFiles("alpha-skill", { "new.md": "N" }, "2.0.0"),
      entry(),
      {
        replace: true,
        now: NOW,
      },
    );
    expect(replaced.version).toBe("2.0.0");
    expect(readdirSync(join(home, "skills", "alpha-skill")).sort()).toEqual(["SKILL.md", "new.md"]);
    expect((await readLock(home)).skills["alpha-skill"]?.version).toBe("2.0.0");
    expect(readdirSync(join(home, "skills")).filter((n) => n.startsWith("."))).toEqual([]);
  });

  it("refuses bad input with a stable code and leaves the set and lock byte for byte", async () => {
    const before = snapshot(home);
    const notYaml = new Map([["SKILL.md", Buffer.from("---\nname: [unclosed\n---\nbody")]]);
    const missingKey = new Map([["SKILL.md", Buffer.from("---\nname: x-skill\n---\nbody")]]);
    const latin1 = new Map([["SKILL.md", Buffer.from([0x2d, 0x2d, 0x2d, 0x0a, 0xe9, 0x0a])]]);
    const cases: [SkillFiles, string, string?][] = [
      [notYaml, "VALIDATION_FAILED"],
      [missingKey, "VALIDATION_FAILED"],
      [latin1, "VALIDATION_FAILED"],
      [new Map([["README.md", Buffer.from("x")]]), "VALIDATION_FAILED", "missing_skill_md"],
      [skillFiles("gamma-skill", { "../escape.md": "x" }), "FORBIDDEN", "path_traversal"],
      [skillFiles("gamma-skill", { "/etc/x": "x" }), "FORBIDDEN", "absolute_path"],
      [skillFiles("gamma-skill", { "./odd.md": "x" }), "VALIDATION_FAILED", "bad_name"],
      [
        skillFiles("gamma-skill", { "big.bin": "x".repeat(DEFAULT_LIMITS.maxFileBytes + 1) }),
        "PAYLOAD_TOO_LARGE",
        "file_too_large",
      ],
    ];
    for (const [files, code, reason] of cases) {
      const error = await refusal(() => installSkill(home, files, entry()));
      expect(error.code, [...files.keys()].join()).toBe(code);
      if (reason) expect(error.reason).toBe(reason);
    }
    expect(snapshot(home)).toEqual(before);
  });

  it("serializes concurrent installs: every one ends up in the lock", async () => {
    const names = ["one-skill", "two-skill", "three-skill", "four-skill"];
    await Promise.all(names.map((n) => installSkill(home, skillFiles(n), entry(), { now: NOW })));
    expect(Object.keys((await readLock(home)).skills).sort()).toEqual(
      ["alpha-skill", "beta-skill", ...names].sort(),
    );
  });
});

describe("removing", () => {
  it("removes the folder and the entry; NOT_FOUND when absent; VALIDATION_FAILED for no name", async () => {
    const removed = await removeSkill(home, "beta-skill");
    expect(removed).toMatchObject({ name: "beta-skill", source: "/home/me/beta-skill" });
    expect(readdirSync(join(home, "skills")).sort()).toEqual(["alpha-skill", "disabled.json", LOCK_FILE]);
    expect(Object.keys((await readLock(home)).skills)).toEqual(["alpha-skill"]);
    const before = snapshot(home);
    expect(await refusal(() => removeSkill(home, "beta-skill"))).toMatchObject({ code: "NOT_FOUND" });
    expect(await refusal(() => removeSkill(home, "../alpha-skill"))).toMatchObject({
      code: "VALIDATION_FAILED",
    });
    expect(snapshot(home)).toEqual(before);
  });
});

describe("a crash at every step", () => {
  interface Change {
    name: string;
    steps: SkillStep[];
    committedFrom: SkillStep;
    /** Cut after these steps, recovery must put the old folder back from its staged copy. */
    restoredAfter: SkillStep[];
    run: (h: string, o: InstallOptions) => Promise<unknown>;
  }
  const changes: Change[] = [
    {
      name: "a fresh install",
      steps: ["staged", "moved", "lock-staged", "committed"],
      committedFrom: "committed",
      restoredAfter: [],
      run: (h, o) =>
        installSkill(h, skillFiles("gamma-skill", { "refs/x.md": "x" }), entry(), { ...o, now: NOW }),
    },
    {
      name: "a replace",
      steps: ["staged", "set-aside", "moved", "lock-staged", "committed"],
      committedFrom: "committed",
      restoredAfter: ["set-aside", "moved", "lock-staged"],
      run: (h, o) =>
        installSkill(h, skillFiles("alpha-skill", { "other.md": "o" }, "2.0.0"), entry(), {
          ...o,
          replace: true,
          now: NOW,
        }),
    },
    {
      name: "a removal",
      steps: ["lock-staged", "committed", "moved"],
      committedFrom: "committed",
      restoredAfter: [],
      run: (h, o) => removeSkill(h, "alpha-skill", o),
    },
  ];

  for (const change of changes) {
    for (const step of change.steps) {
      it(`${change.name}, cut after "${step}", recovers to exactly before or after`, async () => {
        const before = snapshot(home);
        const lockBefore = lockBytes(home);
        // The same change, uncut, on a copy: what "after" looks like.
        const reference = join(temp.dir, "reference");
        cpSync(home, reference, { recursive: true });
        await change.run(reference, {});
        const after = snapshot(reference);
        expect(after).not.toEqual(before);

        await expect(change.run(home, { onStep: crashAt(step) })).rejects.toThrow(`crash at ${step}`);
        // The lock is never half written: it is the old one or the new one.
        expect([lockBefore, lockBytes(reference)]).toContain(lockBytes(home));
        const committed = change.steps.indexOf(step) >= change.steps.indexOf(change.committedFrom);
        const report = await recoverInstalled(home);
        expect(snapshot(home)).toEqual(committed ? after : before);
        expect(report.missing).toEqual([]);
        expect(report.modified).toEqual([]);
        expect(report.restored).toEqual(change.restoredAfter.includes(step) ? ["alpha-skill"] : []);
        // Recovery twice changes nothing more.
        expect(await recoverInstalled(home)).toEqual({
          removed: [],
          restored: [],
          missing: [],
          modified: [],
        });
      });
    }
  }

  it("puts the old folder back when a replace fails on the way (not a crash): STORE_FAILED", async () => {
    const before = snapshot(home);
    const sabotage = (s: SkillStep) => {
      if (s !== "set-aside") return;
      // Take the staged folder away, so moving it into place fails like a disk error would.
      const skills = join(home, "skills");
      for (const name of readdirSync(skills).filter((n) => n.startsWith(".staging-"))) {
        const text = readFileSync(join(skills, name, "SKILL.md"), "utf8");
        if (text.includes("version: 2.0.0")) rmSync(join(skills, name), { recursive: true });
      }
    };
    const error = await refusal(() =>
      installSkill(home, skillFiles("alpha-skill", {}, "2.0.0"), entry(), {
        replace: true,
        onStep: sabotage,
      }),
    );
    expect(error.code).toBe("STORE_FAILED");
    expect(snapshot(home)).toEqual(before);
  });
});

describe("recoverInstalled", () => {
  it("deletes leftovers and unlisted folders, keeps other files, reports missing and modified skills", async () => {
    const skills = join(home, "skills");
    mkdirSync(join(skills, "stray-skill"));
    writeFileSync(join(skills, "stray-skill", "SKILL.md"), "x");
    mkdirSync(join(skills, ".staging-abc123"));
    writeFileSync(join(skills, ".staging-lock-1.json"), "{}");
    writeFileSync(join(skills, "alpha-skill", "refs", "guide.md"), "edited by hand");
    rmSync(join(skills, "beta-skill"), { recursive: true });
    const lockBefore = lockBytes(home);
    const report = await recoverInstalled(home);
    expect(report).toEqual({
      removed: [".staging-abc123", ".staging-lock-1.json", "stray-skill"],
      restored: [],
      missing: ["beta-skill"],
      modified: ["alpha-skill"],
    });
    // Reported, never deleted: the lock and the edited skill stay.
    expect(lockBytes(home)).toBe(lockBefore);
    expect(readdirSync(skills).sort()).toEqual(["alpha-skill", "disabled.json", LOCK_FILE]);
  });

  it("touches nothing when the lock is damaged, and says so", async () => {
    const skills = join(home, "skills");
    for (const damage of ["{not json", '{"version":3,"skills":{}}', '{"version":1,"skills":{},"extra":1}']) {
      writeFileSync(join(skills, LOCK_FILE), damage);
      const before = snapshot(home);
      expect(await refusal(() => recoverInstalled(home)), damage).toMatchObject({ code: "STORE_FAILED" });
      expect(await refusal(() => listInstalled(home))).toMatchObject({ code: "STORE_FAILED" });
      expect(snapshot(home)).toEqual(before);
    }
  });

  it("is a no-op for a home without skills", async () => {
    const empty = join(temp.dir, "empty");
    mkdirSync(empty);
    expect(await recoverInstalled(empty)).toEqual({ removed: [], restored: [], missing: [], modified: [] });
    expect(await listInstalled(empty)).toEqual([]);
  });
});
