import { lstat } from "node:fs/promises";
import { join } from "node:path";
import type { RouteRegistry } from "../../sdk/index.js";
import { isSparError, SparError } from "../../sdk/index.js";
import { FREE_OBJECT, openAnswer } from "../../sdk/kits/http.js";
import type { LockEntry, LockFinding } from "../../sdk/kits/skill-install.js";
import type { Finding } from "../../sdk/kits/skills.js";
import { SKILL_NAME } from "../../sdk/kits/skills.js";
import { type InstallDeps, scanner } from "./install-routes.js";
import {
  announceInstalled,
  type Candidate,
  examine,
  installSet,
  modifiedLine,
  type Origin,
  refuseHigh,
} from "./install-set.js";
import { type Fetched, fetchRemote, isRemote } from "./sources.js";

const NAME = { type: "string", pattern: "^[a-z0-9][a-z0-9-]{0,63}$" };
const REF = { type: "string", minLength: 1, maxLength: 200 };

/** What `update` found for one installed skill. */
export interface UpdatePlan {
  name: string;
  /** `changed`: the source holds other files; `up_to_date`; `pinned` (a commit id); `local` (nothing to fetch); `gone` (no longer at its path); `error`. */
  status: "changed" | "up_to_date" | "pinned" | "local" | "gone" | "error";
  source: string;
  message?: string;
  from?: { version: string; resolved?: string; ref?: string };
  to?: { version: string; resolved: string; ref?: string; sha256: string };
  files?: { added: string[]; removed: string[]; changed: string[] };
  findings?: { new: Finding[]; removed: LockFinding[] };
  high?: number;
  error?: { code: string; message: string };
}

/**
 * `GET /api/v1/moves/skills/:name` (where an installed skill came from, its files and findings),
 * `GET /api/v1/moves/verify` (the installed files against the lock's hashes), `POST
 * /api/v1/moves/update` (the same source's newest ref: a plan, or with `install` the install of it).
 */
export function lockRoutes(routes: RouteRegistry, deps: InstallDeps): void {
  const { home, settings } = deps;
  const scan = scanner(deps);
  const kit = () => import("../../sdk/kits/skill-install.js");

  routes.add({
    listener: "api",
    method: "GET",
    path: "/api/v1/moves/skills/:name",
    operationId: "getSkill",
    summary: "Show a skill: its folder, its lock entry and its files",
    response: { "200": openAnswer({ name: { type: "string" }, dir: { type: "string" } }) },
    params: { type: "object", properties: { name: NAME } },
    async handler({ params }) {
      const name = params.name ?? "";
      const entry = (await (await kit()).readLock(home)).skills[name];
      if (!entry) {
        const bundled = (await deps.skills()).bundled.get(name);
        if (bundled) {
          return { body: { name, source: "bundled", version: bundled.version, dir: bundled.dir } };
        }
        throw new SparError("NOT_FOUND", `no installed skill is named "${name}"`, { name });
      }
      const dir = join(home, "skills", name);
      const files = await Promise.all(
        Object.entries(entry.files ?? {}).map(async ([path, sha256]) => {
          const info = await lstat(join(dir, path)).catch(() => null);
          return { path, sha256, size: info?.isFile() ? info.size : null };
        }),
      );
      return { body: { name, dir, ...entry, files: entry.files ? files : null } };
    },
  });

  routes.add({
    listener: "api",
    method: "GET",
    path: "/api/v1/moves/verify",
    operationId: "verifySkills",
    summary: "Check installed skills' files against their lock (?name= for one)",
    query: { type: "object", properties: { name: { type: "string" } } },
    response: {
      "200": openAnswer({ ok: { type: "boolean" }, skills: { type: "array", items: FREE_OBJECT } }),
    },
    async handler({ query }) {
      const name = query.name;
      const { readLock, verifyInstalled } = await kit();
      if (name !== undefined) {
        if (!SKILL_NAME.test(name))
          throw new SparError("VALIDATION_FAILED", `"${name.slice(0, 64)}" is not a skill name`);
        if (!(await readLock(home)).skills[name]) {
          throw new SparError("NOT_FOUND", `no installed skill is named "${name}"`, { name });
        }
      }
      const skills = await verifyInstalled(home, name === undefined ? undefined : [name]);
      return { body: { ok: skills.every((s) => s.ok), skills } };
    },
  });

  routes.add({
    listener: "api",
    method: "POST",
    path: "/api/v1/moves/update",
    operationId: "updateSkills",
    summary: "Check installed skills for updates, and install them when asked",
    response: {
      "200": openAnswer({
        skills: { type: "array", items: FREE_OBJECT },
        installed: { type: "array", items: { type: "string" } },
      }),
    },
    body: {
      type: "object",
      additionalProperties: false,
      properties: {
        name: NAME,
        ref: { ...REF, description: "another branch, tag or commit for a github: source (with name)" },
        install: { type: "boolean", description: "install what changed; without it, only the plan" },
        force: { type: "boolean" },
        expect: {
          type: "object",
          maxProperties: 1000,
          additionalProperties: { type: "string", pattern: "^[0-9a-f]{64}$" },
          description:
            "name → the sha256 the plan showed: installed only if the source still holds exactly that",
        },
      },
    },
    async handler({ body, signal }) {
      const request = body as {
        name?: string;
        ref?: string;
        install?: boolean;
        force?: boolean;
        expect?: Record<string, string>;
      };
      if (request.ref !== undefined && request.name === undefined) {
        throw new SparError(
          "VALIDATION_FAILED",
          "--ref moves one skill: name it (spar move update <name> --ref <ref>)",
        );
      }
      const { readLock } = await kit();
      const lock = await readLock(home);
      if (request.name !== undefined && !lock.skills[request.name]) {
        const bundled = (await deps.skills()).bundled.has(request.name);
        throw new SparError(
          "NOT_FOUND",
          bundled
            ? `"${request.name}" is a bundled skill: it is updated with Spar itself`
            : `no installed skill is named "${request.name}"`,
          { name: request.name },
        );
      }
      const names = request.name !== undefined ? [request.name] : Object.keys(lock.skills).sort();
      const { plans, candidates } = await plan(names, lock.skills, request.ref, signal);
      if (request.install !== true) return { body: { skills: plans, installed: [] } };
      const changed = plans.filter((p) => p.status === "changed");
      const set = changed.map((p) => candidates.get(p.name) as Candidate & { origin: Origin });
      if (request.expect) {
        const stale = changed.filter((p) => request.expect?.[p.name] !== p.to?.sha256);
        if (stale.length > 0) {
          throw new SparError(
            "CONFLICT",
            `the source of ${stale.map((p) => p.name).join(", ")} changed since the update was shown; nothing was installed: run spar move update again`,
          );
        }
      }
      if (set.length === 0) return { body: { skills: plans, installed: [] } };
      refuseHigh(set, request.force === true);
      const bundled = new Set((await deps.skills()).bundled.keys());
      const { installed, modified } = await installSet(
        home,
        set,
        (c) => (c as Candidate & { origin: Origin }).origin,
        { replace: true, reserved: bundled },
      );
      deps.reload();
      announceInstalled(deps.events, installed);
      return {
        body: {
          skills: plans,
          installed: installed.map((e) => e.name),
          ...(modified.length ? { modified: modified.map(modifiedLine) } : {}),
        },
      };
    },
  });

  /** Each named skill's source fetched (once per source and ref), and what would change. */
  async function plan(
    names: readonly string[],
    entries: Record<string, LockEntry>,
    ref: string | undefined,
    signal: AbortSignal,
  ) {
    const { isGithubSource, isPinnedRef, fileHashes, skillDigest } = await kit();
    const plans: UpdatePlan[] = [];
    const candidates = new Map<string, Candidate & { origin: Origin }>();
    const fetched = new Map<string, Promise<Fetched>>();
    const bundled = new Set((await deps.skills()).bundled.keys());
    for (const name of names) {
      const entry = entries[name] as LockEntry;
      const base = { name, source: entry.source };
      if (!isRemote(entry.source)) {
        plans.push({
          ...base,
          status: "local",
          message: `installed from ${entry.source}: nothing to fetch; install it again with --replace`,
        });
        continue;
      }
      if (ref === undefined && isGithubSource(entry.source) && isPinnedRef(entry.ref)) {
        plans.push({
          ...base,
          status: "pinned",
          message: `pinned to ${entry.ref}: nothing to update (--ref <branch, tag or commit> moves it)`,
        });
        continue;
      }
      // Only the skill's own folder is read: another skill of the repository that no longer reads
      // (a link, a limit) is none of this one's business.
      const key = `${entry.source}\n${ref ?? ""}\n${entry.path ?? ""}`;
      if (!fetched.has(key)) {
        const pick = { ...(ref === undefined ? {} : { ref }), ...(entry.path ? { path: entry.path } : {}) };
        fetched.set(key, fetchRemote(entry.source, pick, settings, signal));
      }
      const from = {
        version: entry.version,
        ...(entry.resolved ? { resolved: entry.resolved } : {}),
        ...(entry.ref ? { ref: entry.ref } : {}),
      };
      let got: Fetched;
      try {
        got = await (fetched.get(key) as Promise<Fetched>);
      } catch (err) {
        // A skill no longer at its folder: said as such; any other failure stops a one-skill update.
        if (isSparError(err, "NOT_FOUND") && err.extra.path !== undefined) {
          plans.push({ ...base, status: "gone", from, message: err.message });
          continue;
        }
        if (!isSparError(err) || names.length === 1) throw err;
        plans.push({ ...base, status: "error", error: { code: err.code, message: err.message } });
        continue;
      }
      const found = got.skills.find((s) => s.path === (entry.path ?? ""));
      if (!found) {
        plans.push({
          ...base,
          status: "gone",
          from,
          message: `${got.source} (at ${got.resolved}) holds no skill at ${entry.path ? `"${entry.path}"` : "its root"} any more`,
        });
        continue;
      }
      const digest = skillDigest(found.files);
      const to = {
        resolved: got.resolved,
        ...(got.ref ? { ref: got.ref } : {}),
        sha256: digest,
      };
      if (digest === entry.sha256) {
        plans.push({ ...base, status: "up_to_date", from, to: { version: entry.version, ...to } });
        continue;
      }
      const [candidate] = await examine([found], scan, bundled);
      if (!candidate || candidate.name !== name) {
        plans.push({
          ...base,
          status: "gone",
          from,
          message: `the skill at ${entry.path ?? "the root"} of ${got.source} is now named "${candidate?.name}"`,
        });
        continue;
      }
      const origin: Origin = {
        source: got.source,
        ...(got.ref ? { ref: got.ref } : {}),
        resolved: got.resolved,
      };
      candidates.set(name, { ...candidate, origin });
      plans.push({
        ...base,
        source: got.source,
        status: "changed",
        from,
        to: { version: candidate.version, ...to },
        files: filesDiff(entry.files ?? {}, fileHashes(found.files)),
        findings: findingsDiff(entry.findings, candidate.findings),
        high: candidate.high,
      });
    }
    return { plans, candidates };
  }
}

function filesDiff(before: Record<string, string>, after: Record<string, string>) {
  const added = Object.keys(after).filter((p) => !(p in before));
  const removed = Object.keys(before).filter((p) => !(p in after));
  const changed = Object.keys(after).filter((p) => p in before && before[p] !== after[p]);
  return { added: added.sort(), removed: removed.sort(), changed: changed.sort() };
}

/** High and medium findings the new files have and the installed ones had not, and the other way round. */
function findingsDiff(before: readonly LockFinding[], after: readonly Finding[]) {
  const key = (f: { rule: string; file: string; message?: string }) =>
    `${f.rule}\n${f.file}\n${f.message ?? ""}`;
  const kept = after.filter((f) => f.severity === "high" || f.severity === "medium");
  const old = new Set(before.map(key));
  const now = new Set(kept.map(key));
  return { new: kept.filter((f) => !old.has(key(f))), removed: before.filter((f) => !now.has(key(f))) };
}
