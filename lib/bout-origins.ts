/**
 * Who started a bout (DESIGN §9): `user` (the CLI, the API, the dashboard, the WebSocket),
 * `channel:<platform>:<chat>` (a channel chat, and an OpenAI-compatible request's `user`),
 * `troop-task:<id>` (a troop task's steps), `fighter:<id>` (another fighter's messages),
 * `gorilla:<name>` (a gorilla's cycles) or `schedule` (a message a fighter scheduled). "The latest
 * bout" a message without a bout continues is the latest of its own origin, so no conversation
 * leaks into another's prompt. A user's bouts are stored without an origin (as every bout was
 * before origins existed), and are shown as `user`.
 */
import { SparError } from "../sdk/errors.js";
import type { BoutRecord } from "../sdk/types.js";

/** The origin of a user's own bouts, as listings show it. */
export const USER_ORIGIN = "user";

/** A bout as listings show it: its origin always present, `user` for a user's. */
export function shownBout(bout: BoutRecord): BoutRecord & { origin: string } {
  return { ...bout, origin: bout.origin ?? USER_ORIGIN };
}

/** The longest `?origin=` filter taken: a channel's chat id with its platform, and room to spare. */
const MAX_FILTER = 300;

/**
 * A filter as given (`?origin=`, `--origin`), refused with VALIDATION_FAILED naming `option` when it
 * is empty or overlong.
 */
export function originFilter(filter: string, option = "?origin"): string {
  if (filter.length === 0 || filter.length > MAX_FILTER) {
    throw new SparError(
      "VALIDATION_FAILED",
      `${option} must be 1 to ${MAX_FILTER} characters: an origin (user, channel:telegram:<chat>, troop-task:<id>, fighter:<id>, gorilla:<name>, schedule) or a kind (channel, troop-task, fighter, gorilla)`,
    );
  }
  return filter;
}

/**
 * Whether a bout of `origin` passes `filter`: the same origin, or one of its kind when the filter
 * is a kind alone (`channel` takes `channel:telegram:42`, `channel:telegram` takes every Telegram
 * chat).
 *
 * @example
 * originMatches("channel:telegram:42", "channel"); // true
 */
export function originMatches(origin: string, filter: string): boolean {
  return origin === filter || origin.startsWith(`${filter}:`);
}
