/**
 * Where a skill to install comes from: a URL (a SKILL.md, a .tar.gz or a .zip) fetched through the
 * shared fetch guard of lib/web, or a local folder. Both give the skill's files in memory, checked
 * by the rules of files.ts and archive.ts, for the scanner and then installSkill (installed.ts).
 *
 * URLs. `https://` always; plain `http://` only to an address an allow_private entry opens (a
 * server on the operator's own network, where there may be no certificate to check): a public
 * address over http is FORBIDDEN, since anyone on the path could swap the skill. Every hop (the URL
 * and each redirect, at most 5) is checked after DNS: loopback, private, link-local and metadata
 * addresses are FORBIDDEN unless `allowPrivate` opens them (metadata never), and the connection is
 * pinned to the address checked. The body is capped at `maxBytes` (PAYLOAD_TOO_LARGE past it) and
 * the whole download at `timeoutMs` (MOVE_TIMEOUT). A 404 or 410 is NOT_FOUND, any other non-2xx
 * status PROVIDER_ERROR, as is a server that cannot be reached.
 *
 * What was fetched is told by its bytes first: gzip or zip magic means an archive, whatever the
 * name. Otherwise it is a SKILL.md when the URL's file is named SKILL.md or the server says
 * `text/markdown` or `text/plain`; an HTML page (a repository's web view of the file) is refused
 * with a hint to link the raw file, and anything else is UNSUPPORTED_MEDIA_TYPE.
 */
import { constants } from "node:fs";
import { lstat, open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { isSparError, SparError } from "../../sdk/errors.js";
import { classifyIp, type Ip } from "../web/address.js";
import { guardedGet, type Resolver, systemResolver } from "../web/fetch.js";
import {
  type AllowSetting,
  addressRefusal,
  hostKey,
  isMetadataName,
  parseAllowPrivate,
  urlPort,
} from "../web/policy.js";
import { archiveKind, readArchive } from "./archive.js";
import {
  FileCollector,
  refuse,
  type SkillFiles,
  type SkillLimits,
  shown,
  skillLimits,
  skillPath,
} from "./files.js";
import { type RepoArchive, type RepoSelect, readRepoArchive } from "./repo.js";
import { SKILL_FILE } from "./skill.js";

/** `[moves.skills] allow_private` (the skills plugin's setting), as refusals name it. */
export const SKILLS_ALLOW: AllowSetting = {
  name: "[moves.skills] allow_private",
  path: "moves.skills.allow_private",
  who: "skill install",
};

/** Where a skill may be fetched from, and the limits of the download. */
export interface FetchSkillOptions {
  /** allow_private entries: addresses, ranges and names (each optionally `:port`) that may be private. */
  allowPrivate: readonly string[];
  signal: AbortSignal;
  /** The most bytes downloaded (and, for a compressed answer, decoded). */
  maxBytes: number;
  /** The whole download, every redirect and the body included. */
  timeoutMs: number;
  /** The skill's limits; DEFAULT_LIMITS otherwise. */
  limits?: Partial<SkillLimits>;
  /** Which setting `allowPrivate` came from, for messages; SKILLS_ALLOW otherwise. */
  setting?: AllowSetting;
  /** Tests play DNS with this; the system resolver otherwise. */
  resolve?: Resolver;
  /** Tests trust a local TLS server's certificate with this. */
  ca?: string;
}

export const MAX_REDIRECTS = 5;
const ACCEPT = "text/markdown, text/plain;q=0.9, application/gzip;q=0.8, application/zip;q=0.8, */*;q=0.1";
const USER_AGENT = "Spar skill install";

/**
 * A skill's files from a URL: a SKILL.md, a .tar.gz or a .zip, through the fetch guard.
 *
 * @example
 * const files = await fetchSkillSource("https://example.org/review-code.tgz", {
 *   allowPrivate: [], signal: AbortSignal.timeout(60_000), maxBytes: 2 * 1024 * 1024, timeoutMs: 30_000,
 * });
 */
export async function fetchSkillSource(url: string, opts: FetchSkillOptions): Promise<SkillFiles> {
  const response = await fetchBytes(url, opts);
  return filesOf(
    response.body,
    [url, response.url],
    response.headers["content-type"],
    skillLimits(opts.limits),
  );
}

/** What a URL gave: the skills asked for, and what it resolved to (the commit a tarball names, or the final URL). */
export interface FetchedSkills extends RepoArchive {
  /** The commit id, when the archive names one; the URL the download ended at otherwise. */
  resolved: string;
}

/**
 * The skills at a URL: a .tar.gz of a repository or of one skill (repo.ts: every skill in it, or the
 * ones `select` names), or a single SKILL.md or .zip (one skill, at path ""). A tarball made by
 * `git archive` (GitHub's, any git host's) names its commit, which becomes `resolved`.
 *
 * @example
 * const { resolved, skills } = await fetchSkills(url, { path: "skills" }, opts, 64 * 1024 * 1024);
 */
export async function fetchSkills(
  url: string,
  select: RepoSelect,
  opts: FetchSkillOptions,
  maxRepoBytes: number,
): Promise<FetchedSkills> {
  const response = await fetchBytes(url, { ...opts, maxBytes: Math.max(opts.maxBytes, maxRepoBytes) });
  const kind = archiveKind(response.body);
  if (kind === "tar.gz" || kind === "tar") {
    const archive = readRepoArchive(response.body, select, opts.limits ?? {}, maxRepoBytes);
    return { ...archive, resolved: archive.commit ?? response.url };
  }
  if (response.body.length > opts.maxBytes) throw tooLarge(response.url, opts.maxBytes);
  if (select.path !== undefined) {
    throw new SparError(
      "NOT_FOUND",
      `${response.url} is one skill, not a repository: it has no "${select.path}"`,
    );
  }
  const files = filesOf(
    response.body,
    [url, response.url],
    response.headers["content-type"],
    skillLimits(opts.limits),
  );
  return { resolved: response.url, skills: [{ path: "", files }] };
}

/** The body at a URL, through the fetch guard: every hop checked, capped, timed. */
async function fetchBytes(url: string, opts: FetchSkillOptions) {
  const setting = opts.setting ?? SKILLS_ALLOW;
  const allow = parseAllowPrivate(opts.allowPrivate, setting);
  const response = await guardedGet(url, {
    resolve: opts.resolve ?? systemResolver,
    checkHost: (target) => {
      const key = hostKey(target.hostname);
      if (isMetadataName(key)) {
        throw new SparError("FORBIDDEN", `refused ${target.href}: ${key} is a cloud metadata service`);
      }
    },
    refuseAddress: (target, ip) =>
      addressRefusal(hostKey(target.hostname), ip, allow, urlPort(target)) ??
      plainHttpRefusal(target, ip, setting),
    maxRedirects: MAX_REDIRECTS,
    maxBytes: opts.maxBytes,
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
    headers: { "user-agent": USER_AGENT, accept: ACCEPT },
    onHeaders: ({ url: final, status, headers }) => {
      if (status === 404 || status === 410)
        throw new SparError("NOT_FOUND", `${final} answered ${status}: no such file`, { status });
      if (status < 200 || status > 299) throw new SparError("PROVIDER_ERROR", `${final} answered ${status}`);
      const length = Number(headers["content-length"]);
      if (length > opts.maxBytes) throw tooLarge(final, opts.maxBytes);
    },
    label: "skill install",
    ...(opts.ca ? { ca: opts.ca } : {}),
  });
  if (response.truncated) throw tooLarge(response.url, opts.maxBytes);
  return response;
}

const tooLarge = (url: string, max: number) =>
  refuse("download_too_large", `${url} is larger than the ${max} bytes a skill download may have`);

/** Plain http reaches only what allow_private opens: on the open internet, anyone on the path could swap the skill. */
function plainHttpRefusal(url: URL, ip: Ip, setting: AllowSetting): string | undefined {
  if (url.protocol !== "http:" || classifyIp(ip) !== "public") return undefined;
  return `skills are fetched over https; plain http only from an address ${setting.name} opens`;
}

/** What the body is: an archive by its bytes, else a SKILL.md by name or type. */
function filesOf(
  body: Buffer,
  urls: string[],
  contentType: string | undefined,
  limits: SkillLimits,
): SkillFiles {
  if (archiveKind(body)) return readArchive(body, limits);
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const files = urls.map((u) => new URL(u).pathname.split("/").at(-1) ?? "");
  const final = urls.at(-1) as string;
  if (type === "text/html" || type === "application/xhtml+xml") {
    throw refuse(
      "not_a_skill",
      `${final} is a web page (${type}), not a SKILL.md, .tar.gz or .zip: link to the raw file`,
    );
  }
  const named = files.some((f) => f.toLowerCase() === SKILL_FILE.toLowerCase());
  const archiveName = files.find((f) => /\.(?:zip|tgz|tar\.gz)$/i.test(f));
  if (archiveName && !named) {
    throw refuse(
      "unsupported_archive",
      `${final} is named like an archive (${archiveName}) but its bytes are neither a .tar.gz nor a .zip`,
    );
  }
  if (named || type === "text/markdown" || type === "text/x-markdown" || type === "text/plain") {
    if (body.includes(0)) throw refuse("not_a_skill", `${final} holds binary data, not a SKILL.md`);
    const collector = new FileCollector(limits);
    collector.put(collector.reserve(SKILL_FILE, body.length), body);
    return collector.finish(false);
  }
  throw refuse(
    "not_a_skill",
    `${final} is ${type ? type : "of no declared type"}: not a SKILL.md (text/markdown, text/plain), a .tar.gz or a .zip`,
  );
}

/**
 * A skill's files from a local folder: regular files and folders only. A symbolic link anywhere
 * inside is refused (FORBIDDEN, symlink), not followed, so nothing outside the folder is read; the
 * folder itself may be reached through a link (the path the user typed). Devices, FIFOs and sockets
 * are FORBIDDEN (special_file); paths, counts and sizes obey the same rules as an archive, except
 * that SKILL.md must be at the folder's root (no top folder is stripped). A missing folder is
 * NOT_FOUND, one that cannot be read STORE_FAILED.
 *
 * @example
 * const files = await readSkillFolder("./my-skill");
 */
export async function readSkillFolder(dir: string, limits: Partial<SkillLimits> = {}): Promise<SkillFiles> {
  const checked = skillLimits(limits);
  try {
    const root = await stat(dir);
    if (!root.isDirectory()) throw new SparError("VALIDATION_FAILED", `${dir} is not a folder`);
    const collector = new FileCollector(checked);
    await walk(dir, "", collector);
    return collector.finish(false);
  } catch (err) {
    if (isSparError(err)) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw new SparError("NOT_FOUND", `no folder ${dir}`);
    throw new SparError(
      "STORE_FAILED",
      `could not read ${dir}: ${(err as Error).message}`,
      {},
      { cause: err },
    );
  }
}

async function walk(root: string, relative: string, collector: FileCollector): Promise<void> {
  const names = (await readdir(join(root, relative))).sort();
  for (const name of names) {
    const path = relative ? `${relative}/${name}` : name;
    skillPath(path);
    const full = join(root, path);
    const info = await lstat(full);
    const quoted = JSON.stringify(shown(path));
    if (info.isSymbolicLink()) {
      throw refuse(
        "symlink",
        `${quoted} is a symbolic link; a skill folder holds regular files and folders only`,
        path,
      );
    }
    if (info.isDirectory()) {
      collector.folder(path);
      await walk(root, path, collector);
    } else if (info.isFile()) {
      const kept = collector.reserve(path, info.size);
      collector.put(kept, await readRegular(full, path, info.size, info.ino));
    } else {
      throw refuse(
        "special_file",
        `${quoted} is not a regular file; a skill folder holds regular files and folders only`,
        path,
      );
    }
  }
}

/**
 * A file's bytes, opened without following a link and checked to be the very file lstat saw, read
 * to exactly the size lstat gave: a file swapped or grown in between is refused, not half read.
 */
async function readRegular(full: string, path: string, size: number, ino: number): Promise<Buffer> {
  const handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.ino !== ino) {
      throw refuse("special_file", `${JSON.stringify(shown(path))} changed while it was read`, path);
    }
    const buffer = Buffer.alloc(size + 1);
    let read = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, read, buffer.length - read, read);
      if (bytesRead === 0 || read + bytesRead === buffer.length) {
        read += bytesRead;
        break;
      }
      read += bytesRead;
    }
    if (read !== size) {
      throw new SparError(
        "STORE_FAILED",
        `${JSON.stringify(shown(path))} changed size while it was read; try again`,
      );
    }
    return buffer.subarray(0, size);
  } finally {
    await handle.close();
  }
}
