import { describeServer, type ServerSpec } from "./settings.js";

/** Where a server is in its life, as `GET /api/v1/mcp/servers` and `spar doctor` show it. */
export type ServerPhase = "not_started" | "starting" | "running" | "down" | "stopped";

/** One configured server as `GET /api/v1/mcp/servers` reports it (no secret: no env, headers or query). */
export interface ServerStatus {
  name: string;
  transport: "stdio" | "http";
  /** "stdio: <command>" or "http: <origin and path>". */
  target: string;
  state: ServerPhase;
  /** The moves of its last tool listing (`mcp_<server>_<tool>`), kept while it is down. */
  tools: string[];
  /** How many times it was started (restarts included). */
  starts: number;
  /** The server process (stdio) while it runs. */
  pid?: number;
  /** When the running server started (ISO 8601). */
  since?: string;
  /**
   * Why it last failed to start or stopped (what a fighter is told), the last line it wrote to
   * stderr then (for the operator only), and when; kept after it runs again.
   */
  last_failure?: { error: string; stderr?: string; at: string };
  /** While it is down: when Spar tries again. */
  retry_at?: string;
}

/** A server nothing has asked for yet (the plugin has not even loaded the MCP SDK). */
export function notStarted(spec: ServerSpec): ServerStatus {
  return {
    name: spec.name,
    transport: spec.transport,
    target: describeServer(spec),
    state: "not_started",
    tools: [],
    starts: 0,
  };
}
