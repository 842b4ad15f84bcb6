/**
 * What each key may do (DESIGN §17), enforced here and nowhere else for HTTP: one table of route →
 * scope, checked after authentication and before any handler or schema runs. A route missing from
 * the table gets a safe default: GET (and HEAD) needs `read`, anything else `admin`, so a route
 * added without a thought for scopes is closed to every key but an admin's.
 *
 * The scopes: `admin` everything; `operator` everything but `admin` routes (backups; keys, config and
 * rekey are the data dir owner's, never the API's); `read` GET routes only (plus a WebSocket ticket);
 * `chat:<fighter>,…` the routes marked `chat` below, for the fighters it names, and nothing else. An
 * unsigned loopback request (while `[auth] allow_unsigned_loopback` is on) is this machine's owner:
 * admin. The WebSocket's frames and events are checked with `socketAccess` (ws.ts).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type KeyScope, type RingServices, SparError, type SparEvent } from "../../sdk/index.js";
import { formatScope } from "../../sdk/kits/http.js";
import type { PluginRoutes } from "./plugin-routes.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The scope of the key that signed the request (or asked for its WebSocket ticket). */
    sparScope?: KeyScope;
  }
}

type Level = "read" | "operator" | "admin";
/** Where a `chat` key's request names its fighter: a path parameter, a bout's owner, OpenAI's `model`. */
type Target = "fighter" | "bout" | "model" | "model-param" | "none";
interface Rule {
  needs: Level;
  /** A `chat` key may call the route, for a fighter it names (`none`: for any, the route names none). */
  chat?: Target;
}

const RANK: Record<Level, number> = { read: 0, operator: 1, admin: 2 };
const OPERATOR: Rule = { needs: "operator" };

/** Every route that needs something else than its method's default, by its canonical path. */
export const ROUTE_SCOPES: Readonly<Record<string, Rule>> = {
  "GET /api/v1/health": { needs: "read", chat: "none" },
  "GET /api/v1/key": { needs: "read", chat: "none" },
  "POST /api/v1/ws/ticket": { needs: "read", chat: "none" },
  "GET /api/v1/ws": { needs: "read", chat: "none" },
  "GET /api/v1/fighters/:id": { needs: "read", chat: "fighter" },
  "GET /api/v1/fighters/:id/bouts": { needs: "read", chat: "fighter" },
  "GET /api/v1/bouts/:id/messages": { needs: "read", chat: "bout" },
  "GET /api/v1/bouts/:id/turns": { needs: "read", chat: "bout" },
  "POST /api/v1/fighters/:id/message": { needs: "operator", chat: "fighter" },
  "POST /api/v1/fighters/:id/chat": { needs: "operator", chat: "fighter" },
  "POST /api/v1/fighters/:id/cancel": { needs: "operator", chat: "fighter" },
  "POST /v1/chat/completions": { needs: "operator", chat: "model" },
  "GET /v1/models/:model": { needs: "read", chat: "model-param" },
  // Opening the tunnel starts a process and publishes the webhook listener: not a read.
  "GET /api/v1/tunnel": OPERATOR,
  "POST /api/v1/fighters": OPERATOR,
  "DELETE /api/v1/fighters/:id": OPERATOR,
  "POST /api/v1/fighters/:id/message-to/:target": OPERATOR,
  "PUT /api/v1/fighters/:id/creed": OPERATOR,
  "POST /api/v1/moves/install": OPERATOR,
  "POST /api/v1/moves/scan": OPERATOR,
  "DELETE /api/v1/moves/:name": OPERATOR,
  "POST /api/v1/troops": OPERATOR,
  "PATCH /api/v1/troops/:id": OPERATOR,
  "DELETE /api/v1/troops/:id": OPERATOR,
  "POST /api/v1/troops/:id/tasks": OPERATOR,
  "POST /api/v1/troops/:id/tasks/:task_id/cancel": OPERATOR,
  "POST /api/v1/gorillas/:id/unleash": OPERATOR,
  "POST /api/v1/gorillas/:id/cage": OPERATOR,
  "POST /api/v1/gorillas/:id/run": OPERATOR,
  "POST /api/v1/gorillas/reload": OPERATOR,
  "DELETE /api/v1/schedules/:id": OPERATOR,
  "POST /api/v1/channels/reload": OPERATOR,
  // Answering an approval runs (or refuses) a fighter's call: an operator's act, never a reader's.
  "POST /api/v1/approvals/:id/approve": OPERATOR,
  "POST /api/v1/approvals/:id/deny": OPERATOR,
  "DELETE /api/v1/approvals/rules/:id": OPERATOR,
  "POST /api/v1/store/backup": { needs: "admin" },
};

/** The rule for a method and a route's path (`/api/…` aliases read as `/api/v1/…`). */
export function ruleFor(method: string, path: string): Rule {
  const verb = method === "HEAD" ? "GET" : method;
  const canonical = path.replace(/^\/api\/(?!v1\/)/, "/api/v1/");
  return ROUTE_SCOPES[`${verb} ${canonical}`] ?? { needs: verb === "GET" ? "read" : "admin" };
}

/** What the scope allows, in words for the dashboard and `GET /api/v1/key`. */
export function allowances(scope: KeyScope): { read: boolean; operate: boolean; admin: boolean } {
  const rank = scope.kind === "chat" ? -1 : RANK[scope.kind];
  return { read: rank >= 0, operate: rank >= 1, admin: rank >= 2 };
}

/** Whether a `chat` scope names the fighter (by its name or id); other scopes ask nothing of it. */
async function namesFighter(ring: RingServices, scope: KeyScope, idOrName: string): Promise<boolean> {
  if (scope.kind !== "chat") return true;
  const fighter = await ring.fighters.get(idOrName).catch(() => undefined);
  return (
    fighter !== undefined && (scope.fighters.includes(fighter.id) || scope.fighters.includes(fighter.name))
  );
}

async function boutIsTheirs(ring: RingServices, fighters: readonly string[], boutId: string) {
  for (const fighter of fighters) {
    const bouts = await ring.fighters.bouts(fighter).catch(() => []);
    if (bouts.some((b) => b.id === boutId)) return true;
  }
  return false;
}

function forbidden(request: FastifyRequest, what: string, needs: string): SparError {
  const scope = formatScope(request.sparScope as KeyScope);
  return new SparError(
    "FORBIDDEN",
    `the key "${request.sparKeyId}" has scope ${scope}; ${what} needs scope ${needs}`,
    { required_scope: needs, key_scope: scope },
  );
}

/** Checks every request against the table, once its route (and, for OpenAI's `model`, its body) is known. */
export function registerAccess(app: FastifyInstance, ring: RingServices, routes: PluginRoutes): void {
  app.addHook("preValidation", async (request) => {
    const scope = request.sparScope;
    if (!scope || scope.kind === "admin") return;
    const path = request.originalUrl.split("?")[0] ?? "";
    const pattern = request.routeOptions.url;
    // The Arena's catch-all hands `/api/…` to plugins' routes: theirs is the path the table names.
    const route = pattern === "/api/*" ? routes.find("api", request.method, path)?.route.path : pattern;
    const rule = ruleFor(request.method, route && route !== "/*" ? route : path);
    const what = `${request.method} ${route ?? path}`;
    if (scope.kind !== "chat") {
      if (RANK[scope.kind] < RANK[rule.needs]) throw forbidden(request, what, rule.needs);
      return;
    }
    const alternative = rule.needs === "admin" ? "admin" : `${rule.needs} (or chat:<fighter> where allowed)`;
    if (!rule.chat) throw forbidden(request, what, alternative);
    const params = (request.params ?? {}) as Record<string, string | undefined>;
    const body = request.body as { model?: unknown } | undefined;
    const fighter =
      rule.chat === "fighter"
        ? params.id
        : rule.chat === "model-param"
          ? params.model
          : rule.chat === "model"
            ? typeof body?.model === "string"
              ? body.model
              : "spar"
            : undefined;
    if (rule.chat === "bout") {
      if (!(await boutIsTheirs(ring, scope.fighters, params.id ?? ""))) {
        throw forbidden(request, `${what} of a bout of a fighter it does not name`, rule.needs);
      }
    } else if (fighter !== undefined && !(await namesFighter(ring, scope, fighter))) {
      throw forbidden(request, `${what} for fighter "${fighter}"`, `${rule.needs} or chat:${fighter}`);
    }
  });
}

/** A WebSocket's view of its key's scope: which chats it may start and which events it may see. */
export function socketAccess(ring: RingServices, scope: KeyScope | undefined) {
  /** The ids of the fighters a `chat` scope names, as far as they are known yet. */
  const seen = new Set<string>();
  const learn = async () => {
    if (scope?.kind !== "chat") return;
    for (const name of scope.fighters) {
      const fighter = await ring.fighters.get(name).catch(() => undefined);
      if (fighter) seen.add(fighter.id);
    }
  };
  const ready = learn();
  return {
    ready,
    /** Undefined when the key may chat with the fighter; otherwise the refusal. */
    async mayChat(keyId: string | undefined, fighter: string): Promise<SparError | undefined> {
      if (!scope || scope.kind === "admin" || scope.kind === "operator") return undefined;
      if (scope.kind === "chat" && (await namesFighter(ring, scope, fighter))) {
        await learn();
        return undefined;
      }
      const scopeText = formatScope(scope);
      return new SparError(
        "FORBIDDEN",
        `the key "${keyId}" has scope ${scopeText}; a chat with fighter "${fighter}" needs scope operator or chat:${fighter}`,
        { required_scope: `chat:${fighter}`, key_scope: scopeText },
      );
    },
    /** A `chat` key sees only events of the fighters it names. */
    sees(event: SparEvent): boolean {
      if (scope?.kind !== "chat") return true;
      if (event.kind === "fighter.spawned" && scope.fighters.includes(event.name)) seen.add(event.fighter_id);
      return "fighter_id" in event && typeof event.fighter_id === "string" && seen.has(event.fighter_id);
    },
  };
}
