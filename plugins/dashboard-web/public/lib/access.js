/**
 * What the key in use may do, as the daemon says (`GET /api/v1/key`): the page shows the scope and
 * offers only what it allows, so a `read` key meets no chat box or Unleash button, and a
 * `chat:<fighter>` key sees the chat with its fighters and the event feed, nothing else. The daemon
 * enforces the scope on every request whatever the page shows; hiding is for the person, not for
 * safety. The scope is read once per key: a scope changed with `spar key scope` shows after a reload.
 */
import { authState } from "./api.js";

/** The key's answer: { key, scope, fighters, may: { read, operate, admin } }. */
export function currentAccess() {
  return authState().access;
}

/** Whether the key may GET the daemon's lists (every scope but `chat`). */
export function mayRead(access = currentAccess()) {
  return access?.may.read !== false;
}

/** Whether the key may act: send, cancel, unleash, cage (`operator` and `admin`). */
export function mayOperate(access = currentAccess()) {
  return access?.may.operate !== false;
}

/**
 * Whether the key may chat with the fighter: `operator` and `admin` with any; `chat:<…>` with those
 * it names, by name or by id, as written in the scope (a fighter given by `{ id, name }` or by the
 * one word an address holds).
 */
export function mayChat(fighter, access = currentAccess()) {
  if (mayOperate(access)) return true;
  const names = access?.fighters ?? [];
  const words = typeof fighter === "string" ? [fighter] : [fighter.id, fighter.name];
  return words.some((word) => names.includes(word));
}

/** The scope in a few words, for the page's header. */
export function describeAccess(access) {
  if (access.error) return `scope unknown (${access.error.message})`;
  if (access.may.admin) return `scope ${access.scope}: everything`;
  if (access.may.operate) return `scope ${access.scope}: everything but backups`;
  if (access.may.read) return `scope ${access.scope}: look, not act`;
  return `scope ${access.scope}: chat with ${access.fighters.join(", ")} only`;
}

/** The words for a view or an action the key may not use. */
export function refusal(access, needs) {
  // Unsigned requests are this machine's owner's (admin): only a signing key is ever refused.
  return `The key "${access.key}" has scope ${access.scope}; ${needs}.`;
}

/**
 * Whether the key may open a view: the event feed any key (a `chat` key's socket carries its
 * fighters' events only); the chat a `chat` key too (its own fighters'); the rest need `read`. A
 * `read` key opens a chat read-only, without the box to write in it.
 */
export function mayOpen(view, access = currentAccess()) {
  if (view === "events" || view === "unknown") return true;
  if (view === "chat") return mayRead(access) || (access?.fighters?.length ?? 0) > 0;
  return mayRead(access);
}

/** Whether the navigation offers the view: the chat only to a key that may write in one. */
export function offered(view, access = currentAccess()) {
  if (view === "chat") return mayOperate(access) || (access?.fighters?.length ?? 0) > 0;
  return mayOpen(view, access);
}

/** The view the bare address opens: the fighters, or for a `chat` key its chat. */
export function homeView(access = currentAccess()) {
  return mayRead(access) ? "fighters" : "chat";
}
