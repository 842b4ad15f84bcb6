/**
 * Progressive disclosure with files through the plugin: skill_load lists a skill's files and says
 * how to read and run them, skill_read pages one under the same visibility rules as skill_load (a
 * fighter's `skills` list, the capabilities a skill needs) and taints the turn like skill_load for
 * a stranger's skill, and `move.mounts` lends a fighter's sandbox only the folders of the skills it
 * may use that hold scripts.
 */
import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Capability, FighterRow, RingServices, SandboxMount } from "../../sdk/index.js";
import { installSkill } from "../../sdk/kits/skill-install.js";
import { type AppliedMoves, applyMoves, moveContext, TEST_FIGHTER } from "../../test/helpers/moves.js";
import plugin from "./index.js";

const skillMd = (name: string, capabilities: string[] = []) =>
  `---\nname: ${name}\ndescription: Tidy ${name} reports. Use when asked about ${name}.\nmetadata:\n  spar.capabilities: "${capabilities.join(" ")}"\n---\n\n# ${name}\n\nRead references/guide.md.\n`;
const GUIDE = "g".repeat(20_000);

describe("moves-skills: a skill's files", () => {
  let home: string;
  let moves: AppliedMoves;

  const fighter = (capabilities: Capability[], skills?: string[]): FighterRow => ({
    ...TEST_FIGHTER,
    manifest: { ...TEST_FIGHTER.manifest, capabilities, ...(skills ? { skills } : {}) },
  });
  const call = async (move: string, input: Record<string, unknown>, who = fighter([])) => {
    const context = moveContext({ fighter: who });
    try {
      return {
        result: (await (await moves.move(move)).run(input, context)) as Record<string, unknown>,
        marks: context.marks,
      };
    } catch (err) {
      return { error: err as Error & { code: string }, marks: context.marks };
    }
  };
  const mounts = async (who: FighterRow): Promise<SandboxMount[]> => {
    const [tap] = moves.taps("move.mounts") as ((
      m: SandboxMount[],
      c: { fighter: FighterRow },
    ) => Promise<SandboxMount[]>)[];
    return (await tap?.([], { fighter: who })) ?? [];
  };

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), "spar-skills-files-"));
    const files = (name: string, extra: Record<string, string>, capabilities: string[] = []) =>
      new Map([
        ["SKILL.md", Buffer.from(skillMd(name, capabilities))],
        ...Object.entries(extra).map(([p, c]) => [p, Buffer.from(c)] as [string, Buffer]),
      ]);
    const entry = (source: string) => ({ source, forced: false, findings: [] });
    const scripted = { "references/guide.md": GUIDE, "scripts/count.py": "print(len(open(0).read()))\n" };
    await installSkill(home, files("web-report", scripted), entry("https://skills.example/web-report.tgz"));
    await installSkill(home, files("local-report", scripted), entry("local:/home/me/local-report"));
    await installSkill(home, files("plain-report", { "references/guide.md": GUIDE }), entry("local:/x"));
    await installSkill(home, files("shell-report", scripted, ["shell_exec"]), entry("local:/y"));
    await installSkill(home, files("bare-report", {}), entry("local:/z"));
    // An installed skill whose folder was swapped for a link to elsewhere after its install.
    await installSkill(home, files("swapped-report", scripted), entry("local:/w"));
    const swapped = join(home, "skills", "swapped-report");
    renameSync(swapped, join(home, "elsewhere"));
    symlinkSync(join(home, "elsewhere"), swapped);
    mkdirSync(dirname(join(home, "master.key")), { recursive: true });
    writeFileSync(join(home, "master.key"), "not for models\n");
    const ring = {
      moves: { list: async () => [] },
      plugins: { list: async () => [], manifest: async () => undefined },
    } as unknown as RingServices;
    moves = await applyMoves(plugin, { home, ring }, { "moves.skills": {} });
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("skill_load lists the files with size and kind, how to read them, and how to run a script", async () => {
    const { result } = await call("skill_load", { name: "local-report" }, fighter([{ type: "shell_exec" }]));
    expect(result).toMatchObject({
      name: "local-report",
      instructions: expect.stringMatching(/^# local-report/),
      files: [
        { path: "references/guide.md", size: 20_000, kind: "reference" },
        { path: "scripts/count.py", size: 27, kind: "script" },
      ],
      read: expect.stringContaining('skill_read {"name": "local-report"'),
      run: expect.stringContaining('{"argv": ["python3","/skills/local-report/scripts/count.py"]}'),
    });
    const unarmed = await call("skill_load", { name: "local-report" });
    expect(unarmed.result?.run).toMatch(/shell_exec, which you do not hold/);
    const bare = await call("skill_load", { name: "bare-report" });
    expect(bare.result).toMatchObject({ files: [] });
    expect(bare.result).not.toHaveProperty("read");
    expect(bare.result).not.toHaveProperty("run");
  });

  it("skill_read pages a reference until next_offset is null", async () => {
    let offset: number | null = 0;
    let text = "";
    let pages = 0;
    while (offset !== null) {
      const { result } = await call("skill_read", {
        name: "plain-report",
        path: "references/guide.md",
        offset,
        limit: 8_000,
      });
      text += String(result?.text);
      offset = result?.next_offset as number | null;
      pages += 1;
    }
    expect(pages).toBe(3);
    expect(text).toBe(GUIDE);
  });

  it("skill_read: NOT_FOUND for a skill or file not there, VALIDATION_FAILED for a path out of it", async () => {
    expect((await call("skill_read", { name: "no-such-skill", path: "SKILL.md" })).error?.code).toBe(
      "NOT_FOUND",
    );
    expect((await call("skill_read", { name: "plain-report", path: "references/none.md" })).error?.code).toBe(
      "NOT_FOUND",
    );
    for (const path of ["../../master.key", "../web-report/SKILL.md", `${home}/master.key`]) {
      const { error } = await call("skill_read", { name: "plain-report", path });
      expect(error?.code, path).toBe("VALIDATION_FAILED");
      expect(error?.message).not.toContain("not for models");
    }
    expect((await call("skill_read", { name: "plain-report", path: "SKILL.md" })).result?.text).toMatch(
      /^---\n/,
    );
  });

  it("skill_read follows skill_load's visibility: the fighter's skills list, the capabilities a skill needs", async () => {
    const narrow = fighter([{ type: "shell_exec" }], ["plain-report"]);
    expect((await call("skill_read", { name: "local-report", path: "SKILL.md" }, narrow)).error?.code).toBe(
      "NOT_FOUND",
    );
    expect(
      (await call("skill_read", { name: "plain-report", path: "SKILL.md" }, narrow)).result,
    ).toBeDefined();
    expect((await call("skill_read", { name: "shell-report", path: "SKILL.md" })).error?.code).toBe(
      "CAPABILITY_DENIED",
    );
  });

  it("skill_read of a skill from a URL taints the turn as skill_load does; a local one does not", async () => {
    expect((await call("skill_read", { name: "web-report", path: "references/guide.md" })).marks).toEqual([
      { kind: "skill", detail: "web-report from https://skills.example/web-report.tgz", move: "skill_read" },
    ]);
    expect((await call("skill_read", { name: "local-report", path: "references/guide.md" })).marks).toEqual(
      [],
    );
  });

  it("mounts only the skills the fighter may use that hold scripts, by their real folder", async () => {
    const installed = join(realpathSync(home), "skills");
    const all = await mounts(fighter([]));
    expect(all).toEqual([
      { source: join(installed, "local-report"), target: "/skills/local-report" },
      { source: join(installed, "web-report"), target: "/skills/web-report" },
    ]);
    // shell-report needs shell_exec: lent once the fighter holds it. The swapped folder never is.
    expect((await mounts(fighter([{ type: "shell_exec" }]))).map((m) => m.target)).toEqual([
      "/skills/local-report",
      "/skills/shell-report",
      "/skills/web-report",
    ]);
    expect(await mounts(fighter([], ["web-report", "plain-report"]))).toEqual([
      { source: join(installed, "web-report"), target: "/skills/web-report" },
    ]);
    expect(await mounts(fighter([], ["plain-report"]))).toEqual([]);
  });
});
