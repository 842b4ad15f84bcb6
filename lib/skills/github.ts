/**
 * `github:owner/repo[/path][@ref]`: a skill (or a repository of skills) as GitHub holds it, fetched
 * as the tarball of that ref from GitHub's codeload (`<base>/<owner>/<repo>/tar.gz/<ref>`; the
 * default branch, `HEAD`, when no ref is given). The base is `[moves.skills] github_archive_url`, so
 * a mirror or a test's fake can stand in for codeload.
 */
import { SparError } from "../../sdk/errors.js";
import { COMMIT_ID } from "./repo.js";

export const GITHUB_PREFIX = "github:";
/** Where `github:` sources are fetched unless `[moves.skills] github_archive_url` says otherwise. */
export const DEFAULT_GITHUB_ARCHIVE_URL = "https://codeload.github.com";
const FORM = "github:owner/repo[/path][@ref]";

/** A parsed `github:` source. */
export interface GithubSource {
  owner: string;
  repo: string;
  /** A folder of the repository (`skills/review-code`), `/`-separated; absent: the whole repository. */
  path?: string;
  /** A branch, tag or commit; absent: the default branch. */
  ref?: string;
}

const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;
const SEGMENT = /^[A-Za-z0-9._-]{1,255}$/;
// git check-ref-format's rules that matter in a URL: no "..", no leading "-" or "/", no "@{", no
// spaces or control characters, no "~^:?*[\".
const REF = /^(?!-)(?!\/)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/+-]{1,200}(?<!\/)(?<!\.lock)(?<!\.)$/;

/** Whether an install source is a `github:owner/repo[/path][@ref]` one (parsed by parseGithubSource). */
export const isGithubSource = (source: string) => source.toLowerCase().startsWith(GITHUB_PREFIX);

/**
 * Reads a `github:` source; VALIDATION_FAILED, with the expected form, for anything else.
 *
 * @example
 * parseGithubSource("github:acme/skills/skills/review@v1.2.0");
 * // { owner: "acme", repo: "skills", path: "skills/review", ref: "v1.2.0" }
 */
export function parseGithubSource(source: string): GithubSource {
  const bad = (why: string) =>
    new SparError(
      "VALIDATION_FAILED",
      `${JSON.stringify(source.slice(0, 300))} is not a github: source (${why}); the form is ${FORM}`,
      { expected: FORM },
    );
  if (!isGithubSource(source)) throw bad("it does not start with github:");
  const rest = source.slice(GITHUB_PREFIX.length);
  const at = rest.indexOf("@");
  const where = at < 0 ? rest : rest.slice(0, at);
  const ref = at < 0 ? undefined : rest.slice(at + 1);
  const parts = where.replace(/\/+$/, "").split("/");
  if (parts.includes("")) throw bad("an empty path segment");
  const [owner, repo, ...path] = parts;
  if (owner === undefined || repo === undefined) throw bad("owner and repository are both needed");
  if (!OWNER.test(owner)) throw bad(`"${owner}" is not a GitHub owner name`);
  if (!REPO.test(repo) || repo === "." || repo === "..") throw bad(`"${repo}" is not a repository name`);
  if (path.some((p) => !SEGMENT.test(p) || p === "." || p === "..")) throw bad("the path has a bad segment");
  if (ref !== undefined && !REF.test(ref)) throw bad(`"${ref}" is not a branch, tag or commit`);
  return {
    owner,
    repo: repo.replace(/\.git$/, ""),
    ...(path.length > 0 ? { path: path.join("/") } : {}),
    ...(ref === undefined ? {} : { ref }),
  };
}

/** The source written back in its one form: `github:owner/repo[/path][@ref]`. */
export function formatGithubSource(source: GithubSource): string {
  const where = [source.owner, source.repo, ...(source.path ? [source.path] : [])].join("/");
  return `${GITHUB_PREFIX}${where}${source.ref === undefined ? "" : `@${source.ref}`}`;
}

/** The tarball's URL under `base` (codeload's shape): `<base>/<owner>/<repo>/tar.gz/<ref or HEAD>`. */
export function githubArchiveUrl(source: GithubSource, base = DEFAULT_GITHUB_ARCHIVE_URL): string {
  const ref = (source.ref ?? "HEAD").split("/").map(encodeURIComponent).join("/");
  return `${base.replace(/\/+$/, "")}/${encodeURIComponent(source.owner)}/${encodeURIComponent(source.repo)}/tar.gz/${ref}`;
}

/** A ref that is a whole commit id never moves: updating it needs another ref. */
export const isPinnedRef = (ref: string | undefined) => ref !== undefined && COMMIT_ID.test(ref);
