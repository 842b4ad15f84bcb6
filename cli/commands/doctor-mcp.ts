import type { SparConfig } from "../../sdk/config.js";
import { isSparError } from "../../sdk/errors.js";
import { api } from "../client.js";

/** One configured MCP server as the moves-mcp plugin reports it (`GET /api/v1/mcp/servers`). */
interface ServerStatus {
  name: string;
  target: string;
  state: "not_started" | "starting" | "running" | "down" | "stopped";
  tools: string[];
  starts: number;
  pid?: number;
  last_failure?: { error: string; stderr?: string; at: string };
  retry_at?: string;
}

export interface McpReport {
  server: string;
  ok: boolean;
  detail: string;
}

/**
 * The MCP servers of `[mcp.servers]`: as the running daemon reports them (started or not, the tools
 * it knows, the last failure), or, with no daemon, as configured. Only a server that is down fails.
 */
export async function checkMcpServers(config: SparConfig): Promise<McpReport[]> {
  const tables = (
    config.sections.mcp as { servers?: Record<string, { command?: string; url?: string }> } | undefined
  )?.servers;
  const configured = Object.entries(tables ?? {}).sort(([a], [b]) => a.localeCompare(b));
  let servers: ServerStatus[];
  try {
    ({ servers } = await api<{ servers: ServerStatus[] }>("GET", "/api/v1/mcp/servers"));
  } catch (err) {
    if (isSparError(err, "DAEMON_UNREACHABLE")) {
      return configured.map(([server, table]) => ({
        server,
        ok: true,
        detail: `${table.command !== undefined ? `stdio: ${table.command}` : `http: ${urlShown(table.url)}`}; not started (Spar is not running; it starts on the first turn of a fighter that may use it)`,
      }));
    }
    if (configured.length === 0) return [];
    const code = isSparError(err) ? ` (${err.code})` : "";
    const detail = `the daemon did not report its MCP servers: ${(err as Error).message}${code}`;
    return [{ server: "(all)", ok: false, detail }];
  }
  return servers.map((s) => ({ server: s.name, ok: s.state !== "down", detail: describe(s) }));
}

function describe(s: ServerStatus): string {
  const tools = s.tools.length === 0 ? "no tools known" : `${s.tools.length} tool(s): ${s.tools.join(", ")}`;
  const failure = s.last_failure
    ? `last failure at ${s.last_failure.at}: ${s.last_failure.error}${s.last_failure.stderr ? ` (stderr: ${s.last_failure.stderr})` : ""}`
    : "";
  const restarts = s.starts > 1 ? `, started ${s.starts} times` : "";
  const parts: Record<ServerStatus["state"], string[]> = {
    not_started: ["not started yet (it starts on the first turn of a fighter that may use it)"],
    starting: ["starting", tools],
    running: [`running${s.pid ? ` (pid ${s.pid})` : ""}${restarts}`, tools, failure],
    down: [`down, next try at ${s.retry_at ?? "?"}`, failure, tools],
    stopped: ["stopped (Spar is shutting down)"],
  };
  return [s.target, ...parts[s.state]].filter(Boolean).join("; ");
}

/** A URL without its credentials or query, as the daemon shows it. */
function urlShown(url: string | undefined): string {
  const parsed = url ? URL.parse(url) : null;
  return parsed ? `${parsed.origin}${parsed.pathname}` : "(invalid url)";
}
