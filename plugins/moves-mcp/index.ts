/**
 * Tools from the MCP servers in config.toml (`[mcp.servers.<name>]`), as moves named
 * `mcp_<server>_<tool>` behind the `mcp` capability, each declaration carrying its `server` so a
 * grant `{type: "mcp", server: "cal"}` allows that server's tools only (the kernel matches it).
 *
 * Servers start lazily: the first turn of a fighter that may use one (a grant of `mcp` for it, or
 * `full_access`) starts it in `move.list`, and the SDK is imported only then. A listing without a
 * fighter (`GET /api/v1/moves`) starts nothing and shows the tools already known. Moves of servers a
 * fighter may not use are still declared, when known, so that calling one is CAPABILITY_DENIED rather
 * than an unknown move. A fighter that may use a server which is down is told so in its system
 * prompt, with the reason, since it may not see that server's tools at all. `GET /api/v1/mcp/servers`
 * reports every server for `spar doctor`. The daemon's shutdown closes every client and stops every
 * server process. A tool's answer is untrusted content (mail, tickets, pages anyone can write): it
 * taints the turn as `<server>/<tool>`, unless the operator marked the server `trusted = true`.
 */

import { join } from "node:path";
import { type Capability, definePlugin, type MoveDeclaration, type MoveHandler } from "../../sdk/index.js";
import { FREE_OBJECT, openAnswer } from "../../sdk/kits/http.js";
import type { ServerConnection, ServerFailed, ServerStarted } from "./server.js";
import { type McpSettings, serverSpecs } from "./settings.js";
import { notStarted, type ServerStatus } from "./status.js";

declare module "../../sdk/index.js" {
  interface SparEventMap {
    /** A server started (or restarted) and listed its tools. */
    "mcp.server_started": ServerStarted;
    /** A server failed to start, or died: it is retried in `retry_in_s`. */
    "mcp.server_failed": ServerFailed;
  }
}

/** Whether a fighter holding `grants` may use the tools of `server` (the kernel's rule for moves with a server). */
export function mayUse(grants: readonly Capability[], server: string): boolean {
  return grants.some(
    (g) => g.type === "full_access" || (g.type === "mcp" && (g.server === undefined || g.server === server)),
  );
}

/** The system prompt's note on servers a fighter may use that are down, or "" when none is. */
export function unavailableNote(statuses: readonly ServerStatus[]): string {
  const down = statuses.filter((s) => s.state === "down");
  if (down.length === 0) return "";
  const lines = down.map((s) => {
    const why = s.last_failure ? `: ${s.last_failure.error}` : "";
    const next = s.retry_at ? ` Spar tries again at ${s.retry_at}.` : "";
    const tools =
      s.tools.length > 0
        ? " Its tools fail until it is back."
        : " Its tools are not offered until it starts.";
    return `- MCP server "${s.name}" is unavailable${why}.${tools}${next}`;
  });
  return `\n\nTool servers that are down right now (tell the user if they need them):\n${lines.join("\n")}`;
}

export default definePlugin<{ mcp: McpSettings }>({
  id: "moves-mcp",
  apply({ hooks, events, config, home, env, log, kernelVersion }, { mcp }) {
    const specs = serverSpecs(mcp, home, join(home, "config.toml"), env).sort((a, b) =>
      a.name.localeCompare(b.name),
    );

    let servers: ServerConnection[] = [];
    let loading: Promise<ServerConnection[]> | undefined;
    /** The connections, made on first need: importing the SDK costs start-up time nobody should pay unused. */
    const load = () =>
      (loading ??= import("./server.js").then(({ createServerConnection }) => {
        servers = specs.map((spec) =>
          createServerConnection({
            spec,
            startTimeoutMs: mcp.start_timeout_s * 1000,
            callTimeoutMs: (config.agent.tool_timeout_s + 5) * 1000,
            clientVersion: kernelVersion,
            log,
            started: (info) => publish({ kind: "mcp.server_started", ...info }),
            failed: (info) => publish({ kind: "mcp.server_failed", ...info }),
          }),
        );
        return servers;
      }));
    const publish = (event: Parameters<typeof events.publish>[0]) => {
      try {
        events.publish(event);
      } catch (err) {
        log.warn("could not publish an MCP event", { kind: event.kind, error: String(err) });
      }
    };
    /** Every configured server's status, by name; those never asked for without loading the SDK. */
    const statuses = (): ServerStatus[] =>
      servers.length > 0 ? servers.map((s) => s.status()) : specs.map(notStarted);

    hooks.arena.routes.tap((routes) => {
      routes.add({
        listener: "api",
        method: "GET",
        path: "/api/v1/mcp/servers",
        operationId: "listMcpServers",
        summary: "The configured MCP servers and their state",
        response: { "200": openAnswer({ servers: { type: "array", items: FREE_OBJECT } }) },
        handler: async () => ({ body: { servers: statuses() } }),
      });
    });
    if (specs.length === 0) return;

    /**
     * The known moves of every server, first server (by name) first. Two servers can produce one name
     * (server "a" tool "b_c", server "a_b" tool "c"): the first server keeps it, the other's is dropped.
     */
    function known(): { moves: MoveDeclaration[]; owner: Map<string, ServerConnection> } {
      const owner = new Map<string, ServerConnection>();
      const moves: MoveDeclaration[] = [];
      for (const server of servers) {
        for (const move of server.moves) {
          if (owner.has(move.name)) continue;
          owner.set(move.name, server);
          moves.push(move);
        }
      }
      return { moves, owner };
    }

    hooks.move.list.tap(async (moves, { fighter }) => {
      const grants = fighter?.manifest.capabilities ?? [];
      const usable = fighter ? specs.filter((s) => mayUse(grants, s.name)).map((s) => s.name) : [];
      if (usable.length > 0) {
        const all = await load();
        await Promise.all(all.filter((s) => usable.includes(s.name)).map((s) => s.ensureStarted()));
      }
      return [...moves, ...known().moves];
    });

    hooks.move.resolve.tap((name): MoveHandler | undefined => {
      if (!name.startsWith("mcp_")) return undefined;
      const server = known().owner.get(name);
      if (!server) return undefined;
      // A trusted server's answers are the operator's; any other's are untrusted content.
      const trusted = specs.find((s) => s.name === server.name)?.trusted === true;
      return {
        name,
        run: (input, { signal, untrusted }) =>
          server.call(name, input, signal, (tool) => {
            if (!trusted) untrusted({ kind: "mcp", detail: `${server.name}/${tool}`, move: name });
          }),
      };
    });

    hooks.turn.prepare.tap((prompt, { fighter }) => {
      const grants = fighter.manifest.capabilities ?? [];
      const note = unavailableNote(servers.filter((s) => mayUse(grants, s.name)).map((s) => s.status()));
      // A server's status can change at any time: after the stable prefix.
      return note ? { ...prompt, volatile: `${prompt.volatile ?? ""}${note}` } : prompt;
    });

    hooks.daemon.close.tap(async () => {
      if (!loading) return;
      await Promise.all((await loading).map((s) => s.close()));
    });
  },
});
