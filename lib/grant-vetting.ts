/**
 * The check a fighter's manifest passes before it is stored (from the API, `fighter_spawn` or a
 * template): a grant's fields are its plugin's to judge (a file scope against the operator's allowed
 * folders), so the plugins of the moves a scoped grant allows are activated first, then the
 * `fighter.spawning` hook is asked. Kept out of the kernel's files, which have a size budget.
 */
import { type ErrorExtra, SparError } from "../sdk/errors.js";
import type { RingHooks } from "../sdk/hooks.js";
import type { MoveListing } from "../sdk/services.js";
import {
  type Capability,
  type FighterManifest,
  type MoveDeclaration,
  OPEN_CAPABILITY,
} from "../sdk/types.js";
import { invalidHostEntries } from "./web/host-grants.js";

export interface GrantVettingDeps {
  moves: ReadonlyMap<string, MoveListing>;
  activate: (event: string) => Promise<unknown>;
  hooks: Pick<RingHooks, "fighter">;
  /** The kernel's grant matching: the grants among `grants` that allow `move`. */
  matchGrants: (
    grants: readonly Capability[],
    move: Pick<MoveDeclaration, "capability" | "server">,
  ) => Capability[];
}

export function createGrantVetting(deps: GrantVettingDeps) {
  return async function vetGrants(manifest: FighterManifest): Promise<void> {
    refuseBadHosts(manifest.capabilities ?? []);
    const scoped = (manifest.capabilities ?? []).filter((grant) => grant.scope !== undefined);
    if (scoped.length > 0) {
      const judges = [...deps.moves.values()].filter(
        (move) => move.capability !== OPEN_CAPABILITY && deps.matchGrants(scoped, move).length > 0,
      );
      await Promise.all(judges.map((move) => deps.activate(`onMove:${move.name}`)));
    }
    const refusal = await deps.hooks.fighter.spawning.promise(manifest);
    if (refusal) {
      const extra: ErrorExtra = refusal.path === undefined ? {} : { path: `/manifest${refusal.path}` };
      throw new SparError(refusal.code, refusal.message, extra);
    }
  };
}

/**
 * A `hosts` entry that is no host pattern would match nothing and leave the fighter without the
 * network its author meant to grant, so it is refused at spawn, naming the entry and the forms.
 */
function refuseBadHosts(capabilities: readonly Capability[]): void {
  capabilities.forEach((grant, index) => {
    const bad = grant.hosts === undefined ? [] : invalidHostEntries(grant.hosts);
    if (bad.length === 0) return;
    throw new SparError(
      "VALIDATION_FAILED",
      `capability ${index} (${grant.type}): hosts ${bad.map((b) => JSON.stringify(b)).join(", ")} ${bad.length === 1 ? "is" : "are"} no host pattern: use *, example.com, *.example.com, an IP address, each optionally with :port`,
      { path: `/manifest/capabilities/${index}/hosts` },
    );
  });
}
