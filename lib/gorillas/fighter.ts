/**
 * A gorilla's own fighter: spawned from its GORILLA.toml the first time a cycle needs it, then kept
 * (its memories are its own). A fighter spawned from an earlier file is warned about, not replaced.
 */
import { isSparError, type Logger, type RingServices } from "../../sdk/index.js";
import { fighterManifest, fighterName } from "./cycle.js";
import type { LoadedGorilla } from "./manifest.js";

/** Where the fighter's name is remembered once it is known to exist. */
export interface FighterCache {
  fighter?: Promise<string>;
}

/** The gorilla's fighter, spawned when missing; its name. A failure is not remembered. */
export function ensureFighter(
  cache: FighterCache,
  gorilla: LoadedGorilla,
  deps: { ring: RingServices; log: Logger },
): Promise<string> {
  const name = fighterName(gorilla.name);
  cache.fighter ??= (async () => {
    try {
      const existing = await deps.ring.fighters.manifest(name);
      warnIfStale(gorilla, existing, deps.log);
    } catch (err) {
      if (!isSparError(err, "FIGHTER_NOT_FOUND")) throw err;
      await deps.ring.fighters.spawn({ manifest: fighterManifest(gorilla) });
    }
    return name;
  })().catch((err: unknown) => {
    cache.fighter = undefined;
    throw err;
  });
  return cache.fighter;
}

/**
 * A fighter outlives edits of its GORILLA.toml (its memories are its own). The system prompt and
 * the moves follow the file at every call (see plugin.ts); grants and model are the fighter's.
 */
function warnIfStale(
  gorilla: LoadedGorilla,
  manifest: { capabilities?: { type: string }[]; model?: unknown },
  log: Logger,
): void {
  const wanted = fighterManifest(gorilla);
  const types = (m: { capabilities?: { type: string }[] }) =>
    (m.capabilities ?? [])
      .map((c) => c.type)
      .sort()
      .join(",");
  if (types(manifest) === types(wanted) && JSON.stringify(manifest.model) === JSON.stringify(wanted.model))
    return;
  log.warn(
    "a gorilla's fighter was spawned from an earlier GORILLA.toml: its grants or model differ from the file's. " +
      "To apply them, kill the fighter (its memories go with it) and it is spawned again at the next cycle",
    { gorilla: gorilla.name, fighter: fighterName(gorilla.name) },
  );
}
