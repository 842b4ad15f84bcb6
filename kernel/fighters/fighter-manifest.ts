import { SparError } from "../../sdk/errors.js";
import { formatSchemaErrors, validatorFor } from "../../sdk/schema.js";
import { FIGHTER_MANIFEST_SCHEMA } from "../../sdk/schemas.js";
import {
  type Capability,
  type FighterManifest,
  type MoveDeclaration,
  OPEN_CAPABILITY,
} from "../../sdk/types.js";

/**
 * Validates a manifest (unknown fields are refused with their path) and returns it with defaults.
 * A capability type is known when it is the kernel's or an installed plugin's move declares it.
 */
export function validateFighterManifest(
  input: unknown,
  knownCapabilities: ReadonlySet<string>,
): FighterManifest {
  const name = (input as { name?: unknown } | null)?.name;
  const problem = typeof name === "string" ? nameProblem(name) : undefined;
  if (problem)
    throw new SparError("VALIDATION_FAILED", `manifest.name ${problem}`, { path: "/manifest/name" });
  const validate = validatorFor(FIGHTER_MANIFEST_SCHEMA);
  if (!validate(input)) {
    const message = formatSchemaErrors(validate.errors, "manifest");
    throw new SparError("VALIDATION_FAILED", message, {
      path: `/manifest${validate.errors?.[0]?.instancePath ?? ""}`,
    });
  }
  const manifest = input as FighterManifest;
  const unknown = (manifest.capabilities ?? []).findIndex((c) => !knownCapabilities.has(c.type));
  if (unknown >= 0) {
    throw new SparError(
      "VALIDATION_FAILED",
      `manifest.capabilities.${unknown}.type "${manifest.capabilities?.[unknown]?.type}" is no capability of the kernel or of an installed plugin; known: ${[...knownCapabilities].sort().join(", ")}`,
      { path: `/manifest/capabilities/${unknown}/type` },
    );
  }
  return {
    ...manifest,
    weight_class: manifest.weight_class ?? "middleweight",
    capabilities: manifest.capabilities ?? [{ type: "memory" }],
    skills: manifest.skills ?? [],
  };
}

/**
 * The fighter's grants that allow `move`: its type, or `full_access`; and when both the grant and
 * the move name a `server`, the same one. Empty when the fighter may not use the move.
 */
export function matchGrants(
  grants: readonly Capability[],
  move: Pick<MoveDeclaration, "capability" | "server">,
): Capability[] {
  // A move declared with capability "none" (reading skills, finding moves) is every fighter's.
  if (move.capability === OPEN_CAPABILITY) return [{ type: OPEN_CAPABILITY }];
  return grants.filter(
    (g) =>
      g.type === "full_access" ||
      (g.type === move.capability &&
        (g.server === undefined || move.server === undefined || g.server === move.server)),
  );
}

/**
 * Why a name cannot be a fighter's: names are any printable text, but no control characters, no
 * invisible ones (zero-width, bidi overrides: they would make two names look alike), no `/`, and no
 * space at either end ("spar " and "spar" would look the same in a list).
 */
export function nameProblem(name: string): string | undefined {
  const shown = JSON.stringify(name);
  if (name.trim() === "") return `${shown} is empty; give the fighter a name`;
  if (name.trim() !== name)
    return `${shown} cannot start or end with a space; did you mean ${JSON.stringify(name.trim())}?`;
  if (/\p{Cc}/u.test(name)) return `${shown} contains a control character`;
  if (/\p{Cf}/u.test(name)) return `${shown} contains an invisible character (zero-width or text-direction)`;
  if (name.includes("/")) return `${shown} contains "/", which fighter names cannot (they appear in URLs)`;
  return undefined;
}
