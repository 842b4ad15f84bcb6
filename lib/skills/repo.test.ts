/**
 * Repository archives as git writes them (a real `git archive` of a repository made here), and the
 * github: source form: the commit from the pax global header, the top folder dropped, every skill
 * found or the ones asked for, links elsewhere in the repository left alone but refused inside a
 * skill, NOT_FOUND where no skill is; the lock reading a version 1 file and writing version 2.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { git, gitCommit, gitInit } from "../../test/fakes/git-archive-server.js";
import { makeTar, refusal, skillMd, tempDir } from "../../test/helpers/archives.js";
import { formatGithubSource, githubArchiveUrl, isPinnedRef, parseGithubSource } from "./github.js";
import { installSkill } from "./installed.js";
import { lockText, readLock } from "./lock.js";
import { readRepoArchive } from "./repo.js";
import { verifyInstalled } from "./verify.js";

const MiB = 1024 * 1024;
let temp: ReturnType<typeof tempDir>;
beforeEach(() => {
  temp = tempDir();
});
afterEach(() => temp.remove());

function archive(dir: string, rev: string, prefix: string): Buffer {
  return execFileSync("git", ["archive", "--format=tar.gz", `--prefix=${prefix}`, rev], { cwd: dir });
}

describe("readRepoArchive", () => {
  it("reads every skill of a git archive, with the commit git wrote in its global header", () => {
    const repo = join(temp.dir, "skills-repo");
    gitInit(repo);
    const sha = gitCommit(repo, {
      "README.md": "# skills\n",
      "skills/alpha-one/SKILL.md": skillMd("alpha-one", "# a\n"),
      "skills/alpha-one/references/guide.md": "guide\n",
      "skills/beta-two/SKILL.md": skillMd("beta-two", "# b\n"),
      "top-level/SKILL.md": skillMd("top-level", "# t\n"),
      "top-level/nested/SKILL.md": skillMd("nested", "# n\n"),
    });
    // A link outside every skill is the repository's business, not a skill's.
    symlinkSync("README.md", join(repo, "link.md"));
    git(repo, ["add", "link.md"]);
    const head = gitCommit(repo, {}, "link");
    const all = readRepoArchive(archive(repo, head, `skills-repo-${head}/`), {}, {}, 64 * MiB);
    expect(all.commit).toBe(head);
    expect(all.skills.map((s) => s.path)).toEqual(["skills/alpha-one", "skills/beta-two", "top-level"]);
    expect([...(all.skills[0]?.files.keys() ?? [])].sort()).toEqual(["SKILL.md", "references/guide.md"]);
    expect([...(all.skills[2]?.files.keys() ?? [])].sort()).toEqual(["SKILL.md", "nested/SKILL.md"]);

    const old = readRepoArchive(archive(repo, sha, "x-main/"), { path: "skills" }, {}, 64 * MiB);
    expect(old.commit).toBe(sha);
    expect(old.skills.map((s) => s.path)).toEqual(["skills/alpha-one", "skills/beta-two"]);
    const one = readRepoArchive(archive(repo, sha, "x/"), { path: "skills/beta-two" }, {}, 64 * MiB);
    expect(one.skills.map((s) => s.path)).toEqual(["skills/beta-two"]);
    const named = readRepoArchive(archive(repo, sha, "x/"), { names: ["top-level"] }, {}, 64 * MiB);
    expect(named.skills.map((s) => s.path)).toEqual(["top-level"]);
  });

  it("says NOT_FOUND where no skill is, naming what there is; refuses a link inside a skill", async () => {
    const repo = join(temp.dir, "r");
    gitInit(repo);
    gitCommit(repo, { "skills/only-one/SKILL.md": skillMd("only-one", "# o\n"), "docs/x.md": "x" });
    const tar = archive(repo, "HEAD", "r-main/");
    const nowhere = await refusal(() => readRepoArchive(tar, { path: "docs" }, {}, MiB));
    expect(nowhere).toMatchObject({ code: "NOT_FOUND" });
    expect(nowhere.message).toMatch(/no skill at "docs".*skills there: skills\/only-one/);
    expect(await refusal(() => readRepoArchive(tar, { names: ["other"] }, {}, MiB))).toMatchObject({
      code: "NOT_FOUND",
      message: expect.stringMatching(/"other"/),
    });
    const empty = join(temp.dir, "e");
    gitInit(empty);
    gitCommit(empty, { "README.md": "no skills" });
    expect(await refusal(() => readRepoArchive(archive(empty, "HEAD", "e/"), {}, {}, MiB))).toMatchObject({
      reason: "missing_skill_md",
    });
    mkdirSync(join(repo, "skills", "only-one", "refs"));
    symlinkSync("/etc/passwd", join(repo, "skills", "only-one", "refs", "p"));
    git(repo, ["add", "--all"]);
    gitCommit(repo, {}, "link");
    expect(await refusal(() => readRepoArchive(archive(repo, "HEAD", "r/"), {}, {}, MiB))).toMatchObject({
      code: "FORBIDDEN",
      reason: "symlink",
    });
  });

  it("refuses a path escaping anywhere in the archive, and one that unpacks past the cap", async () => {
    const evil = gzipSync(
      makeTar([
        { name: "r/skills/ok/SKILL.md", body: skillMd("ok-skill", "# ok\n") },
        { name: "r/../../etc/x", body: "x" },
      ]),
    );
    expect(await refusal(() => readRepoArchive(evil, {}, {}, MiB))).toMatchObject({
      reason: "path_traversal",
    });
    const big = gzipSync(
      makeTar([
        { name: "SKILL.md", body: skillMd("big-one", "# b\n") },
        { name: "blob", body: Buffer.alloc(2 * MiB) },
      ]),
    );
    expect(await refusal(() => readRepoArchive(big, {}, {}, MiB))).toMatchObject({
      reason: "total_too_large",
    });
  });
});

describe("github: sources", () => {
  it("reads the form github:owner/repo[/path][@ref] and writes it back the same", () => {
    expect(parseGithubSource("github:acme/skills")).toEqual({ owner: "acme", repo: "skills" });
    expect(parseGithubSource("github:acme/skills/skills/review@v1.2")).toEqual({
      owner: "acme",
      repo: "skills",
      path: "skills/review",
      ref: "v1.2",
    });
    expect(parseGithubSource("github:a-b/c.d/x/@feature/new").ref).toBe("feature/new");
    expect(formatGithubSource(parseGithubSource("github:acme/skills/x/y/@main"))).toBe(
      "github:acme/skills/x/y@main",
    );
    expect(githubArchiveUrl({ owner: "acme", repo: "s", ref: "feature/x" })).toBe(
      "https://codeload.github.com/acme/s/tar.gz/feature/x",
    );
    expect(githubArchiveUrl({ owner: "acme", repo: "s" }, "http://127.0.0.1:9/")).toBe(
      "http://127.0.0.1:9/acme/s/tar.gz/HEAD",
    );
    expect(isPinnedRef("a".repeat(40))).toBe(true);
    expect(isPinnedRef("main")).toBe(false);
  });

  it("refuses what is not that form, with the form in the message", async () => {
    for (const bad of [
      "github:acme",
      "github:/acme/x",
      "github:acme//x",
      "github:acme/x/../y",
      "github:acme/x@",
      "github:acme/x@-rf",
      "github:acme/x@a..b",
      "github:ac me/x",
      "github:acme/x@main lock",
    ]) {
      const error = await refusal(() => parseGithubSource(bad));
      expect(error, bad).toMatchObject({ code: "VALIDATION_FAILED" });
      expect(error.message, bad).toMatch(/the form is github:owner\/repo\[\/path\]\[@ref\]$/);
    }
  });
});

describe("the lock's version", () => {
  it("reads a version 1 lock as it is and writes version 2 with the new fields", async () => {
    const home = join(temp.dir, "home");
    mkdirSync(join(home, "skills"), { recursive: true });
    const v1 = {
      version: 1,
      skills: {
        "old-skill": {
          source: "https://example.org/old.tgz",
          version: "1.0.0",
          sha256: "0".repeat(64),
          installed_at: "2030-01-01T00:00:00.000Z",
          forced: false,
          findings: [],
        },
      },
    };
    writeFileSync(join(home, "skills", "skills.lock.json"), JSON.stringify(v1));
    const lock = await readLock(home);
    expect(lock.skills["old-skill"]).toEqual(v1.skills["old-skill"]);
    expect(JSON.parse(lockText(lock))).toEqual({ ...v1, version: 2 });
    const files = new Map([["SKILL.md", Buffer.from(skillMd("new-skill", "# n\n"))]]);
    await installSkill(home, files, {
      source: "github:acme/skills/new-skill@main",
      ref: "main",
      resolved: "b".repeat(40),
      path: "new-skill",
      forced: false,
      findings: [],
    });
    // The old entry has no per-file hashes: verify compares its folder as a whole, and says so.
    mkdirSync(join(home, "skills", "old-skill"));
    writeFileSync(join(home, "skills", "old-skill", "SKILL.md"), skillMd("old-skill", "# o\n"));
    const [fresh, old] = await verifyInstalled(home);
    expect(old).toMatchObject({ name: "old-skill", ok: false, changed: ["(the folder as a whole)"] });
    expect(old?.note).toMatch(/older Spar/);
    expect(fresh).toEqual({ name: "new-skill", ok: true, changed: [], missing: [], extra: [] });
    writeFileSync(join(home, "skills", "new-skill", "SKILL.md"), "changed");
    rmSync(join(home, "skills", "new-skill", "SKILL.md"));
    writeFileSync(join(home, "skills", "new-skill", "other.md"), "x");
    expect((await verifyInstalled(home, ["new-skill"]))[0]).toMatchObject({
      ok: false,
      missing: ["SKILL.md"],
      extra: ["other.md"],
    });
    const written = await readLock(home);
    expect(written.version).toBe(2);
    expect(Object.keys(written.skills["new-skill"] ?? {})).toEqual([
      "source",
      "ref",
      "resolved",
      "path",
      "version",
      "sha256",
      "files",
      "installed_at",
      "forced",
      "findings",
    ]);
  });
});
