import {
  type Capability,
  definePlugin,
  type MoveHandler,
  refuseLasting,
  SparError,
  type TaintSource,
} from "../../sdk/index.js";

/**
 * `fighter_message {to, content}`: a turn of another fighter, started from inside this one. The call
 * carries this turn's chain and signal, so a message back to a fighter already waiting in the chain
 * is refused at once (CONFLICT, as a tool error) instead of waiting on itself, and the other turn is
 * cancelled when this one is (or when this call runs out of time). Taint crosses with the words: a
 * tainted turn's message starts the other's turn tainted (by this fighter and its turn's sources),
 * and a reply from a tainted turn taints this one.
 *
 * `fighter_spawn`: a new fighter, holding only capability types the spawner holds, each with the
 * spawner's own grants for it (its scope, pattern, hosts, server), and the spawner's model, so no
 * fighter can make one with more rights than its own. A spawner with `full_access` may pass on any
 * type but `full_access` itself, unrestricted.
 */
export default definePlugin({
  id: "moves-fighters",
  apply({ hooks, ring }) {
    const fighterMessage: MoveHandler = {
      name: "fighter_message",
      async run(input, { fighter, signal, chain, taint, untrusted }) {
        const to = String(input.to);
        const reply = await ring.fighters.messageTo(fighter.id, to, String(input.content), {
          signal,
          chain,
          ...(taint.length > 0 ? { taint: passedOn(fighter.name, taint) } : {}),
        });
        // What the other turn read besides what this one passed it (that comes back as it went).
        const passed = new Set(passedOn(fighter.name, taint).map(sourceKey));
        const read = reply.taint?.find((t) => !passed.has(sourceKey(t)));
        if (read) {
          untrusted({
            kind: "fighter",
            detail: `${to} (its turn had read ${read.detail})`,
            move: "fighter_message",
          });
        }
        return { from: to, response: reply.response, bout_id: reply.bout_id };
      },
    };
    const fighterSpawn: MoveHandler = {
      name: "fighter_spawn",
      async run(input, { fighter, callers }) {
        refuseLasting("fighter_spawn", callers);
        const own = fighter.manifest.capabilities ?? [];
        const wanted = (input.capabilities as string[] | undefined) ?? [];
        const capabilities = wanted.flatMap((type) => passOn(own, type));
        const record = await ring.fighters.spawn({
          manifest: {
            name: String(input.name),
            description:
              typeof input.description === "string" ? input.description : `spawned by ${fighter.name}`,
            system_prompt: String(input.system_prompt),
            capabilities,
            ...(fighter.manifest.model ? { model: fighter.manifest.model } : {}),
          },
        });
        return { id: record.id, name: record.name, capabilities: capabilities.map((c) => c.type) };
      },
    };
    const handlers = new Map([fighterMessage, fighterSpawn].map((h) => [h.name, h]));
    hooks.move.resolve.tap((name) => handlers.get(name));
  },
});

/**
 * What a tainted turn's message seeds the other fighter's turn with: the sender, then every source
 * the sender's turn had taken in (the words it sends may be theirs).
 */
export function passedOn(sender: string, taint: readonly TaintSource[]): TaintSource[] {
  return [{ kind: "fighter", detail: sender }, ...taint];
}

const sourceKey = (t: TaintSource) => `${t.kind}\0${t.detail}`;

/** The spawner's grants for `type`, to be the new fighter's; CAPABILITY_DENIED when it holds none. */
function passOn(own: readonly Capability[], type: string): Capability[] {
  if (type === "full_access") {
    throw new SparError("CAPABILITY_DENIED", "full_access cannot be passed on to a spawned fighter");
  }
  const exact = own.filter((g) => g.type === type);
  if (exact.length > 0) return exact.map((g) => ({ ...g }));
  if (own.some((g) => g.type === "full_access")) return [{ type }];
  throw new SparError(
    "CAPABILITY_DENIED",
    `you do not hold "${type}", so you cannot give it; you hold: ${[...new Set(own.map((g) => g.type))].join(", ") || "nothing"}`,
  );
}
