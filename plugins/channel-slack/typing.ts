/**
 * Slack's "typing…" for bots. The Events API gives a bot no typing indicator (only the legacy RTM
 * socket had one), so the honest equivalent is a reaction: ⏳ (`hourglass_flowing_sand`) on the
 * member's message while its turn runs, removed once the reply is posted. The relay asks for typing
 * every 4 s while a turn runs; the reaction is added once per message (chat and ts), however often it
 * asks. A reaction that cannot be added (the app lacks the `reactions:write` scope) is logged once and
 * otherwise changes nothing.
 */
import type { webApi } from "@slack/bolt";
import type { Logger } from "../../sdk/index.js";
import { slackErrorText } from "./bolt.js";

/** The reaction shown while a turn runs. */
export const WORKING_REACTION = "hourglass_flowing_sand";

export interface ReactionTyping {
  /** The relay's `typing(chat)`: reacts to every message of `chat` whose turn runs and has no reaction yet. */
  typing(chat: string): Promise<void>;
  /** Runs `turn` for the message `ts` in `chat`, then takes its reaction away if one was added. */
  around(chat: string, ts: string, turn: () => Promise<void>): Promise<void>;
}

interface Working {
  chat: string;
  ts: string;
  /** Set on the first typing call: whether the reaction is there (to be removed). */
  reacted?: Promise<boolean>;
}

/** Slack errors that mean the reaction is there all the same. */
const ALREADY = new Set(["already_reacted"]);

export function createReactionTyping(client: webApi.WebClient, log: Logger): ReactionTyping {
  const working = new Set<Working>();
  let warned = false;

  async function add(w: Working): Promise<boolean> {
    try {
      await client.reactions.add({ channel: w.chat, timestamp: w.ts, name: WORKING_REACTION });
      return true;
    } catch (err) {
      const error = slackErrorText(err);
      if (ALREADY.has(error)) return true;
      if (!warned) {
        warned = true;
        log.warn(
          "slack: could not show the working reaction (does the app have the reactions:write scope?)",
          {
            error,
          },
        );
      }
      return false;
    }
  }

  return {
    async typing(chat) {
      const fresh = [...working].filter((w) => w.chat === chat && w.reacted === undefined);
      for (const w of fresh) w.reacted = add(w);
      await Promise.all(fresh.map((w) => w.reacted));
    },
    async around(chat, ts, turn) {
      const w: Working = { chat, ts };
      working.add(w);
      try {
        await turn();
      } finally {
        working.delete(w);
        if (await w.reacted) {
          await client.reactions
            .remove({ channel: chat, timestamp: ts, name: WORKING_REACTION })
            .catch((err: unknown) =>
              log.warn("slack: could not remove the working reaction", { error: slackErrorText(err) }),
            );
        }
      }
    },
  };
}
