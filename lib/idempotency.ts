import { createHash } from "node:crypto";
import { ERROR_CATALOG, type ErrorCode, type ErrorExtra, SparError } from "../sdk/errors.js";
import type { FighterMessageResult } from "../sdk/services.js";
import type { Store, StoredReply } from "../sdk/store-types.js";

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** What was asked, in a form two attempts of the same request share and any other request does not. */
export function requestHash(fighterId: string, text: string, bout: string | undefined): string {
  return createHash("sha256")
    .update(JSON.stringify([fighterId, text, bout ?? ""]))
    .digest("hex");
}

/** The first attempt's reply, given again: its result, or its error with the same code. */
export function replay(reply: StoredReply): FighterMessageResult {
  if (reply.ok) return reply.result as FighterMessageResult;
  const { code, message, ...extra } = reply.error;
  const known = Object.hasOwn(ERROR_CATALOG, code) ? (code as ErrorCode) : "INTERNAL";
  throw new SparError(known, message, extra as ErrorExtra);
}

/**
 * Idempotency-Key (DESIGN §4): the first attempt runs; a retry with the same key gets its stored reply,
 * or waits for it while it runs, and never runs the turn again. The same key with another request is
 * CONFLICT. Attempts in flight are tracked here, so two concurrent retries still run one turn.
 *
 * `attempt` is called at once, so the message takes its place in the fighter's queue in arrival
 * order; it calls `recorded()` when its turn comes, which answers from the store when the key was
 * used before (replaying the first attempt's reply) and undefined when the turn should run.
 */
export function createIdempotency(store: () => Store) {
  const inflight = new Map<string, { hash: string; reply: Promise<FighterMessageResult> }>();

  return {
    async run(
      key: string,
      hash: string,
      attempt: (recorded: () => Promise<FighterMessageResult | undefined>) => Promise<FighterMessageResult>,
    ): Promise<FighterMessageResult> {
      const running = inflight.get(key);
      if (running) {
        if (running.hash !== hash) throw reused(key);
        return running.reply;
      }
      const recorded = async () => {
        const record = await store().idempotency.get(key);
        if (!record) return undefined;
        if (record.request_hash !== hash) throw reused(key);
        // A turn left running by a stopped daemon is abandoned at start, with a reply, so one is here.
        if (record.reply) return replay(record.reply);
        throw new SparError(
          "CONFLICT",
          `the Idempotency-Key "${key}" belongs to a turn that is still running`,
        );
      };
      const reply = attempt(recorded);
      inflight.set(key, { hash, reply });
      try {
        return await reply;
      } finally {
        inflight.delete(key);
      }
    },
    /** Forgets keys older than the TTL. */
    purge: () => store().idempotency.purge(new Date(Date.now() - IDEMPOTENCY_TTL_MS).toISOString()),
  };
}

function reused(key: string): SparError {
  return new SparError(
    "CONFLICT",
    `the Idempotency-Key "${key}" was used for a different request; use a new key for a new message`,
  );
}
