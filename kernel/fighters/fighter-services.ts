import { fighterUsage } from "../../lib/pricing.js";
import type { ContextPreview } from "../../lib/turn-context.js";
import { SparError } from "../../sdk/errors.js";
import type { RingServices } from "../../sdk/services.js";
import type { Store } from "../../sdk/store-types.js";
import type { MessagePath } from "../turns/message-path.js";
import type { FighterRegistry } from "./fighter-registry.js";

/** The Ring's `fighters` service: the registry for who they are, the message path for what they do. */
export function fighterServices(
  fighters: FighterRegistry,
  path: MessagePath,
  requireStore: () => Store,
  preview: ContextPreview,
): RingServices["fighters"] {
  async function fighterRow(idOrName: string) {
    return (await fighters.lookup(idOrName)).row;
  }
  return {
    spawn: (request) => fighters.spawn(request),
    list: async () => fighters.all().map(fighters.record),
    get: async (idOrName) => fighters.record(await fighters.lookup(idOrName)),
    manifest: async (idOrName) => (await fighterRow(idOrName)).manifest,
    kill: async (idOrName) => {
      await fighterRow(idOrName);
      await fighters.kill(idOrName);
    },
    message: path.message,
    messageTo: path.messageTo,
    cancel: path.cancel,
    awaitApproval: path.awaitApproval,
    awaiting: () => requireStore().turns.awaiting(),
    async resume(turnId) {
      const turn = await requireStore().turns.get(turnId);
      if (turn?.status !== "awaiting_approval")
        throw new SparError("CONFLICT", `turn ${turnId} is not awaiting an approval`);
      return path.resume(turn);
    },
    usage: async (idOrName) => {
      const row = await fighterRow(idOrName);
      return fighterUsage(row.name, await requireStore().usage.summary(row.id));
    },
    bouts: async (idOrName) => requireStore().bouts.list((await fighterRow(idOrName)).id),
    context: async (idOrName, options) => preview(await fighterRow(idOrName), options),
  };
}
