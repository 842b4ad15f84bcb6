/**
 * No privilege through another fighter. A turn whose call chain holds fighters (one messaged this
 * fighter, through `fighter_message` or `message-to`) may do only what its fighter AND every one of
 * them may: the kernel refuses a move whose capability some caller does not hold at all
 * (`callerRefusal`), and hands the move each caller's matching grants (`callerGrants`, the
 * `MoveContext.callers`) so it holds their scope, pattern and hosts too. Only fighters constrain: a
 * chain entry `<kind>:<id>` names another starter of the chain (a troop task a user gave), which
 * holds no grants of its own. Such a turn runs in a bout of its starter's (`originOf`), never a
 * user's.
 */
import { SparError } from "../sdk/errors.js";
import type { MoveCallInfo, MoveRefusal } from "../sdk/hooks.js";
import type { Capability, FighterRow, MoveCaller } from "../sdk/types.js";

/** Whether a chain entry names a fighter (its id) rather than another starter (`troop-task:<id>`). */
export function isFighterEntry(entry: string): boolean {
  return !entry.includes(":");
}

/**
 * The fighters of `chain`, outermost first, each looked up by id (never by name: a fighter named
 * like another's id must not stand in for it). One that no longer exists is FIGHTER_NOT_FOUND: a
 * caller whose grants are unknown cannot be intersected.
 */
export async function resolveCallers(
  chain: readonly string[],
  byId: (id: string) => Promise<FighterRow | undefined>,
): Promise<FighterRow[]> {
  const rows: FighterRow[] = [];
  for (const id of chain.filter(isFighterEntry)) {
    const row = await byId(id);
    if (!row) {
      throw new SparError("FIGHTER_NOT_FOUND", `fighter ${id}, waiting on this message, no longer exists`, {
        fighter: id,
      });
    }
    rows.push(row);
  }
  return rows;
}

/** Each caller with its grants that allow the move (`match` is the kernel's grant matching). */
export function callerGrants(
  callers: readonly FighterRow[],
  match: (grants: readonly Capability[]) => Capability[],
): MoveCaller[] {
  return callers.map((c) => ({
    id: c.id,
    name: c.name,
    grants: match(c.manifest.capabilities ?? []),
    capabilities: c.manifest.capabilities ?? [],
  }));
}

/** The refusal when some caller holds no grant for the move, naming it and the chain; else undefined. */
export function callerRefusal(info: MoveCallInfo): MoveRefusal | undefined {
  const lacking = info.callers.find((c) => c.grants.length === 0);
  if (!lacking) return undefined;
  const chain = [...info.callers.map((c) => c.name), info.fighter.name].map((n) => JSON.stringify(n));
  const needed = `the "${info.capability}" capability${info.server ? ` for server "${info.server}"` : ""}`;
  return {
    code: "CAPABILITY_DENIED",
    message: `${info.call.name} is not allowed in this turn: it was started by fighter ${JSON.stringify(lacking.name)} (${lacking.id}), which does not hold ${needed} (call chain: ${chain.join(" → ")}); a fighter gains no rights by asking another`,
  };
}

/**
 * The name a user's own bouts answer to in a listing's `?origin=`: such a bout is stored without an
 * origin (BoutRecord.origin), and one recorded as `user` counts too, so the listing stays right when
 * user bouts are marked.
 */
export const USER_ORIGIN = "user";

/** Whether the bout is of `origin` (`user`: a user's own; otherwise the exact starter, `troop-task:<id>` …). */
export function isOfOrigin(bout: { origin?: string }, origin: string): boolean {
  if (origin === USER_ORIGIN) return bout.origin === undefined || bout.origin === USER_ORIGIN;
  return bout.origin === origin;
}

/** The origin of the bout a turn with this chain runs in: its immediate starter; none for a user's turn. */
export function originOf(chain: readonly string[]): string | undefined {
  const starter = chain.at(-1);
  if (starter === undefined) return undefined;
  return isFighterEntry(starter) ? `fighter:${starter}` : starter;
}

/**
 * Refuses a move that would outlive the turn with the callee's own rights (a schedule that later
 * runs as the fighter's own turn, a fighter spawned with its grants) when another fighter started
 * the turn: the intersection would end with the turn, and the caller would keep what it lacks.
 */
export function refuseLasting(move: string, callers: readonly MoveCaller[]): void {
  const first = callers[0];
  if (!first) return;
  throw new SparError(
    "CAPABILITY_DENIED",
    `${move} is not allowed in a turn another fighter started (here fighter ${JSON.stringify(first.name)}): what it makes would later act with this fighter's own grants, beyond the call chain's`,
  );
}
