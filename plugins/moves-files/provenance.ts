/**
 * Which files hold the fighter's own words: what its `file_write` and `file_edit` left, each file's
 * real path and sha256 after the write, in this plugin's `written` collection (plugin.json). A read
 * of a file whose current hash is not the one the fighter last wrote there (someone else wrote it,
 * or changed it since) brings untrusted content into the turn. A write made in a tainted turn is
 * recorded with that turn's sources: its content may be the untrusted content, copied.
 */
import { createHash, type Hash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import type { Collection, PluginData, TaintSource } from "../../sdk/index.js";

/** One file as the fighter last wrote it. A type, not an interface: a Doc. */
export type WrittenRecord = {
  /** sha256 of `<fighter id>\0<real path>`: one record per fighter and file. */
  id: string;
  fighter_id: string;
  /** The file's real path (symlinks resolved). */
  path: string;
  /** Of the whole file, after the write. */
  sha256: string;
  /** The sources of the turn that wrote it, when that turn was tainted. */
  taint?: TaintSource[];
  written_at: string;
};

/** What a read found: the file is the fighter's own, untainted; or the taint its content brings. */
export type Provenance = { own: true } | { own: false; taint: TaintSource };

/** One fighter's written files, for one call. */
export interface FileRecords {
  /** Records that the fighter's call left `real` holding content of hash `sha256`. */
  wrote(real: string, sha256: string): Promise<void>;
  /** Whether `real`, now of hash `sha256`, is as the fighter last wrote it in an untainted turn. */
  own(real: string, sha256: string): Promise<boolean>;
  /** What reading `real` (shown as `display`), now of hash `sha256`, brings into the turn. */
  provenance(real: string, sha256: () => Promise<string>, display: string): Promise<Provenance>;
}

const recordId = (fighterId: string, real: string) =>
  createHash("sha256").update(`${fighterId}\0${real}`).digest("hex");

/**
 * The records of `fighterId`, for a call made in a turn holding `taint` (MoveContext.taint).
 *
 * @example
 * const records = fileRecords(api.data, context.fighter.id, context.taint);
 * await records.wrote("/home/me/.spar/workspaces/scout/notes.md", sha256);
 */
export function fileRecords(
  data: PluginData,
  fighterId: string,
  taint: readonly TaintSource[],
  now: () => string = () => new Date().toISOString(),
): FileRecords {
  const written = data.written as Collection<WrittenRecord>;
  const find = (real: string) => written.get(recordId(fighterId, real));
  return {
    async wrote(real, sha256) {
      await written.put({
        id: recordId(fighterId, real),
        fighter_id: fighterId,
        path: real,
        sha256,
        ...(taint.length > 0 ? { taint: [...taint] } : {}),
        written_at: now(),
      });
    },
    async own(real, sha256) {
      const record = await find(real);
      return record?.sha256 === sha256 && !record.taint;
    },
    async provenance(real, sha256, display) {
      const record = await find(real);
      // Unknown to the records: no need to hash it, it is not the fighter's.
      if (!record || record.sha256 !== (await sha256())) return { own: false, taint: fileTaint(display) };
      const first = record.taint?.[0];
      if (!first) return { own: true };
      const detail = `${display} (written by a turn that had read ${first.detail})`;
      return { own: false, taint: fileTaint(display, detail) };
    },
  };
}

function fileTaint(display: string, detail = display): TaintSource {
  return { kind: "file", detail, move: "file_read" };
}

/** The sha256 of `bytes`. */
export const sha256Of = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/**
 * The hash of a whole open file, read from its start whatever the handle's position; the running
 * Hash, so an append's result can be hashed from it (`hash.copy().update(data)`).
 */
export async function hashFile(file: FileHandle): Promise<Hash> {
  const hash = createHash("sha256");
  const buffer = Buffer.alloc(65_536);
  for (let position = 0; ; ) {
    const { bytesRead } = await file.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) return hash;
    hash.update(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
}
