/**
 * Which of a fighter's bouts an OpenAI-compatible chat request talks in. An OpenAI client re-sends
 * its whole history with every request, but a fighter keeps its own; so the request names a bout
 * instead: `X-Spar-Bout: <id>` continues that one and `X-Spar-Bout: new` starts one; otherwise the
 * `user` field keeps one bout per user string (in the Arena's own collection `openai_bouts`, like a
 * channel chat's, of origin `channel:openai:<user>`), and without either the fighter's latest bout
 * is continued, as on the message route (origin `user`).
 */
import { type Collection, isSparError, type PluginData } from "../../sdk/index.js";

/** The platform in a user's bout's origin (`channel:openai:<user>`), as a channel chat's. */
export const OPENAI_PLATFORM = "openai";

/** `arena-http/openai_bouts`: the bout a `user` talks to a fighter in. Keyed `["<user>","<fighter id>"]`. */
export type OpenAiBoutDoc = {
  id: string;
  user: string;
  fighter_id: string;
  bout_id: string;
  updated_at: string;
};

/** How a message selects its bout, and the origin a new one is recorded with (`MessageOptions`). */
export type BoutOptions = { bout_id?: string; bout?: "new"; origin?: string };

export interface BoutSelection {
  fighterId: string;
  /** The `X-Spar-Bout` header: a bout id or `new`. */
  header?: string;
  /** The request's `user`; empty means none. */
  user?: string;
}

/** Runs one turn; `started` must be called with the turn's bout once the turn is recorded. */
export type TurnInBout<T> = (options: BoutOptions, started: (boutId: string) => void) => Promise<T>;

export interface OpenAiBouts {
  /**
   * Runs `turn` in the bout `selection` names. A user's bout is remembered as soon as the turn is
   * recorded, so it is kept even if the turn then fails; `X-Spar-Bout` with a `user` moves that user
   * to the bout it names (`new` starts the user's next conversation).
   */
  run<T>(selection: BoutSelection, turn: TurnInBout<T>): Promise<T>;
}

/** `data` is the Arena's own (`api.data`): usable once the store is open, before any request. */
export function createOpenAiBouts(data: PluginData): OpenAiBouts {
  const stored = data.openai_bouts as Collection<OpenAiBoutDoc>;
  const keyOf = (user: string, fighterId: string) => JSON.stringify([user, fighterId]);

  // Per fighter and user, the request that is choosing the user's bout: a second one waits until
  // the first one's bout is stored, so two first messages from one user share one bout.
  const choosing = new Map<string, Promise<void>>();

  async function lock(key: string): Promise<() => void> {
    const previous = choosing.get(key) ?? Promise.resolve();
    let unlock!: () => void;
    const mine = new Promise<void>((done) => {
      unlock = done;
    });
    const tail = previous.then(() => mine);
    choosing.set(key, tail);
    await previous;
    return () => {
      unlock();
      if (choosing.get(key) === tail) choosing.delete(key);
    };
  }

  return {
    async run(selection, turn) {
      const { fighterId, header, user } = selection;
      const named: BoutOptions | undefined =
        header === "new" ? { bout: "new" } : header ? { bout_id: header } : undefined;
      if (!user) return turn(named ?? {}, () => undefined);

      const release = await lock(`${fighterId}\u0000${user}`);
      let remembered: Promise<void> = Promise.resolve();
      let known: string | undefined;
      const started = (boutId: string) => {
        if (boutId === known) return release();
        // The turn was recorded in this bout: it exists, so there is nothing to check.
        remembered = stored
          .put({
            id: keyOf(user, fighterId),
            user,
            fighter_id: fighterId,
            bout_id: boutId,
            updated_at: new Date().toISOString(),
          })
          .then(() => undefined)
          .finally(release);
        // Awaited once the turn ends; handled now, so a failure meanwhile is not an unhandled rejection.
        remembered.catch(() => undefined);
      };
      const attempt = async () => {
        if (named) return turn(named, started);
        known = (await stored.get(keyOf(user, fighterId)))?.bout_id;
        if (known) {
          try {
            return await turn({ bout_id: known }, started);
          } catch (err) {
            // The user's bout is gone: the user starts a new one, as a channel chat would.
            if (!isSparError(err, "BOUT_NOT_FOUND")) throw err;
          }
        }
        // Of the user's own origin, like a channel chat's: never the latest bout a `spar chat` continues.
        return turn({ bout: "new", origin: `channel:${OPENAI_PLATFORM}:${user}` }, started);
      };
      try {
        const result = await attempt();
        await remembered;
        return result;
      } catch (err) {
        await remembered.catch(() => undefined);
        throw err;
      } finally {
        release();
      }
    },
  };
}
