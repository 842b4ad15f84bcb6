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

type Tap = (...args: never[]) => unknown;

const quiet = { info() {}, warn() {}, error() {} };

/** A plugin applied by `applyMoves`: its handler for a move, and every function it tapped, by hook. */
export interface AppliedMoves {
  /** The handler `move.resolve` gives for `name`; throws when the plugin has none. */
  move(name: string): Promise<MoveHandler>;
  /** What the plugin tapped on `<group>.<hook>` (e.g. "move.list"), in order. */
  taps(path: string): Tap[];
}

/**
 * Applies `plugin` with `api` over a stand-in (hooks that only record their taps, a quiet log, no
 * environment) and `sections`, its config tables.
 */
export async function applyMoves(
  plugin: SparPlugin<never>,
  api: Partial<PluginApi> = {},
  sections: Record<string, unknown> = {},
): Promise<AppliedMoves> {
  const tapped = new Map<string, Tap[]>();
  const taps = (path: string) => tapped.get(path) ?? [];
  const group = (groupName: string) =>
    new Proxy(
      {},
      {
        get: (_, hook) => ({
          tap: (fn: Tap) =>
            tapped.set(`${groupName}.${String(hook)}`, [...taps(`${groupName}.${String(hook)}`), fn]),
        }),
      },
    );
  const hooks = new Proxy({}, { get: (_, name) => group(String(name)) });
  await (plugin as SparPlugin<Record<string, unknown>>).apply(
    { id: plugin.id, hooks, home: "/nonexistent/spar", env: {}, log: quiet, ...api } as unknown as PluginApi,
    sections,
  );
  return {
    taps,
    async move(name) {
      for (const resolve of taps("move.resolve")) {
        const handler = await (resolve as (name: string) => Promise<MoveHandler | undefined>)(name);
        if (handler) return handler;
      }
      throw new Error(`${plugin.id} has no move ${name}`);
    },
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
    turn_id: "t1",
    origin: "user",
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
