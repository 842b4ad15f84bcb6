import { basename } from "node:path";
import type { EventBus, Logger, MoveDeclaration, RouteRegistry } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import type { SkillFiles } from "../../sdk/kits/skill-install.js";
import type { Finding, Skill } from "../../sdk/kits/skills.js";
import { bundledSwitch, parseSkill, SKILL_FILE, SKILL_NAME } from "../../sdk/kits/skills.js";
import type { SkillsSettings } from "./settings.js";

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

/** Body of install and scan: a bundled name or a URL (`source`), or the files of a folder (`files`, base64). */
const SOURCE_BODY = {
  type: "object",
  additionalProperties: false,
  properties: {
    source: { type: "string", minLength: 1, maxLength: 4096 },
    files: {
      type: "object",
      maxProperties: 64,
      additionalProperties: { type: "string", maxLength: 2_000_000 },
      description: "path inside the skill folder → content, base64",
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

const isUrl = (source: string) => /^https?:\/\//i.test(source);

/** A finding on one line: `SKILL.md:12 high pipe-to-shell: …`. */
export const findingLine = (f: Finding) => `${f.file}:${f.line} ${f.severity} ${f.rule}: ${f.message}`;

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
 * shown by `spar security audit`); the installed set and its lock change all at once or not at all.
 */
export function installRoutes(routes: RouteRegistry, deps: InstallDeps): void {
  const { home, settings } = deps;

  async function filesOf(
    body: { source?: string; files?: Record<string, string>; local?: LocalOrigin },
    signal: AbortSignal,
  ) {
    if ((body.source === undefined) === (body.files === undefined)) {
      throw new SparError(
        "VALIDATION_FAILED",
        "give exactly one of source (a skill name or an https URL) and files",
      );
    }
    if (body.files) {
      return {
        source: body.local ? `local:${body.local.path}` : "upload",
        files: new Map(
          Object.entries(body.files).map(([path, b64]) => [path, Buffer.from(b64, "base64")]),
        ) as SkillFiles,
      };
    }
    const source = body.source as string;
    if (!isUrl(source)) return { source, files: undefined };
    const { fetchSkillSource } = await import("../../sdk/kits/skill-install.js");
    const files = await fetchSkillSource(source, {
      allowPrivate: settings.allow_private,
      signal,
      maxBytes: settings.max_download_bytes,
      timeoutMs: settings.download_timeout_s * 1000,
    });
    return { source, files };
  }

  async function scan(files: SkillFiles): Promise<Finding[]> {
    const known = new Map((await deps.moves()).map((m) => [m.name, m.capability] as const));
    const { scanSkill } = await import("../../sdk/kits/skill-install.js");
    return scanSkill(files, { moves: known });
  }

  routes.add({
    listener: "api",
    method: "POST",
    path: "/api/v1/moves/scan",
    body: {
      ...SOURCE_BODY,
      properties: {
        source: SOURCE_BODY.properties.source,
        files: SOURCE_BODY.properties.files,
        local: SOURCE_BODY.properties.local,
      },
    },
    async handler({ body, signal }) {
      const got = await filesOf(body as { source?: string; files?: Record<string, string> }, signal);
      let files = got.files;
      if (!files) {
        const skill = (await deps.skills()).byName.get(got.source);
        if (!skill)
          throw new SparError(
            "NOT_FOUND",
            `no skill named "${got.source}"; give a name, a folder or an https URL`,
          );
        const { readSkillFolder } = await import("../../sdk/kits/skill-install.js");
        files = await readSkillFolder(skill.dir);
      }
      const findings = await scan(files);
      return { body: { source: got.source, findings, ...summarize(findings) } };
    },
  });

  routes.add({
    listener: "api",
    method: "POST",
    path: "/api/v1/moves/install",
    body: SOURCE_BODY,
    async handler({ body, signal }) {
      const request = body as {
        source?: string;
        files?: Record<string, string>;
        force?: boolean;
        replace?: boolean;
        local?: LocalOrigin;
      };
      const got = await filesOf(request, signal);
      const catalog = await deps.skills();
      if (!got.files) {
        // A bundled skill's name: enable it again (spar move remove disables one).
        const skill = catalog.bundled.get(got.source);
        if (!skill) {
          if (!SKILL_NAME.test(got.source)) {
            throw new SparError(
              "VALIDATION_FAILED",
              `"${got.source}" is neither a skill name nor an http(s) URL`,
            );
          }
          throw new SparError(
            "NOT_FOUND",
            `no bundled skill is named "${got.source}"; spar move search finds one`,
          );
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
      const skillMd = got.files.get(SKILL_FILE);
      if (!skillMd) throw new SparError("VALIDATION_FAILED", `the skill has no ${SKILL_FILE} at its root`);
      // A SKILL.md that is not a skill is refused as such, naming the key, before it is scanned.
      const { meta } = parseSkill(skillMd.toString("utf8"), SKILL_FILE);
      // The Agent Skills standard: a skill's name is its folder's. Installing under the other name
      // would leave the user looking for a skill that is not there.
      const folder = request.local?.kind === "folder" ? basename(request.local.path) : undefined;
      if (folder !== undefined && folder !== meta.name) {
        throw new SparError(
          "VALIDATION_FAILED",
          `the folder is named "${folder}" but its ${SKILL_FILE} names the skill "${meta.name}": the Agent Skills standard wants them equal; rename the folder or the name, then install again`,
          { folder, name: meta.name },
        );
      }
      if (catalog.bundled.has(meta.name)) {
        throw new SparError("CONFLICT", `a bundled skill is named "${meta.name}": give yours another name`);
      }
      const findings = await scan(got.files);
      const counts = summarize(findings);
      if (counts.high > 0 && request.force !== true) {
        throw new SparError(
          "FORBIDDEN",
          `the scan found ${counts.high} high-severity finding(s); nothing was installed (spar move scan shows them; --force installs anyway and is recorded)`,
          { findings: findings.map(findingLine) },
        );
      }
      const { installSkill } = await import("../../sdk/kits/skill-install.js");
      const entry = await installSkill(
        home,
        got.files,
        {
          source: got.source,
          forced: counts.high > 0,
          findings: findings.filter((f) => f.severity !== "low"),
        },
        { replace: request.replace === true, reserved: new Set(catalog.bundled.keys()) },
      );
      deps.reload();
      deps.events.publish({
        kind: "move.installed",
        name: entry.name,
        source: got.source,
        version: entry.version,
        forced: entry.forced,
      });
      return { status: 201, body: { skill: entry, findings, ...counts } };
    },
  });

  routes.add({
    listener: "api",
    method: "DELETE",
    path: "/api/v1/moves/:name",
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
