import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { type Logger, type MoveDeclaration, SparError, validatorFor } from "../../sdk/index.js";
import { exposedNames } from "./naming.js";
import { ProcessTransport } from "./process-transport.js";
import { redact, type ServerSpec, secretsOf } from "./settings.js";
import { notStarted, type ServerPhase, type ServerStatus } from "./status.js";
import { resultText, type ToolResult } from "./tool-result.js";

/** The first restart waits this long; each failure in a row doubles it, up to RESTART_MAX_MS. */
export const RESTART_BASE_MS = 1000;
export const RESTART_MAX_MS = 60_000;
/** A server that ran this long before it died starts the doubling over. */
const STABLE_MS = 60_000;
const MAX_DESCRIPTION = 1024;
const MAX_TOOL_PAGES = 100;

export interface ServerStarted {
  server: string;
  transport: "stdio" | "http";
  tools: number;
  /** Tools not offered, each with why ("name: reason"). */
  skipped: string[];
  pid?: number;
}

export interface ServerFailed {
  server: string;
  /** Why, with the end of the server's stderr when it had one (the server's secrets redacted). */
  error: string;
  retry_in_s: number;
}

export interface ConnectionOptions {
  spec: ServerSpec;
  /** Connecting and listing the tools must finish within this. */
  startTimeoutMs: number;
  /** The SDK's own limit on one call; set past the kernel's `tool_timeout_s`, which acts first. */
  callTimeoutMs: number;
  clientVersion: string;
  log: Logger;
  started(info: ServerStarted): void;
  failed(info: ServerFailed): void;
}

export type ServerState = "idle" | "starting" | "ready" | "down" | "closed";

/** One configured MCP server: started on demand, restarted when it dies, its tools as moves. */
export interface ServerConnection {
  readonly name: string;
  readonly state: ServerState;
  /** The server process's pid while it runs (stdio servers). */
  readonly pid: number | undefined;
  /** The moves from the server's last tool listing; kept while it is down, so calls get a clear error. */
  readonly moves: readonly MoveDeclaration[];
  /** Whether `name` is one of this server's moves. */
  owns(name: string): boolean;
  /** Starts the server if it never was; waits for a start under way. Never rejects. */
  ensureStarted(): Promise<void>;
  /**
   * Calls the tool behind move `name`; the model gets the result's text, or a SparError. `answered`
   * is told the tool's own name once the server answered: from then on the text (an error's too) is
   * the server's.
   */
  call(
    name: string,
    input: Record<string, unknown>,
    signal: AbortSignal,
    answered?: (tool: string) => void,
  ): Promise<string>;
  /** Where it is, for `GET /api/v1/mcp/servers` and `spar doctor`. */
  status(): ServerStatus;
  /** Closes the client and stops the server for good (a stdio server's process group is killed). */
  close(): Promise<void>;
}

const PHASES: Record<ServerState, ServerPhase> = {
  idle: "not_started",
  starting: "starting",
  ready: "running",
  down: "down",
  closed: "stopped",
};

type State =
  | { kind: "idle" }
  | { kind: "starting"; ready: Promise<void>; abort: AbortController }
  | { kind: "ready"; client: Client; transport: Transport; since: number }
  | { kind: "down"; reason: string; retryAt: number; timer: NodeJS.Timeout }
  | { kind: "closed" };

/**
 * Creates the connection to one server; nothing starts until `ensureStarted` or a call asks. A start
 * that fails and a server that dies are both retried after 1 s, 2 s, 4 s … up to 60 s (counted anew
 * once a server has run for a minute). While it is down, a call fails at once saying so and when the
 * next try is; the moves of its last listing stay known meanwhile.
 */
export function createServerConnection(options: ConnectionOptions): ServerConnection {
  const { spec, log } = options;
  const name = spec.name;
  const secrets = secretsOf(spec);
  const clean = (text: string) => redact(text, secrets);
  let state: State = { kind: "idle" };
  let failures = 0;
  let starts = 0;
  let lastFailure: ServerStatus["last_failure"];
  let moves: MoveDeclaration[] = [];
  let toolOf = new Map<string, string>();
  // The same tool keeps the same declaration object across restarts: the kernel compiles a validator
  // per input-schema object and keeps it, so fresh objects on every listing would pile up.
  const declarations = new Map<string, MoveDeclaration>();

  function start(): Promise<void> {
    starts += 1;
    const abort = new AbortController();
    const ready = connect(abort);
    state = { kind: "starting", ready, abort };
    return ready;
  }

  async function connect(abort: AbortController): Promise<void> {
    const missing = spec.transport === "stdio" ? spec.missing_env : [];
    if (missing.length > 0) {
      // Started without them, the server would fail in its own words, or half work. The await lets
      // start() record this start first, so the failure below is not overwritten.
      await Promise.resolve();
      if (state.kind === "closed") return;
      const why = `[mcp.servers.${name}] pass_env names ${missing.join(", ")}, which the daemon's environment does not have (set it where Spar starts, or in the data dir's .env, and restart Spar)`;
      fail(why);
      return;
    }
    const transport: Transport =
      spec.transport === "stdio"
        ? new ProcessTransport(spec)
        : new StreamableHTTPClientTransport(new URL(spec.url), {
            requestInit: { headers: { ...spec.headers } },
          });
    let live = false;
    let reportedError = false;
    const client = new Client(
      { name: "spar", version: options.clientVersion },
      {
        listChanged: {
          tools: {
            onChanged: (err, tools) => {
              if (state.kind !== "ready" || state.client !== client) return;
              if (err) log.warn("MCP tool list refresh failed", { server: name, error: clean(err.message) });
              else if (tools) applyTools(tools);
            },
          },
        },
      },
    );
    client.onclose = () => {
      if (live) lost(describeLoss(transport), lastStderrLine(transport));
    };
    client.onerror = (err) => {
      // Once per connection: a server that logs to stdout would otherwise fill the log.
      if (reportedError) return;
      reportedError = true;
      log.warn("MCP server sent something unreadable", { server: name, error: clean(err.message) });
    };
    const timer = setTimeout(() => abort.abort(), options.startTimeoutMs);
    let skipped: string[];
    try {
      const request = { signal: abort.signal, timeout: options.startTimeoutMs };
      await client.connect(transport, request);
      skipped = applyTools(await listTools(client, request));
    } catch (err) {
      await client.close().catch(() => undefined);
      if (state.kind === "closed") return;
      const why = abort.signal.aborted
        ? `did not start within ${options.startTimeoutMs / 1000} s ([mcp] start_timeout_s)`
        : startFailure(err, transport);
      fail(why, lastStderrLine(transport));
      return;
    } finally {
      clearTimeout(timer);
    }
    if (state.kind === "closed") {
      await client.close().catch(() => undefined);
      return;
    }
    live = true;
    state = { kind: "ready", client, transport, since: Date.now() };
    const pid = transport instanceof ProcessTransport ? transport.pid : undefined;
    log.info("MCP server started", { server: name, tools: moves.length, ...(pid ? { pid } : {}) });
    if (skipped.length > 0) log.warn("MCP tools not offered", { server: name, tools: skipped.join("; ") });
    options.started({
      server: name,
      transport: spec.transport,
      tools: moves.length,
      skipped,
      ...(pid ? { pid } : {}),
    });
  }

  /** The server's tools as moves (only those `tools` allows, when the config gives it); returns the skipped. */
  function applyTools(tools: Tool[]): string[] {
    const allowed = spec.tools ? tools.filter((t) => spec.tools?.includes(t.name)) : tools;
    const byName = new Map(allowed.map((t) => [t.name, t]));
    const skipped: string[] = [];
    const nextMoves: MoveDeclaration[] = [];
    const nextToolOf = new Map<string, string>();
    for (const [exposed, toolName] of exposedNames(name, [...byName.keys()])) {
      const tool = byName.get(toolName) as Tool;
      const input_schema = inputSchema(tool);
      const description = describeTool(tool, name);
      // MCP's annotations are hints, read as the spec defaults them: read-only, or else destructive
      // unless the server says it is not (no annotations at all: destructive).
      const readOnly = tool.annotations?.readOnlyHint === true;
      const destructive = !readOnly && tool.annotations?.destructiveHint !== false;
      const key = JSON.stringify([exposed, description, input_schema, readOnly, destructive]);
      let declaration = declarations.get(key);
      if (!declaration) {
        try {
          validatorFor(input_schema);
        } catch (err) {
          skipped.push(`${toolName}: its input schema cannot be used (${(err as Error).message})`);
          continue;
        }
        const made: MoveDeclaration & { plugin: string } = {
          name: exposed,
          description,
          capability: "mcp",
          server: name,
          effects: readOnly ? "read" : "external",
          destructive,
          input_schema,
          plugin: "moves-mcp",
        };
        declaration = made;
        declarations.set(key, declaration);
      }
      nextMoves.push(declaration);
      nextToolOf.set(exposed, toolName);
    }
    for (const wanted of spec.tools ?? [])
      if (!byName.has(wanted))
        skipped.push(`${wanted}: [mcp.servers.${name}] tools names it, the server has none`);
    moves = nextMoves.sort((a, b) => a.name.localeCompare(b.name));
    toolOf = nextToolOf;
    return skipped;
  }

  /** The server went away while it was ready (its process ended, or an HTTP request failed). */
  function lost(reason: string, stderr?: string): void {
    if (state.kind !== "ready") return;
    if (Date.now() - state.since >= STABLE_MS) failures = 0;
    fail(reason, stderr);
  }

  /**
   * Marks the server down and schedules the next try. `reason` is what the model may be told;
   * the last line of the server's stderr, when there is one, goes only to the operator (the log,
   * the event, doctor).
   */
  function fail(reason: string, stderr?: string): void {
    const detail = stderr ? `${reason}: ${stderr}` : reason;
    failures += 1;
    const delay = Math.min(RESTART_BASE_MS * 2 ** (failures - 1), RESTART_MAX_MS);
    const timer = setTimeout(() => {
      if (state.kind === "down" && state.timer === timer) void start();
    }, delay);
    timer.unref();
    state = { kind: "down", reason: clean(reason), retryAt: Date.now() + delay, timer };
    lastFailure = {
      error: clean(reason),
      ...(stderr ? { stderr: clean(stderr) } : {}),
      at: new Date().toISOString(),
    };
    log.warn("MCP server stopped", { server: name, error: clean(detail), restart_in_s: delay / 1000 });
    options.failed({ server: name, error: clean(detail), retry_in_s: delay / 1000 });
  }

  function downError(reason: string, retryAt: number, during = false): SparError {
    const seconds = Math.max(0, Math.ceil((retryAt - Date.now()) / 1000));
    const what = during ? "stopped during the call" : "is not running";
    return new SparError(
      "PROVIDER_ERROR",
      `MCP server "${name}" ${what} (${reason}); Spar restarts it in ${seconds} s (at ${new Date(retryAt).toISOString()}); try again after that`,
      { server: name },
    );
  }

  /** Why a call that reached a ready server failed. */
  function callFailure(err: unknown, transport: Transport, tool: string): SparError {
    const message = clean(err instanceof Error ? err.message : String(err));
    if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
      return new SparError("MOVE_TIMEOUT", `MCP server "${name}" did not answer ${tool} in time: ${message}`);
    }
    // An HTTP request that failed below JSON-RPC means the server is unreachable: reconnect later.
    if (
      !(err instanceof McpError) &&
      transport instanceof StreamableHTTPClientTransport &&
      state.kind === "ready"
    ) {
      const current = state;
      lost(`the connection failed: ${message}`);
      void current.client.close().catch(() => undefined);
    }
    const now = state as State;
    if (now.kind === "down") return downError(now.reason, now.retryAt, true);
    if (now.kind === "closed") return shutDown();
    return new SparError("PROVIDER_ERROR", `MCP server "${name}" failed to run ${tool}: ${message}`, {
      server: name,
    });
  }

  const shutDown = () =>
    new SparError("PROVIDER_ERROR", `MCP server "${name}" is shut down (the daemon is stopping)`, {
      server: name,
    });

  async function call(
    move: string,
    input: Record<string, unknown>,
    signal: AbortSignal,
    answered?: (tool: string) => void,
  ): Promise<string> {
    if (state.kind === "idle" || state.kind === "starting") await untilAborted(ensureStarted(), signal);
    const tool = toolOf.get(move);
    if (tool === undefined) {
      throw new SparError("MOVE_NOT_FOUND", `MCP server "${name}" no longer offers ${move}`, {
        server: name,
      });
    }
    const current = state as State;
    if (current.kind === "down") throw downError(current.reason, current.retryAt);
    if (current.kind !== "ready") throw shutDown();
    let result: ToolResult;
    try {
      result = await current.client.callTool({ name: tool, arguments: input }, undefined, {
        signal,
        timeout: options.callTimeoutMs,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      throw callFailure(err, current.transport, tool);
    }
    answered?.(tool);
    const text = clean(resultText(result as ToolResult));
    if (result.isError) {
      throw new SparError("PROVIDER_ERROR", `${tool} (MCP server "${name}") reported an error: ${text}`, {
        server: name,
      });
    }
    return text;
  }

  function ensureStarted(): Promise<void> {
    if (state.kind === "idle") return start();
    if (state.kind === "starting") return state.ready;
    return Promise.resolve();
  }

  return {
    name,
    get state() {
      return state.kind;
    },
    get pid() {
      return state.kind === "ready" && state.transport instanceof ProcessTransport
        ? state.transport.pid
        : undefined;
    },
    get moves() {
      return moves;
    },
    owns: (move) => toolOf.has(move),
    ensureStarted,
    call,
    status() {
      const base = notStarted(spec);
      const current = state;
      const pid =
        current.kind === "ready" && current.transport instanceof ProcessTransport
          ? current.transport.pid
          : undefined;
      return {
        ...base,
        state: PHASES[current.kind],
        tools: moves.map((m) => m.name),
        starts,
        ...(pid ? { pid } : {}),
        ...(current.kind === "ready" ? { since: new Date(current.since).toISOString() } : {}),
        ...(lastFailure ? { last_failure: lastFailure } : {}),
        ...(current.kind === "down" ? { retry_at: new Date(current.retryAt).toISOString() } : {}),
      };
    },
    async close() {
      const previous = state;
      state = { kind: "closed" };
      if (previous.kind === "down") clearTimeout(previous.timer);
      if (previous.kind === "starting") {
        previous.abort.abort();
        await previous.ready;
      }
      if (previous.kind === "ready") await previous.client.close().catch(() => undefined);
    },
  };
}

/** Every page of the server's tool list. */
async function listTools(client: Client, request: { signal: AbortSignal; timeout: number }): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const result = await client.listTools(cursor ? { cursor } : undefined, request);
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

/**
 * A tool's input schema as a move's: `$schema` and `$id` dropped (the kernel's validator speaks
 * draft-07 and registers ids globally), always an object with `properties` (some providers insist).
 */
function inputSchema(tool: Tool): Record<string, unknown> {
  const { $schema: _schema, $id: _id, ...rest } = tool.inputSchema as Record<string, unknown>;
  return { ...rest, type: "object", properties: rest.properties ?? {} };
}

function describeTool(tool: Tool, server: string): string {
  const text =
    tool.description?.trim() || tool.title?.trim() || `Tool ${tool.name} of the MCP server "${server}".`;
  return text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION - 1)}…` : text;
}

/** Why a start failed, without the server's output (that is `lastStderrLine`). */
function startFailure(err: unknown, transport: Transport): string {
  if (transport instanceof ProcessTransport && transport.exitDescription) {
    return `the server process ${transport.exitDescription} before it answered`;
  }
  const message = err instanceof Error ? err.message : String(err);
  return transport instanceof ProcessTransport
    ? `could not start: ${message}`
    : `could not connect: ${message}`;
}

/** How a ready server was lost, for the model: its process's end, never its output. */
function describeLoss(transport: Transport): string {
  if (transport instanceof ProcessTransport)
    return `the server process ${transport.exitDescription ?? "ended"}`;
  return "the connection closed";
}

/** The last line the server wrote to stderr (up to 300 characters), if it wrote any. */
function lastStderrLine(transport: Transport): string | undefined {
  if (!(transport instanceof ProcessTransport)) return undefined;
  const last = transport.stderrTail.trim().split("\n").at(-1)?.trim();
  return last ? last.slice(0, 300) : undefined;
}

/** Waits for `work`, or throws the signal's reason as soon as it fires. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((done, fail) => {
    const onAbort = () => fail(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(done, fail).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
