import { basename } from "node:path";
import type { EventBus, Logger, MoveDeclaration, RouteRegistry } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { FREE_OBJECT, openAnswer } from "../../sdk/kits/http.js";
import type { RepoSkill, SkillFiles } from "../../sdk/kits/skill-install.js";
import type { Finding, Skill } from "../../sdk/kits/skills.js";
import { bundledSwitch, DEFAULT_LIMITS, SKILL_FILE, SKILL_NAME } from "../../sdk/kits/skills.js";
import {
  announceInstalled,
  examine,
  installSet,
  modifiedLine,
  type Origin,
  refuseHigh,
} from "./install-set.js";
import type { SkillsSettings } from "./settings.js";

/** What a scan found, one object a finding. */
const FINDINGS = { type: "array", items: FREE_OBJECT } as const;

import { fetchRemote, isRemote } from "./sources.js";

/**
 * A skill's files sent in the body (`spar move install ./folder`): the most a skill may hold
 * (DEFAULT_LIMITS.maxTotalBytes, 16 MiB) as base64, with room for the JSON around it. More than the
 * API's 1 MiB default, so a skill of a few MiB installs from a folder as it does from a URL.
 */
const UPLOAD_BYTES = Math.ceil((DEFAULT_LIMITS.maxTotalBytes * 4) / 3) + 1024 * 1024;

export interface InstallDeps {
  home: string;
  settings: SkillsSettings;
  events: EventBus;
  log: Logger;
  /** Forget the catalog: the next use reads it again. */
  reload(): void;
  skills(): Promise<{ skills: Skill[]; byName: Map<string, Skill>; bundled: Map<string, Skill> }>;
  moves(): Promise<MoveDeclaration[]>;
}

/** Body of install and scan: a bundled name, a URL or a `github:` source (`source`), or the files of a folder (`files`, base64). */
const SOURCE_BODY = {
  type: "object",
  additionalProperties: false,
  properties: {
    source: { type: "string", minLength: 1, maxLength: 4096 },
    files: {
      type: "object",
      // The limits of files.ts (DEFAULT_LIMITS), each file base64: the install checks them exactly.
      maxProperties: DEFAULT_LIMITS.maxFiles,
      additionalProperties: { type: "string", maxLength: Math.ceil(DEFAULT_LIMITS.maxFileBytes / 3) * 4 },
      description: "path inside the skill folder → content, base64",
    },
    skills: {
      type: "array",
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      items: { type: "string", pattern: "^[a-z0-9][a-z0-9-]{0,63}$" },
      description: "of a source holding many skills (a repository), only these, by name",
    },
    force: { type: "boolean" },
    replace: { type: "boolean" },
    local: {
      type: "object",
      additionalProperties: false,
      required: ["path", "kind"],
      properties: {
        path: { type: "string", minLength: 1, maxLength: 4096 },
        kind: { enum: ["folder", "archive"] },
      },
      description: "with files: the folder or archive on the client's machine they were read from",
    },
  },
};

/** Where uploaded files came from, as the client said (the daemon never reads a client's path). */
type LocalOrigin = { path: string; kind: "folder" | "archive" };

interface SourceRequest {
  source?: string;
  files?: Record<string, string>;
  skills?: string[];
  local?: LocalOrigin;
}

/** The scan every install and update runs, knowing the moves there are (for undeclared capabilities). */
export function scanner(deps: Pick<InstallDeps, "moves">) {
  return async (files: SkillFiles): Promise<Finding[]> => {
    const known = new Map((await deps.moves()).map((m) => [m.name, m.capability] as const));
    const { scanSkill } = await import("../../sdk/kits/skill-install.js");
    return scanSkill(files, { moves: known });
  };
}

/** Severity counts, for answers and the CLI's summary line. */
export function summarize(findings: readonly Finding[]) {
  return {
    high: findings.filter((f) => f.severity === "high").length,
    medium: findings.filter((f) => f.severity === "medium").length,
    low: findings.filter((f) => f.severity === "low").length,
  };
}

/**
 * `POST /api/v1/moves/install`, `POST /api/v1/moves/scan`, `DELETE /api/v1/moves/:name`. Every
 * install is scanned first and refused on a high finding unless `force` (recorded in the lock file,
 * shown by `spar security audit`); the installed set and its lock change all at once or not at all,
 * a repository's many skills included.
 */
export function installRoutes(routes: RouteRegistry, deps: InstallDeps): void {
  const { home, settings } = deps;

  /** The skills a request names: uploaded files (one skill), a remote source (one or many), or none (a name). */
  async function skillsOf(
    body: SourceRequest,
    signal: AbortSignal,
  ): Promise<Origin & { skills?: RepoSkill[] }> {
    if ((body.source === undefined) === (body.files === undefined)) {
      throw new SparError(
        "VALIDATION_FAILED",
        "give exactly one of source (a skill name, an https URL or github:owner/repo[/path][@ref]) and files",
      );
    }
    if (body.files) {
      const files = new Map(
        Object.entries(body.files).map(([path, b64]) => [path, Buffer.from(b64, "base64")]),
      ) as SkillFiles;
      return { source: body.local ? `local:${body.local.path}` : "upload", skills: [{ path: "", files }] };
    }
    const source = body.source as string;
    if (!isRemote(source)) return { source };
    const got = await fetchRemote(source, body.skills ? { names: body.skills } : {}, settings, signal);
    return {
      source: got.source,
      ...(got.ref === undefined ? {} : { ref: got.ref }),
      resolved: got.resolved,
      skills: got.skills,
    };
  }

  const scan = scanner(deps);

  routes.add({
    listener: "api",
    method: "POST",
    path: "/api/v1/moves/scan",
    operationId: "scanSkill",
    summary: "Scan a skill (a source, or uploaded files) for what it would do, without installing it",
    response: { "200": openAnswer({ source: { type: "string" }, findings: FINDINGS }) },
    bodyLimit: UPLOAD_BYTES,
    body: {
      ...SOURCE_BODY,
      properties: {
        source: SOURCE_BODY.properties.source,
        files: SOURCE_BODY.properties.files,
        skills: SOURCE_BODY.properties.skills,
        local: SOURCE_BODY.properties.local,
      },
    },
    async handler({ body, signal }) {
      const got = await skillsOf(body as SourceRequest, signal);
      let skills = got.skills;
      if (!skills) {
        const skill = (await deps.skills()).byName.get(got.source);
        if (!skill)
          throw new SparError(
            "NOT_FOUND",
            `no skill named "${got.source}"; give a name, a folder, an https URL or a github: source`,
          );
        const { readSkillFolder } = await import("../../sdk/kits/skill-install.js");
        skills = [{ path: "", files: await readSkillFolder(skill.dir) }];
      }
      const findings: (Finding & { skill?: string })[] = [];
      for (const { path, files } of skills) {
        const found = await scan(files);
        const skill = path === "" ? undefined : path.split("/").at(-1);
        findings.push(...found.map((f) => (skill && skills.length > 1 ? { ...f, skill } : f)));
      }
      return {
        body: {
          source: got.source,
          ...(got.resolved ? { resolved: got.resolved } : {}),
          findings,
          ...summarize(findings),
        },
      };
    },
  });

  routes.add({
    listener: "api",
    method: "POST",
    path: "/api/v1/moves/install",
    operationId: "installSkill",
    summary: "Install a skill (201), or enable a bundled one again (200)",
    response: {
      "200": openAnswer({ skill: FREE_OBJECT, findings: FINDINGS }, "a bundled skill enabled again"),
      "201": openAnswer({
        skill: FREE_OBJECT,
        skills: { type: "array", items: FREE_OBJECT },
        findings: FINDINGS,
      }),
    },
    bodyLimit: UPLOAD_BYTES,
    body: SOURCE_BODY,
    async handler({ body, signal }) {
      const request = body as SourceRequest & { force?: boolean; replace?: boolean };
      const got = await skillsOf(request, signal);
      const catalog = await deps.skills();
      if (!got.skills) return enableBundled(got.source, catalog);
      const bundled = new Set(catalog.bundled.keys());
      const set = await examine(got.skills, scan, bundled, request.skills);
      const only = set.length === 1 ? set[0] : undefined;
      // The Agent Skills standard: a skill's name is its folder's. Installing under the other name
      // would leave the user looking for a skill that is not there.
      const folder = request.local?.kind === "folder" ? basename(request.local.path) : undefined;
      if (only && folder !== undefined && folder !== only.name) {
        throw new SparError(
          "VALIDATION_FAILED",
          `the folder is named "${folder}" but its ${SKILL_FILE} names the skill "${only.name}": the Agent Skills standard wants them equal; rename the folder or the name, then install again`,
          { folder, name: only.name },
        );
      }
      refuseHigh(set, request.force === true);
      const origin: Origin = {
        source: got.source,
        ...(got.ref === undefined ? {} : { ref: got.ref }),
        ...(got.resolved === undefined ? {} : { resolved: got.resolved }),
      };
      const { installed, modified } = await installSet(home, set, origin, {
        replace: request.replace === true,
        reserved: bundled,
      });
      deps.reload();
      announceInstalled(deps.events, installed);
      const findings = set.flatMap((c) =>
        c.findings.map((f) => (set.length > 1 ? { ...f, skill: c.name } : f)),
      );
      return {
        status: 201,
        body: {
          skill: installed[0],
          skills: installed,
          findings,
          ...summarize(findings),
          ...(modified.length ? { modified: modified.map(modifiedLine) } : {}),
        },
      };
    },
  });

  /** A bundled skill's name: enable it again (spar move remove disables one). */
  function enableBundled(name: string, catalog: Awaited<ReturnType<InstallDeps["skills"]>>) {
    const skill = catalog.bundled.get(name);
    if (!skill) {
      if (!SKILL_NAME.test(name)) {
        throw new SparError(
          "VALIDATION_FAILED",
          `"${name}" is neither a skill name, an http(s) URL nor a github:owner/repo[/path][@ref] source`,
        );
      }
      throw new SparError("NOT_FOUND", `no bundled skill is named "${name}"; spar move search finds one`);
    }
    const changed = bundledSwitch(home, skill.name, true);
    deps.reload();
    if (changed)
      deps.events.publish({
        kind: "move.installed",
        name: skill.name,
        source: "bundled",
        version: skill.version,
        forced: false,
      });
    return {
      status: 200,
      body: {
        skill: { name: skill.name, version: skill.version, source: "bundled" },
        findings: [],
        enabled: changed,
      },
    };
  }

  routes.add({
    listener: "api",
    method: "DELETE",
    path: "/api/v1/moves/:name",
    operationId: "removeSkill",
    summary: "Remove an installed skill, or disable a bundled one",
    response: { "200": openAnswer({ removed: { type: "string" }, source: { type: "string" } }) },
    async handler({ params }) {
      const name = params.name ?? "";
      const catalog = await deps.skills();
      const skill = catalog.byName.get(name) ?? catalog.bundled.get(name);
      if (!skill) throw new SparError("NOT_FOUND", `no skill named "${name}" is installed`);
      if (skill.source === "bundled") {
        bundledSwitch(home, name, false);
      } else {
        const { removeSkill } = await import("../../sdk/kits/skill-install.js");
        await removeSkill(home, name);
      }
      deps.reload();
      deps.events.publish({ kind: "move.removed", name, source: skill.source });
      return { body: { removed: name, source: skill.source } };
    },
  });
}
