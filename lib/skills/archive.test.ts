/**
 * readArchive on real archives (the system's tar and zip) and on byte-exact ones (test/helpers/
 * archives.ts) for what those tools refuse to make. Every refusal is checked for its code and reason.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bytes,
  lieAboutSize,
  makeTar,
  makeZip,
  paxRecords,
  refusal,
  run,
  skillMd,
  tempDir,
  writeFiles,
} from "../../test/helpers/archives.js";
import { archiveKind, readArchive } from "./archive.js";
import { DEFAULT_LIMITS, REFUSALS, skillDigest } from "./files.js";

const SKILL = skillMd();
const GUIDE = "# Guide\n\nMore detail, loaded on demand.\n";
const text = (files: Map<string, Buffer>) =>
  Object.fromEntries([...files].map(([path, content]) => [path, content.toString()]));

let work: ReturnType<typeof tempDir>;
/** Makes a folder `name` holding `files` in the work dir, and returns its path. */
const folder = (name: string, files: Record<string, string | Buffer>) => {
  const root = join(work.dir, name);
  mkdirSync(root, { recursive: true });
  writeFiles(root, files);
  return root;
};

beforeAll(() => {
  work = tempDir();
});
afterAll(() => work.remove());

describe("reading real archives", () => {
  it("reads a tar.gz of one top folder, dropping that folder from every path", () => {
    folder("tgz-top/demo-skill", { "SKILL.md": SKILL, "refs/guide.md": GUIDE });
    run(join(work.dir, "tgz-top"), "tar", ["czf", "../top.tgz", "demo-skill"]);
    const files = readArchive(bytes(join(work.dir, "top.tgz")));
    expect(text(files)).toEqual({ "SKILL.md": SKILL, "refs/guide.md": GUIDE });
  });

  it("reads a tar.gz packed from inside the folder (./SKILL.md), and a plain tar", () => {
    const root = folder("tgz-inside", { "SKILL.md": SKILL, "refs/guide.md": GUIDE });
    run(root, "tar", ["czf", "../inside.tgz", "."]);
    expect(text(readArchive(bytes(join(work.dir, "inside.tgz"))))).toEqual({
      "SKILL.md": SKILL,
      "refs/guide.md": GUIDE,
    });
    run(root, "tar", ["cf", "../inside.tar", "."]);
    const tar = bytes(join(work.dir, "inside.tar"));
    expect(archiveKind(tar)).toBe("tar");
    expect(text(readArchive(tar))).toEqual({ "SKILL.md": SKILL, "refs/guide.md": GUIDE });
  });

  it("reads long names in pax and GNU formats", () => {
    const long = `${"deep-folder-name/".repeat(6)}a-file-with-a-long-name.md`;
    expect(long.length).toBeGreaterThan(100);
    const root = folder("long", { "SKILL.md": SKILL, [long]: GUIDE });
    for (const format of ["pax", "gnu"]) {
      run(root, "tar", [`--format=${format}`, "-czf", `../long-${format}.tgz`, "."]);
      const files = readArchive(bytes(join(work.dir, `long-${format}.tgz`)));
      expect(files.get(long)?.toString(), format).toBe(GUIDE);
    }
  });

  it("reads a zip of one top folder and a zip of root files", () => {
    folder("zip-top/demo-skill", { "SKILL.md": SKILL, "refs/guide.md": GUIDE });
    run(join(work.dir, "zip-top"), "zip", ["-qr", "../top.zip", "demo-skill"]);
    const top = bytes(join(work.dir, "top.zip"));
    expect(archiveKind(top)).toBe("zip");
    expect(text(readArchive(top))).toEqual({ "SKILL.md": SKILL, "refs/guide.md": GUIDE });
    // Stored (zip -0) as well as deflated.
    run(join(work.dir, "zip-top", "demo-skill"), "zip", ["-qr0", "../../flat.zip", "."]);
    expect(text(readArchive(bytes(join(work.dir, "flat.zip"))))).toEqual({
      "SKILL.md": SKILL,
      "refs/guide.md": GUIDE,
    });
  });

  it("gives the same digest for the same files whatever the archive", () => {
    const a = readArchive(bytes(join(work.dir, "top.tgz")));
    const b = readArchive(bytes(join(work.dir, "top.zip")));
    expect(skillDigest(a)).toBe(skillDigest(b));
    expect(skillDigest(a)).toMatch(/^[0-9a-f]{64}$/);
    const changed = new Map(a);
    changed.set("refs/guide.md", Buffer.from(`${GUIDE}!`));
    expect(skillDigest(changed)).not.toBe(skillDigest(a));
  });

  it("leaves out the __MACOSX folder Finder adds to a zip, checking its paths all the same", async () => {
    const zip = makeZip([
      { name: "demo-skill/SKILL.md", data: SKILL },
      { name: "__MACOSX/demo-skill/._SKILL.md", data: "resource fork" },
    ]);
    expect([...readArchive(zip).keys()]).toEqual(["SKILL.md"]);
    const sneaky = makeZip([
      { name: "SKILL.md", data: SKILL },
      { name: "__MACOSX/../../evil", data: "x" },
    ]);
    expect(await refusal(() => readArchive(sneaky))).toMatchObject({ reason: "path_traversal" });
  });
});

describe("refusing dangerous entries", () => {
  it("refuses ../ and absolute paths that system tar stores with -P", async () => {
    const inner = folder("dotdot/a/b", { "SKILL.md": SKILL });
    writeFileSync(join(work.dir, "dotdot", "x"), "outside");
    run(inner, "tar", ["-czPf", "../../../dotdot.tgz", "SKILL.md", "../../x"]);
    expect(await refusal(() => readArchive(bytes(join(work.dir, "dotdot.tgz"))))).toMatchObject({
      code: "FORBIDDEN",
      reason: "path_traversal",
      message: expect.stringContaining('"../../x"'),
    });
    run(inner, "tar", ["-czPf", "../../../absolute.tgz", "SKILL.md", join(work.dir, "dotdot", "x")]);
    expect(await refusal(() => readArchive(bytes(join(work.dir, "absolute.tgz"))))).toMatchObject({
      code: "FORBIDDEN",
      reason: "absolute_path",
    });
  });

  it("refuses a symlink, a hard link and a FIFO made by system tar", async () => {
    const cases: [string, (dir: string) => void, string][] = [
      ["symlink", (dir) => symlinkSync("/etc/passwd", join(dir, "link")), "symlink"],
      ["hardlink", (dir) => run(dir, "ln", ["SKILL.md", "again.md"]), "hardlink"],
      ["fifo", (dir) => run(dir, "mkfifo", ["pipe"]), "special_file"],
    ];
    for (const [name, make, reason] of cases) {
      const root = folder(`special-${name}`, { "SKILL.md": SKILL });
      make(root);
      run(root, "tar", ["czf", `../special-${name}.tgz`, "."]);
      const error = await refusal(() => readArchive(bytes(join(work.dir, `special-${name}.tgz`))));
      expect(error, name).toMatchObject({ code: "FORBIDDEN", reason });
    }
  });

  it("refuses devices and unknown entry types", async () => {
    for (const [type, words] of [
      ["3", "a character device"],
      ["4", "a block device"],
      ["6", "a FIFO"],
      ["S", 'type "S"'],
    ]) {
      const tar = makeTar([
        { name: "SKILL.md", body: SKILL },
        { name: "dev", type },
      ]);
      const error = await refusal(() => readArchive(gzipSync(tar)));
      expect(error, type).toMatchObject({ code: "FORBIDDEN", reason: "special_file" });
      expect(error.message).toContain(words);
    }
  });

  it("refuses a symlink stored by zip -y", async () => {
    const root = folder("zip-link", { "SKILL.md": SKILL });
    symlinkSync("/etc/passwd", join(root, "link"));
    run(root, "zip", ["-qry", "../link.zip", "."]);
    expect(await refusal(() => readArchive(bytes(join(work.dir, "link.zip"))))).toMatchObject({
      code: "FORBIDDEN",
      reason: "symlink",
    });
    // A Unix FIFO mode in a hand-written zip.
    const fifo = makeZip([
      { name: "SKILL.md", data: SKILL },
      { name: "pipe", mode: 0o010644 },
    ]);
    expect(await refusal(() => readArchive(fifo))).toMatchObject({
      code: "FORBIDDEN",
      reason: "special_file",
    });
  });

  it("refuses backslashes, drive letters, control characters, and .. hidden in a pax header", async () => {
    const cases: [string, string, string][] = [
      ["a\\..\\..\\evil", "FORBIDDEN", "backslash"],
      ["C:/Windows/evil", "FORBIDDEN", "drive_letter"],
      ["/etc/cron.d/evil", "FORBIDDEN", "absolute_path"],
      ["ok/../../evil", "FORBIDDEN", "path_traversal"],
      ["bell\u0007.md", "VALIDATION_FAILED", "bad_name"],
    ];
    for (const [name, code, reason] of cases) {
      const tar = makeTar([
        { name: "SKILL.md", body: SKILL },
        { name, body: "x" },
      ]);
      expect(await refusal(() => readArchive(gzipSync(tar))), name).toMatchObject({ code, reason });
      const zip = makeZip([
        { name: "SKILL.md", data: SKILL },
        { name, data: "x" },
      ]);
      expect(await refusal(() => readArchive(zip)), name).toMatchObject({ code, reason });
    }
    const pax = makeTar([
      { name: "SKILL.md", body: SKILL },
      { name: "PaxHeader", type: "x", body: paxRecords({ path: "../../.ssh/authorized_keys" }) },
      { name: "innocent.md", body: "ssh-ed25519 AAAA" },
    ]);
    expect(await refusal(() => readArchive(gzipSync(pax)))).toMatchObject({
      code: "FORBIDDEN",
      reason: "path_traversal",
      extra: { entry: "../../.ssh/authorized_keys" },
    });
    const longName = makeTar([
      { name: "SKILL.md", body: SKILL },
      { name: "././@LongLink", type: "L", body: "../escape\0" },
      { name: "innocent.md", body: "x" },
    ]);
    expect(await refusal(() => readArchive(gzipSync(longName)))).toMatchObject({ reason: "path_traversal" });
    const prefixed = makeTar([
      { name: "SKILL.md", body: SKILL },
      { name: "x.md", prefix: "..", body: "x" },
    ]);
    expect(await refusal(() => readArchive(gzipSync(prefixed)))).toMatchObject({ reason: "path_traversal" });
  });

  it("refuses the same path twice, also in another case, and a path that is file and folder", async () => {
    const twice = makeTar([
      { name: "SKILL.md", body: SKILL },
      { name: "SKILL.md", body: skillMd("other-skill") },
    ]);
    expect(await refusal(() => readArchive(gzipSync(twice)))).toMatchObject({
      code: "VALIDATION_FAILED",
      reason: "duplicate_path",
    });
    const cased = makeZip([
      { name: "SKILL.md", data: SKILL },
      { name: "notes.md", data: "a" },
      { name: "NOTES.md", data: "b" },
    ]);
    expect(await refusal(() => readArchive(cased))).toMatchObject({ reason: "duplicate_path" });
    const dotted = makeTar([
      { name: "SKILL.md", body: SKILL },
      { name: "./SKILL.md", body: SKILL },
    ]);
    expect(await refusal(() => readArchive(gzipSync(dotted)))).toMatchObject({ reason: "duplicate_path" });
    const shapes = makeTar([
      { name: "SKILL.md", body: SKILL },
      { name: "refs", body: "a file" },
      { name: "refs/guide.md", body: GUIDE },
    ]);
    expect(await refusal(() => readArchive(gzipSync(shapes)))).toMatchObject({
      code: "VALIDATION_FAILED",
      reason: "path_conflict",
    });
  });

  it("refuses encrypted zip entries (zip -P) and compression it does not read", async () => {
    const root = folder("secret", { "SKILL.md": SKILL });
    run(root, "zip", ["-q", "-P", "hunter2", "../secret.zip", "SKILL.md"]);
    expect(await refusal(() => readArchive(bytes(join(work.dir, "secret.zip"))))).toMatchObject({
      code: "UNSUPPORTED_MEDIA_TYPE",
      reason: "encrypted",
    });
    const bzip2 = makeZip([{ name: "SKILL.md", data: SKILL, method: 12 }]);
    expect(await refusal(() => readArchive(bzip2))).toMatchObject({
      code: "UNSUPPORTED_MEDIA_TYPE",
      reason: "unsupported_compression",
    });
  });
});

describe("refusing what is too much", () => {
  it("refuses a real zip bomb: 20 MiB of zeros in ~20 KiB, before inflating it", async () => {
    const root = folder("bomb", { "SKILL.md": SKILL });
    writeFileSync(join(root, "zeros.bin"), Buffer.alloc(20 * 1024 * 1024));
    run(root, "zip", ["-q9", "../bomb.zip", "SKILL.md", "zeros.bin"]);
    const bomb = bytes(join(work.dir, "bomb.zip"));
    expect(bomb.length).toBeLessThan(100 * 1024);
    expect(await refusal(() => readArchive(bomb))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "file_too_large",
      message: expect.stringContaining(`is ${20 * 1024 * 1024} bytes`),
    });
  });

  it("refuses a bomb that lies about its size: inflation stops at the declared size", async () => {
    const root = folder("liar", {});
    writeFileSync(join(root, "zeros.bin"), Buffer.alloc(20 * 1024 * 1024));
    writeFileSync(join(root, "SKILL.md"), SKILL);
    run(root, "zip", ["-q9", "../liar.zip", "zeros.bin", "SKILL.md"]);
    // The first entry (zeros.bin) now says it holds 100 bytes; its data still inflates to 20 MiB.
    const liar = lieAboutSize(bytes(join(work.dir, "liar.zip")), 100);
    expect(await refusal(() => readArchive(liar))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "zip_bomb",
      message: expect.stringContaining("inflates past its declared 100 bytes"),
    });
  });

  it("refuses an entry past 100:1 even under the caps, and overlapping entries", async () => {
    const dense = makeZip([
      { name: "SKILL.md", data: SKILL },
      { name: "zeros.bin", data: Buffer.alloc(200 * 1024) },
    ]);
    expect(await refusal(() => readArchive(dense))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "zip_bomb",
    });
    const overlap = makeZip([
      { name: "SKILL.md", data: SKILL },
      { name: "again.md", data: SKILL, sameDataAs: 0 },
    ]);
    expect(await refusal(() => readArchive(overlap))).toMatchObject({
      code: "VALIDATION_FAILED",
      reason: "overlapping_entries",
    });
  });

  it("stops a gzip bomb at the cap", async () => {
    const root = folder("gzbomb", { "SKILL.md": SKILL });
    writeFileSync(join(root, "zeros.bin"), Buffer.alloc(30 * 1024 * 1024));
    run(root, "tar", ["czf", "../gzbomb.tgz", "."]);
    const bomb = bytes(join(work.dir, "gzbomb.tgz"));
    expect(bomb.length).toBeLessThan(200 * 1024);
    expect(await refusal(() => readArchive(bomb))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "total_too_large",
    });
  });

  it("holds the file caps, the total and the count", async () => {
    const big = makeTar([
      { name: "SKILL.md", body: SKILL },
      { name: "big.bin", body: randomBytes(DEFAULT_LIMITS.maxFileBytes + 1) },
    ]);
    expect(await refusal(() => readArchive(gzipSync(big)))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "file_too_large",
    });
    const bigSkill = makeTar([{ name: "SKILL.md", body: skillMd("demo-skill", "x".repeat(70 * 1024)) }]);
    expect(await refusal(() => readArchive(gzipSync(bigSkill)))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "file_too_large",
      extra: { entry: "SKILL.md" },
    });
    // Each file under its cap, all of them over the total.
    const parts = Math.floor(DEFAULT_LIMITS.maxTotalBytes / DEFAULT_LIMITS.maxFileBytes) + 1;
    const many = makeTar([
      { name: "SKILL.md", body: SKILL },
      ...Array.from({ length: parts }, (_, i) => ({
        name: `part-${i}.bin`,
        body: randomBytes(DEFAULT_LIMITS.maxFileBytes),
      })),
    ]);
    expect(await refusal(() => readArchive(gzipSync(many)))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "total_too_large",
    });
    const crowd = makeZip([
      { name: "SKILL.md", data: SKILL },
      ...Array.from({ length: DEFAULT_LIMITS.maxFiles }, (_, i) => ({ name: `notes/${i}.md`, data: "n" })),
    ]);
    expect(await refusal(() => readArchive(crowd))).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      reason: "too_many_files",
    });
    // Lower limits are the caller's to set.
    const two = makeTar([
      { name: "SKILL.md", body: SKILL },
      { name: "a.md", body: "a" },
    ]);
    expect(await refusal(() => readArchive(gzipSync(two), { maxFiles: 1 }))).toMatchObject({
      reason: "too_many_files",
    });
    expect(readArchive(gzipSync(two), { maxFiles: 2 }).size).toBe(2);
  });
});

describe("refusing what is no skill archive", () => {
  it("needs SKILL.md at the root or in the one top folder", async () => {
    const twoTops = makeTar([
      { name: "a/SKILL.md", body: SKILL },
      { name: "b/other.md", body: "x" },
    ]);
    const deep = makeTar([{ name: "a/b/SKILL.md", body: SKILL }]);
    const none = makeZip([{ name: "README.md", data: "no skill" }]);
    for (const archive of [gzipSync(twoTops), gzipSync(deep), none]) {
      expect(await refusal(() => readArchive(archive))).toMatchObject({
        code: "VALIDATION_FAILED",
        reason: "missing_skill_md",
      });
    }
    const empty = makeZip([]);
    expect(await refusal(() => readArchive(empty))).toMatchObject({ reason: "missing_skill_md" });
  });

  it("says when an archive is damaged", async () => {
    const tar = makeTar([{ name: "SKILL.md", body: SKILL, badChecksum: true }]);
    expect(await refusal(() => readArchive(gzipSync(tar)))).toMatchObject({
      code: "VALIDATION_FAILED",
      reason: "corrupt_archive",
    });
    // Cut in the middle of SKILL.md's bytes.
    const cut = makeTar([{ name: "SKILL.md", body: SKILL }]).subarray(0, 600);
    expect(await refusal(() => readArchive(gzipSync(cut)))).toMatchObject({ reason: "corrupt_archive" });
    const badCrc = makeZip([{ name: "SKILL.md", data: SKILL, crc: 1234 }]);
    expect(await refusal(() => readArchive(badCrc))).toMatchObject({ reason: "corrupt_archive" });
    const gz = gzipSync(makeTar([{ name: "SKILL.md", body: SKILL }]));
    expect(await refusal(() => readArchive(gz.subarray(0, gz.length - 20)))).toMatchObject({
      reason: "corrupt_archive",
    });
    const zip = makeZip([{ name: "SKILL.md", data: SKILL }]);
    expect(await refusal(() => readArchive(zip.subarray(0, zip.length - 5)))).toMatchObject({
      reason: "corrupt_archive",
    });
  });

  it("tells archives by their bytes: anything else is unsupported", async () => {
    expect(archiveKind(Buffer.from(SKILL))).toBeUndefined();
    for (const data of [Buffer.from(SKILL), Buffer.from("%PDF-1.7"), Buffer.alloc(0)]) {
      expect(await refusal(() => readArchive(data))).toMatchObject({
        code: "UNSUPPORTED_MEDIA_TYPE",
        reason: "unsupported_archive",
      });
    }
  });

  it("pairs every reason with one code", () => {
    for (const [reason, code] of Object.entries(REFUSALS)) {
      expect(
        ["FORBIDDEN", "VALIDATION_FAILED", "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE"],
        reason,
      ).toContain(code);
    }
  });
});

describe("folders in archives", () => {
  it("accepts explicit folder entries and empty folders", () => {
    const tar = makeTar([
      { name: "demo-skill/", type: "5" },
      { name: "demo-skill/refs/", type: "5" },
      { name: "demo-skill/empty/", type: "5" },
      { name: "demo-skill/SKILL.md", body: SKILL },
      { name: "demo-skill/refs/guide.md", body: GUIDE },
    ]);
    expect(text(readArchive(gzipSync(tar)))).toEqual({ "SKILL.md": SKILL, "refs/guide.md": GUIDE });
    // An old (V7) tar marks folders by a trailing slash on a plain entry.
    const v7 = makeTar([
      { name: "refs/", type: "0" },
      { name: "SKILL.md", body: SKILL },
      { name: "refs/guide.md", body: GUIDE },
    ]);
    expect(text(readArchive(gzipSync(v7)))).toEqual({ "SKILL.md": SKILL, "refs/guide.md": GUIDE });
  });
});
