/**
 * What a grant's `scope` adds to the file moves: the folders it names, each inside a folder of the
 * operator's `[moves.files] allowed_scopes`, and, in a turn another fighter started, only as far as
 * every fighter of the chain grants them (confine.ts opens the roots these give).
 */
import { join, resolve } from "node:path";
import { type Capability, SparError } from "../../sdk/index.js";

/** True when `path` is `folder` or lies below it (both absolute and normalized). */
export function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith("/") ? folder : `${folder}/`);
}

/** `~` and `~/…` mean the user's home; nothing else is expanded. */
export function expandHome(path: string, userHome: string): string {
  if (path === "~") return userHome;
  return path.startsWith("~/") ? join(userHome, path.slice(2)) : path;
}

const quoted = (path: string) => JSON.stringify(path);

/** The grant types whose `scope` names folders for the file moves. */
export const FILE_GRANTS: ReadonlySet<string> = new Set(["file_read", "file_write", "full_access"]);

/**
 * The folders every set grants: where two folders nest, the inner one (`/srv` and `/srv/site` give
 * `/srv/site`); where they do not, nothing. With one set, its folders.
 */
export function commonFolders(sets: readonly (readonly string[])[]): string[] {
  const [first = [], ...rest] = sets;
  let common = [...new Set(first)];
  for (const set of rest) {
    const next = new Set<string>();
    for (const a of common) {
      for (const b of set) {
        if (inside(a, b)) next.add(a);
        else if (inside(b, a)) next.add(b);
      }
    }
    common = [...next];
  }
  return common;
}

/**
 * The absolute folders a grant's `scope` names. A relative one or a `pattern` is refused, not
 * ignored; so is a folder outside every folder of `[moves.files] allowed_scopes` (CAPABILITY_DENIED):
 * a manifest may come over the API, and only the operator's config widens what a fighter may touch
 * beyond its workspace. Checked when the fighter is spawned and again at every call, so a folder the
 * operator no longer allows stops working.
 */
export function grantFolders(
  grant: Capability,
  userHome: string,
  allowedScopes: readonly string[],
): string[] {
  if (grant.pattern !== undefined && grant.type !== "full_access") {
    throw new SparError(
      "VALIDATION_FAILED",
      `this fighter's ${grant.type} grant has a pattern; file moves honour only scope (absolute folders), so the grant is refused rather than widened`,
    );
  }
  const scope =
    grant.scope === undefined ? [] : typeof grant.scope === "string" ? [grant.scope] : grant.scope;
  const allowed = allowedScopes.map((folder) => resolve(expandHome(folder, userHome)));
  return scope.map((entry) => {
    const folder = expandHome(entry, userHome);
    if (!folder.startsWith("/")) {
      throw new SparError(
        "VALIDATION_FAILED",
        `this fighter's ${grant.type} grant has scope ${quoted(entry)}, which is not an absolute folder (or ~/…)`,
      );
    }
    if (!allowed.some((root) => inside(resolve(folder), root))) {
      throw new SparError(
        "CAPABILITY_DENIED",
        `this fighter's ${grant.type} grant has scope ${quoted(entry)}, which lies outside every folder the ` +
          `operator allows in config.toml ([moves.files] allowed_scopes = ${JSON.stringify(allowedScopes)}); ` +
          "a fighter's manifest cannot widen its file moves beyond its workspace: the operator adds the folder " +
          "(or one above it) to allowed_scopes and restarts Spar",
        { setting: "moves.files.allowed_scopes" },
      );
    }
    return resolve(folder);
  });
}
