/**
 * For moves plugins' own tests: a plugin applied with only what its moves need, its handlers found
 * the way the kernel finds them (`move.resolve`), and a MoveContext that records what a move marks
 * untrusted (`context.untrusted`).
 */
import type {
  FighterRow,
  MoveContext,
  MoveHandler,
  PluginApi,
  SparPlugin,
  TaintSource,
} from "../../sdk/index.js";

type Resolve = (name: string) => MoveHandler | undefined | Promise<MoveHandler | undefined>;

const quiet = { info() {}, warn() {}, error() {} };

/**
 * Applies `plugin` with `api` over a stand-in (hooks that keep only `move.resolve` taps, a quiet log)
 * and returns its handler for a move name; throws when it has none.
 */
export async function applyMoves(
  plugin: SparPlugin<never>,
  api: Partial<PluginApi> = {},
  sections: Record<string, unknown> = {},
): Promise<(name: string) => Promise<MoveHandler>> {
  const resolvers: Resolve[] = [];
  const ignored = { tap: () => undefined };
  const group = (groupName: string) =>
    new Proxy(
      {},
      {
        get: (_, hook) =>
          groupName === "move" && hook === "resolve" ? { tap: (fn: Resolve) => resolvers.push(fn) } : ignored,
      },
    );
  const hooks = new Proxy({}, { get: (_, name) => group(String(name)) });
  await (plugin as SparPlugin<Record<string, unknown>>).apply(
    { id: plugin.id, hooks, home: "/nonexistent/spar", env: {}, log: quiet, ...api } as unknown as PluginApi,
    sections,
  );
  return async (name) => {
    for (const resolve of resolvers) {
      const handler = await resolve(name);
      if (handler) return handler;
    }
    throw new Error(`${plugin.id} has no move ${name}`);
  };
}

export const TEST_FIGHTER: FighterRow = {
  id: "f1",
  name: "scout",
  created_at: "2026-01-01T00:00:00.000Z",
  manifest: { name: "scout", description: "", system_prompt: "" },
};

/** A move's context for `fighter` (TEST_FIGHTER), with `marks`: every source the move marked untrusted. */
export function moveContext(overrides: Partial<MoveContext> = {}): MoveContext & { marks: TaintSource[] } {
  const marks: TaintSource[] = [];
  return {
    fighter: TEST_FIGHTER,
    bout_id: "b1",
    signal: new AbortController().signal,
    chain: [TEST_FIGHTER.id],
    grants: [],
    callers: [],
    workspace: "/nonexistent/spar/workspaces/scout",
    taint: [],
    untrusted: (source) => {
      marks.push(source);
    },
    ...overrides,
    marks,
  };
}
