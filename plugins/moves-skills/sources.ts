import { isSparError, SparError } from "../../sdk/index.js";
import type { RepoSkill } from "../../sdk/kits/skill-install.js";
import type { SkillsSettings } from "./settings.js";

/** Skills fetched from a remote source, with what the lock records about where they came from. */
export interface Fetched {
  /** The source in its one written form: `github:owner/repo[/path][@ref]` or the URL. */
  source: string;
  /** The ref asked for, when the source names one. */
  ref?: string;
  /** The commit the archive names, or the URL the download ended at. */
  resolved: string;
  skills: RepoSkill[];
}

/** What to take from a source: its folder (`path`, else the one the source names), the skills named, another ref. */
export interface Pick {
  path?: string;
  names?: readonly string[];
  ref?: string;
}

export const isRemote = (source: string) => /^https?:\/\//i.test(source) || /^github:/i.test(source);

/**
 * The skills of a `github:` source (the tarball of its ref from `github_archive_url`) or of an
 * https URL (a SKILL.md, a .zip, or a .tar.gz of one skill or a whole repository), through the
 * fetch guard: private addresses only where allow_private opens them, on every redirect too.
 */
export async function fetchRemote(
  source: string,
  pick: Pick,
  settings: SkillsSettings,
  signal: AbortSignal,
): Promise<Fetched> {
  const kit = await import("../../sdk/kits/skill-install.js");
  const opts = {
    allowPrivate: settings.allow_private,
    signal,
    maxBytes: settings.max_download_bytes,
    timeoutMs: settings.download_timeout_s * 1000,
  };
  const select = {
    ...(pick.names?.length ? { names: pick.names } : {}),
  };
  if (!kit.isGithubSource(source)) {
    if (pick.ref !== undefined) {
      throw new SparError(
        "VALIDATION_FAILED",
        `${source} is a URL, not a github: source: it has no ref to change`,
      );
    }
    const got = await kit.fetchSkills(
      source,
      { ...select, ...(pick.path ? { path: pick.path } : {}) },
      opts,
      settings.max_repo_bytes,
    );
    return { source, resolved: got.resolved, skills: got.skills };
  }
  const parsed = kit.parseGithubSource(source);
  const spec = { ...parsed, ...(pick.ref === undefined ? {} : { ref: pick.ref }) };
  const written = kit.formatGithubSource(spec);
  const url = kit.githubArchiveUrl(spec, settings.github_archive_url);
  const path = pick.path ?? spec.path;
  try {
    const got = await kit.fetchSkills(
      url,
      { ...select, ...(path ? { path } : {}) },
      opts,
      settings.max_repo_bytes,
    );
    return {
      source: written,
      ...(spec.ref === undefined ? {} : { ref: spec.ref }),
      resolved: got.resolved,
      skills: got.skills,
    };
  } catch (err) {
    if (isSparError(err, "NOT_FOUND") && err.extra.status !== undefined) {
      const ref = spec.ref === undefined ? "default branch" : `ref "${spec.ref}"`;
      throw new SparError(
        "NOT_FOUND",
        `${written}: ${spec.owner}/${spec.repo} has no ${ref} (or there is no such repository): ${url} answered ${String(err.extra.status)}`,
        { source: written, ...(spec.ref === undefined ? {} : { ref: spec.ref }) },
      );
    }
    if (isSparError(err) && err.extra.reason === "missing_skill_md") {
      throw new SparError("NOT_FOUND", `${written} holds no skill: no SKILL.md anywhere in it`, {
        source: written,
      });
    }
    if (isSparError(err, "NOT_FOUND")) {
      throw new SparError("NOT_FOUND", `${written}: ${err.message}`, err.extra);
    }
    throw err;
  }
}
