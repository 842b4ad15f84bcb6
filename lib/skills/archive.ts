/**
 * A skill packed as an archive, unpacked in memory under the skill limits, with no new dependency:
 * a .tar.gz (tar.ts: gunzip with an output cap, then the tar read by hand) or a .zip (zip.ts: read
 * from its central directory). Told apart by their first bytes, never by a name. A plain tar is
 * read too: a server that sends a .tar.gz with `Content-Encoding: gzip` has it decoded on the way.
 *
 * SKILL.md must be at the archive's root, or inside exactly one top folder that holds every file
 * (`my-skill/SKILL.md`, as `tar czf my-skill.tgz my-skill/` packs it): that folder is then dropped
 * from every path. A zip's `__MACOSX/` folder (macOS Finder's resource forks) is left out. Every
 * refusal is a SparError with `extra.reason` (files.ts, REFUSALS):
 *
 * | refusal | code | reason |
 * |---|---|---|
 * | `..` in a path | FORBIDDEN | path_traversal |
 * | `/abs/path` | FORBIDDEN | absolute_path |
 * | `a\b`, `C:x` | FORBIDDEN | backslash, drive_letter |
 * | symbolic link, hard link | FORBIDDEN | symlink, hardlink |
 * | device, FIFO, any other non-regular entry but a folder | FORBIDDEN | special_file |
 * | the same path twice (also differing only in case or Unicode form) | VALIDATION_FAILED | duplicate_path |
 * | a path that is a file and a folder | VALIDATION_FAILED | path_conflict |
 * | no SKILL.md at the root (or in one top folder) | VALIDATION_FAILED | missing_skill_md |
 * | a name with control characters, not UTF-8, too long | VALIDATION_FAILED | bad_name |
 * | bad checksum, CRC, truncation, size that disagrees | VALIDATION_FAILED | corrupt_archive |
 * | zip entries sharing bytes | VALIDATION_FAILED | overlapping_entries |
 * | more than `maxFiles` (256) files | PAYLOAD_TOO_LARGE | too_many_files |
 * | a file over its cap (SKILL.md 64 KiB, others 4 MiB) | PAYLOAD_TOO_LARGE | file_too_large |
 * | all files over 16 MiB, or a .tar.gz that unpacks past that | PAYLOAD_TOO_LARGE | total_too_large |
 * | a zip entry past 100:1, or inflating past its declared size | PAYLOAD_TOO_LARGE | zip_bomb |
 * | an encrypted zip entry | UNSUPPORTED_MEDIA_TYPE | encrypted |
 * | zip compression other than stored/deflate | UNSUPPORTED_MEDIA_TYPE | unsupported_compression |
 * | zip64, split zips, not an archive at all | UNSUPPORTED_MEDIA_TYPE | unsupported_archive |
 */
import { refuse, type SkillFiles, type SkillLimits, skillLimits } from "./files.js";
import { gunzipCapped, readTar } from "./tar.js";
import { readZip } from "./zip.js";

export type ArchiveKind = "tar.gz" | "zip" | "tar";

/** What an archive is by its first bytes (gzip, zip, or a tar's `ustar` magic), or undefined. */
export function archiveKind(data: Buffer): ArchiveKind | undefined {
  if (data[0] === 0x1f && data[1] === 0x8b) return "tar.gz";
  const head = data.toString("latin1", 0, 4);
  if (head === "PK\x03\x04" || head === "PK\x05\x06") return "zip";
  if (data.toString("latin1", 257, 262) === "ustar") return "tar";
  return undefined;
}

/**
 * A skill's files from a .tar.gz or .zip held in memory, every entry checked (see the table above).
 *
 * @example
 * const files = readArchive(await readFile("my-skill.tgz"));
 * files.get("SKILL.md"); // <Buffer 2d 2d 2d …>
 */
export function readArchive(data: Buffer, limits: Partial<SkillLimits> = {}): SkillFiles {
  const checked = skillLimits(limits);
  switch (archiveKind(data)) {
    case "tar.gz":
      return readTar(gunzipCapped(data, checked), checked);
    case "zip":
      return readZip(data, checked);
    case "tar":
      return readTar(data, checked);
    default:
      throw refuse("unsupported_archive", "the data is neither a .tar.gz nor a .zip archive");
  }
}
