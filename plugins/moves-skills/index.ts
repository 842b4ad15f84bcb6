import {
  type ChatMessage,
  definePlugin,
  type FighterRow,
  type MoveDeclaration,
  type MoveHandler,
  SparError,
  type TaintSource,
} from "../../sdk/index.js";
import { FREE_OBJECT, openAnswer } from "../../sdk/kits/http.js";
import {
  deriveCapabilities,
  disabledNames,
  listing,
  loadSkills,
  missingCapabilities,
  READ_DEFAULT_CHARS,
  rankIndex,
  readSkillFile,
  readSkillPage,
  type Skill,
  type SkillPack,
  type SkillRoot,
  skillRoots,
  skillsFor,
} from "../../sdk/kits/skills.js";
import { filesNote, scriptMounts } from "./disclosure.js";
import { installRoutes } from "./install-routes.js";
import { lockRoutes } from "./lock-routes.js";
import { calledMoves, deferredNote, offerTools } from "./offer.js";
import type { SkillsSettings } from "./settings.js";

declare module "../../sdk/index.js" {
  interface SparEventMap {
    /** A skill was installed, or a bundled one switched on again. */
    "move.installed": { name: string; source: string; version: string; forced: boolean };
    /** An installed skill was removed, or a bundled one switched off. */
    "move.removed": { name: string; source: string };
  }
}

/** Bouts whose activated moves are remembered in memory (the history keeps what was called). */
const MAX_BOUTS = 1000;

/**
 * Skills on demand, and a prompt that stays small. A fighter's prompt never carries a skill's body:
 * the few skills that match the current message are named beside it, `skill_search` finds others and
 * `skill_load` reads one (and offers the moves it needs). When a fighter may use many moves, only a
 * core set is offered; `move_search` finds the rest and offers them from then on in the bout. A
 * skill installed from a URL is its author's words: reading it taints the turn (`skillTaint`).
 */
export default definePlugin<{ "moves.skills": SkillsSettings }>({
  id: "moves-skills",
  apply({ hooks, ring, home, log, events }, sections) {
    const settings = sections["moves.skills"];

    interface Catalog {
      /** Every skill a fighter may be offered: enabled bundled ones and installed ones. */
      skills: Skill[];
      byName: Map<string, Skill>;
      /** Every bundled skill, switched off or not. */
      bundled: Map<string, Skill>;
    }
    let catalog: Catalog | undefined;
    let loading: Promise<Catalog> | undefined;

    let recovered = false;
    /** The skill roots: every skill pack's folders, then the installed set. */
    async function roots(): Promise<SkillRoot[]> {
      if (!recovered) {
        // An install or removal a crash interrupted is finished or undone before the set is read.
        const { recoverInstalled } = await import("../../sdk/kits/skill-install.js");
        const report = await recoverInstalled(home);
        for (const name of [...report.missing, ...report.modified]) {
          log.warn("an installed skill's files are missing or changed since it was installed", {
            skill: name,
          });
        }
        recovered = true;
      }
      const packs: SkillPack[] = [];
      for (const plugin of await ring.plugins.list()) {
        if (plugin.kind !== "skill-pack") continue;
        const folders = (await ring.plugins.manifest(plugin.id))?.contributes?.skills ?? [];
        packs.push({ id: plugin.id, source: plugin.source, dir: plugin.dir, folders });
      }
      return skillRoots(home, packs, (plugin, folder) =>
        log.warn("a skill pack's folder is outside it, ignored", { plugin, folder }),
      );
    }

    /**
     * The catalog, read on first need and again after the install routes change the installed set or
     * the switched-off list (`reload`): the daemon is their only writer, so no model call stats them.
     */
    /** Bumped by every reload: a read begun before one is stale and does not become the catalog. */
    let generation = 0;
    async function skills(): Promise<Catalog> {
      if (catalog) return catalog;
      const started = generation;
      if (!loading) {
        const read: Promise<Catalog> = readCatalog().finally(() => {
          if (loading === read) loading = undefined;
        });
        loading = read;
      }
      const fresh = await loading;
      if (started !== generation) return skills();
      catalog = fresh;
      return fresh;
    }
    async function readCatalog(): Promise<Catalog> {
      const { skills: all, problems } = loadSkills(await roots());
      deriveCapabilities(all, new Map((await ring.moves.list()).map((m) => [m.name, m.capability])));
      for (const p of problems) log.warn("a skill was not loaded", { file: p.file, error: p.error });
      const off = disabledNames(home);
      const enabled = all.filter((s) => !(s.source === "bundled" && off.has(s.name)));
      return {
        skills: enabled,
        byName: new Map(enabled.map((s) => [s.name, s])),
        bundled: new Map(all.filter((s) => s.source === "bundled").map((s) => [s.name, s])),
      };
    }
    const reload = () => {
      generation += 1;
      catalog = undefined;
      loading = undefined;
    };

    /** Per bout: the moves activated by move_search or skill_load, in order, most recent bouts kept. */
    const activated = new Map<string, Set<string>>();
    /** Per bout: every tool the fighter may use, as its last prompt had them (what move_search looks in). */
    const available = new Map<string, MoveDeclaration[]>();
    const remember = <V>(map: Map<string, V>, bout: string, value: V) => {
      map.delete(bout);
      map.set(bout, value);
      if (map.size > MAX_BOUTS) map.delete(map.keys().next().value as string);
    };
    const activate = (bout: string, names: readonly string[]) => {
      const set = activated.get(bout) ?? new Set<string>();
      for (const name of names) set.add(name);
      remember(activated, bout, set);
    };

    /** The search index of what a fighter may use: the whole catalog's is built once per catalog. */
    const indexes = new WeakMap<Catalog, ReturnType<typeof rankIndex<Skill>>>();
    async function skillIndexFor(fighter: FighterRow) {
      const current = await skills();
      const allowed = fighter.manifest.skills ?? [];
      if (allowed.length > 0) return rankIndex(skillsFor(current.skills, allowed));
      let index = indexes.get(current);
      if (!index) {
        index = rankIndex(current.skills);
        indexes.set(current, index);
      }
      return index;
    }
    const fighterSkills = async (fighter: FighterRow) =>
      skillsFor((await skills()).skills, fighter.manifest.skills ?? []);

    /** A skill the fighter may read: NOT_FOUND (naming near ones), or CAPABILITY_DENIED for what it lacks. */
    async function usable(fighter: FighterRow, name: string): Promise<Skill> {
      const mine = await fighterSkills(fighter);
      const skill = mine.find((s) => s.name === name);
      if (!skill) {
        const near = rankIndex(mine).search(name.replace(/-/g, " "), 3);
        const hint = near.length ? `; did you mean ${near.map((n) => n.item.name).join(", ")}?` : "";
        throw new SparError("NOT_FOUND", `no skill named "${name}" is available to you${hint}`);
      }
      const missing = missingCapabilities(skill, fighter.manifest.capabilities ?? []);
      if (missing.length > 0) {
        throw new SparError(
          "CAPABILITY_DENIED",
          `the skill "${name}" needs the ${missing.join(", ")} capabilit${missing.length > 1 ? "ies" : "y"}, which you do not hold: do the task without it, or tell the user what it would need`,
        );
      }
      return skill;
    }

    const handlers: Record<string, MoveHandler> = {
      skill_search: {
        name: "skill_search",
        async run(input, { fighter, untrusted }) {
          const limit = typeof input.limit === "number" ? input.limit : 5;
          const grants = fighter.manifest.capabilities ?? [];
          const found = (await skillIndexFor(fighter)).search(String(input.query), limit);
          // A description is the skill author's words too.
          const stranger = found.map(({ item }) => skillTaint(item, "skill_search")).find(Boolean);
          if (stranger) untrusted(stranger);
          const results = found.map(({ item }) => {
            const missing = missingCapabilities(item, grants);
            return {
              name: item.name,
              description: item.description,
              category: item.category,
              ...(missing.length
                ? { unavailable: `needs ${missing.join(", ")}, which you do not hold` }
                : {}),
            };
          });
          return { query: input.query, results };
        },
      },
      skill_load: {
        name: "skill_load",
        async run(input, { fighter, bout_id, untrusted }) {
          const skill = await usable(fighter, String(input.name));
          const file = typeof input.file === "string" ? input.file : undefined;
          const text = readSkillFile(skill, file);
          const taint = skillTaint(skill, "skill_load");
          if (taint) untrusted(taint);
          if (file !== undefined) return { name: skill.name, file, content: text };
          const files = filesNote(skill, fighter.manifest.capabilities ?? []);
          // skill_read is offered from now on when there is something to read with it.
          activate(bout_id, files.files.length ? [...skill.moves, "skill_read"] : skill.moves);
          return {
            name: skill.name,
            version: skill.version,
            moves: skill.moves,
            instructions: text,
            ...files,
          };
        },
      },
      skill_read: {
        name: "skill_read",
        async run(input, { fighter, untrusted }) {
          const skill = await usable(fighter, String(input.name));
          const offset = typeof input.offset === "number" ? input.offset : 0;
          const limit = typeof input.limit === "number" ? input.limit : READ_DEFAULT_CHARS;
          const page = readSkillPage(skill.dir, String(input.path), offset, limit);
          const taint = skillTaint(skill, "skill_read");
          if (taint) untrusted(taint);
          return { name: skill.name, ...page };
        },
      },
      move_search: {
        name: "move_search",
        async run(input, { bout_id }) {
          const tools = available.get(bout_id) ?? [];
          const limit = typeof input.limit === "number" ? input.limit : 5;
          const found = rankIndex(tools.filter((t) => !(t.name in handlers))).search(
            String(input.query),
            limit,
          );
          activate(
            bout_id,
            found.map((f) => f.item.name),
          );
          return {
            query: input.query,
            moves: found.map(({ item }) => ({
              name: item.name,
              description: item.description,
              capability: item.capability,
            })),
            note: found.length
              ? "These moves are now offered to you: call them directly."
              : "No move matched; try other words.",
          };
        },
      },
    };
    hooks.move.resolve.tap((name) => (Object.hasOwn(handlers, name) ? handlers[name] : undefined));

    hooks.move.skills.tap(async (list) => [...list, ...(await skills()).skills.map(listing)]);

    // A fighter's sandboxed processes see the skills it may use (and could load) that hold scripts.
    hooks.move.mounts.tap(async (mounts, { fighter }) => {
      const grants = fighter.manifest.capabilities ?? [];
      const mine = (await fighterSkills(fighter)).filter((s) => missingCapabilities(s, grants).length === 0);
      return [...mounts, ...scriptMounts(mine, home)];
    });

    hooks.turn.prepare.tap(async (prompt, { fighter, bout_id, dry_run }) => {
      if (!dry_run) remember(available, bout_id, prompt.tools);
      const used = calledMoves(prompt.messages);
      const { offered, deferred } = offerTools(
        prompt.tools,
        [...used, ...(activated.get(bout_id) ?? [])],
        settings,
      );
      const skillsNote = await relevantSkills(prompt.messages, fighter);
      // The deferred note is stable for a fighter; the skills named for this message are not.
      return {
        ...prompt,
        system: `${prompt.system}${deferredNote(deferred)}`,
        ...(skillsNote ? { volatile: `${prompt.volatile ?? ""}${skillsNote}` } : {}),
        tools: offered,
      };
    });

    /**
     * The few skills that match the current message (name and description only), when any do: at
     * most `relevant`, each sharing at least two of the message's words with the skill, one of them
     * in its name or tags, and scoring `min_score` or more, so that small talk names none.
     */
    async function relevantSkills(messages: ChatMessage[], fighter: FighterRow): Promise<string> {
      if (settings.relevant === 0) return "";
      const user = messages.findLast((m) => m.role === "user");
      if (!user || typeof user.content !== "string") return "";
      const matches = (await skillIndexFor(fighter))
        .search(user.content, 20, settings.min_score)
        .filter((r) => r.matched >= 2 && r.named)
        .slice(0, settings.relevant);
      if (matches.length === 0) return "";
      const lines = matches.map(({ item }) => `- ${item.name}: ${item.description}`).join("\n");
      return `\n\n## Skills for this message\nRead one with skill_load before following it:\n${lines}`;
    }

    hooks.arena.routes.tap((routes) => {
      routes.add({
        listener: "api",
        method: "GET",
        path: "/api/v1/moves/search",
        operationId: "searchMoves",
        summary: "Search the moves and skills by words",
        query: {
          type: "object",
          required: ["q"],
          properties: {
            q: { type: "string", description: "what to search for" },
            limit: { type: "integer", minimum: 1, maximum: 100, description: "default 10" },
          },
        },
        response: {
          "200": openAnswer({ query: { type: "string" }, results: { type: "array", items: FREE_OBJECT } }),
        },
        async handler({ query }) {
          const q = (query.q ?? "").trim();
          if (q === "") throw new SparError("VALIDATION_FAILED", "give what to search for as ?q=");
          const limit = searchLimit(query.limit);
          const tools = await ring.moves.list();
          const catalog = (await skills()).skills;
          const entries = [
            ...catalog.map((s) => ({ kind: "skill" as const, ...listing(s) })),
            ...tools.map((m) => ({
              kind: "move" as const,
              name: m.name,
              description: m.description,
              capability: m.capability,
            })),
          ];
          const results = rankIndex(entries)
            .search(q, limit)
            .map(({ item, score }) => ({ ...item, score }));
          return { body: { query: q, results } };
        },
      });
      const deps = { home, settings, events, log, reload, skills, moves: () => ring.moves.list() };
      installRoutes(routes, deps);
      lockRoutes(routes, deps);
    });
  },
});

/**
 * What a skill's words taint a turn with, when they are not the operator's: a skill installed from
 * a URL (or uploaded without saying from where) is its author's; a bundled one (a skill pack, the
 * operator's own plugin included) and one installed from a local folder or archive are trusted.
 */
export function skillTaint(skill: Skill, move: string): TaintSource | undefined {
  if (skill.source === "bundled" || skill.origin?.startsWith("local:")) return undefined;
  return { kind: "skill", detail: `${skill.name} from ${skill.origin ?? "an unknown source"}`, move };
}

/** `?limit=` of the search route: 1 to 100, 10 when absent; anything else is refused, never bent. */
function searchLimit(raw: string | undefined): number {
  if (raw === undefined) return 10;
  const limit = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= 100)) {
    throw new SparError(
      "VALIDATION_FAILED",
      `?limit must be an integer from 1 to 100, not ${JSON.stringify(raw.slice(0, 40))}`,
      { path: "/querystring/limit" },
    );
  }
  return limit;
}
