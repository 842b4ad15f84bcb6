// A stand-in for GitHub's codeload on 127.0.0.1: `GET /<owner>/<repo>/tar.gz/<ref>` answers with
// `git archive --format=tar.gz --prefix=<repo>-<ref>/ <commit>` of a real git repository the test
// made in a temp folder, so the tarball is byte for byte what git writes (its pax global header
// carries the commit id, as GitHub's do). A branch, tag or commit (whole or abbreviated) resolves as
// `git rev-parse` resolves it; `HEAD` is the default branch; anything else, and an unknown
// repository, is 404. `redirect(path, location)` makes a path answer 302 elsewhere.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { startFakeHttp } from "./http-fake.js";

export interface FakeGitArchive {
  /** `http://127.0.0.1:<port>`: what `[moves.skills] github_archive_url` points at. */
  readonly url: string;
  readonly port: number;
  /** Serves `dir` (a git repository) as `<owner>/<repo>`. */
  serve(ownerRepo: string, dir: string): void;
  /** Answers `path` (e.g. `/acme/skills/tar.gz/main`) with a 302 to `location`. */
  redirect(path: string, location: string): void;
  /** Every path asked for, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

export async function startFakeGitArchive(): Promise<FakeGitArchive> {
  const repos = new Map<string, string>();
  const redirects = new Map<string, string>();
  const requests: string[] = [];
  const http = await startFakeHttp(async (req, res) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    requests.push(path);
    const location = redirects.get(path);
    if (location) {
      res.writeHead(302, { location }).end();
      return;
    }
    const match = /^\/([^/]+)\/([^/]+)\/tar\.gz\/(.+)$/.exec(path);
    const dir = match ? repos.get(`${match[1]}/${match[2]}`) : undefined;
    const ref = match ? decodeURIComponent(match[3] as string) : "";
    const commit = dir ? resolveRef(dir, ref) : undefined;
    if (!match || !dir || !commit) {
      res.writeHead(404, { "content-type": "text/plain" }).end("404: Not Found");
      return;
    }
    const prefix = `${match[2]}-${ref === "HEAD" ? commit : ref.replaceAll("/", "-")}/`;
    const tarball = execFileSync("git", ["archive", "--format=tar.gz", `--prefix=${prefix}`, commit], {
      cwd: dir,
      maxBuffer: 256 * 1024 * 1024,
    });
    res.writeHead(200, {
      "content-type": "application/x-gzip",
      "content-disposition": `attachment; filename=${prefix.slice(0, -1)}.tar.gz`,
    });
    res.end(tarball);
  });
  return {
    url: `http://127.0.0.1:${http.port}`,
    port: http.port,
    serve: (ownerRepo, dir) => void repos.set(ownerRepo, dir),
    redirect: (path, location) => void redirects.set(path, location),
    requests,
    close: () => http.close(),
  };
}

function resolveRef(dir: string, ref: string): string | undefined {
  if (ref.startsWith("-")) return undefined;
  try {
    return execFileSync("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], {
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return undefined;
  }
}

const GIT_ENV = {
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.org",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.org",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};

/** A new git repository at `dir` whose default branch is `main`. */
export function gitInit(dir: string): void {
  mkdirSync(dir, { recursive: true });
  git(dir, ["init", "--quiet", "--initial-branch=main"]);
}

/** Writes `files` (path → text) into the repository and commits them all; returns the commit id. */
export function gitCommit(dir: string, files: Record<string, string>, message = "change"): string {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  git(dir, ["add", "--all"]);
  git(dir, ["commit", "--quiet", "--allow-empty", "-m", message]);
  return git(dir, ["rev-parse", "HEAD"]).trim();
}

export function git(dir: string, args: string[]): string {
  return execFileSync("git", args, { cwd: dir, encoding: "utf8", env: { ...process.env, ...GIT_ENV } });
}
