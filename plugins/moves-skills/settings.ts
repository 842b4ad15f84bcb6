/** `[moves.skills]` with its defaults (plugin.json holds the same defaults and the schema). */
export interface SkillsSettings {
  /** Skills named beside a message, at most. 0: none. */
  relevant: number;
  /** The least ranking score a skill needs to be named beside a message. */
  min_score: number;
  /** Past this many tools a fighter may use, only `core` and the meta moves are offered at first. */
  defer_above: number;
  /** The moves always offered when the rest are deferred. */
  core: string[];
  /** Private addresses a skill URL may be installed from (`127.0.0.1:8080`, `intranet.local`). */
  allow_private: string[];
  /** The most bytes a skill download may have. */
  max_download_bytes: number;
  download_timeout_s: number;
  /** Where `github:` sources are fetched: `<url>/<owner>/<repo>/tar.gz/<ref>` (codeload's shape). */
  github_archive_url: string;
  /** The most a repository archive (a `github:` tarball, a git host's archive URL) may unpack to. */
  max_repo_bytes: number;
}
