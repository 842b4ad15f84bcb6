/**
 * The approval requests waiting for an answer, kept live for the whole page: the navigation's count
 * and the Approvals view read the same list. It is loaded once (`GET /api/v1/approvals?status=pending`),
 * then follows the WebSocket: `approval.requested` fetches that one request (the event carries no
 * arguments, on purpose), `approval.answered` drops it. A request whose time runs out is dropped at
 * its expiry, as the daemon then lists it expired. Requests come from the daemon as JSON and are
 * only ever rendered as text (their arguments are what a possibly hijacked model wrote).
 */
import { api } from "./api.js";
import { onLive } from "./live.js";

const LIMIT = 500;
const watchers = new Set();
/** request id → request, pending only. */
const pending = new Map();
/** Ids answered since the page opened: a list fetched before the answer must not bring one back. */
const ended = new Set();
const state = { loaded: false, error: undefined };
let started = false;
let expiryTimer;
/** While a list is on its way: the ids events added meanwhile, which that list may not hold yet. */
let arrived;

function changed() {
  scheduleExpiry();
  for (const watch of watchers) watch();
}

/** The pending requests, oldest first (the first asked is the first to expire). */
export function pendingRequests() {
  return [...pending.values()].sort((a, b) => a.created_at.localeCompare(b.created_at));
}

/** { loaded, error }: whether the first list came, or why it did not. */
export function pendingState() {
  return { ...state };
}

/** Calls `watch()` whenever the pending list changes; returns the way to stop. */
export function watchPending(watch) {
  watchers.add(watch);
  return () => watchers.delete(watch);
}

/** Drops a request at once (this page answered it); the event that follows changes nothing. */
export function forgetPending(id) {
  ended.add(id);
  if (pending.delete(id)) changed();
}

function stillPending(request) {
  return (
    request.status === "pending" && !ended.has(request.id) && Date.parse(request.expires_at) > Date.now()
  );
}

/** Loads the list (again); called once the key may read, and by the view's Refresh. */
export async function loadPending() {
  const mine = new Set();
  arrived = mine;
  try {
    const { approvals } = await api("GET", `/api/v1/approvals?status=pending&limit=${LIMIT}`);
    for (const id of pending.keys()) if (!mine.has(id)) pending.delete(id);
    for (const request of approvals) if (stillPending(request)) pending.set(request.id, request);
    Object.assign(state, { loaded: true, error: undefined });
  } catch (error) {
    Object.assign(state, { loaded: true, error });
  } finally {
    if (arrived === mine) arrived = undefined;
  }
  changed();
}

async function requested(id) {
  if (ended.has(id) || pending.has(id)) return;
  try {
    const request = await api("GET", `/api/v1/approvals/${encodeURIComponent(id)}`);
    if (!stillPending(request)) return;
    arrived?.add(id);
    pending.set(id, request);
    changed();
  } catch {
    // Gone, or not for this key: the list it would have joined is the daemon's to say (Refresh).
  }
}

/** Drops the requests whose time has run out, at the next expiry. */
function scheduleExpiry() {
  clearTimeout(expiryTimer);
  const next = Math.min(...[...pending.values()].map((r) => Date.parse(r.expires_at)));
  if (!Number.isFinite(next)) return;
  expiryTimer = setTimeout(
    () => {
      let dropped = false;
      for (const [id, request] of pending) {
        if (Date.parse(request.expires_at) <= Date.now()) dropped = pending.delete(id) || dropped;
      }
      if (dropped) changed();
      else scheduleExpiry();
    },
    Math.min(Math.max(next - Date.now(), 0) + 50, 2_147_000_000),
  );
}

/** Follows the requests (listening to the socket from the first call) and loads the list: for each key that may read them. */
export function followPending() {
  if (!started) {
    started = true;
    onLive((entry) => {
      if (entry?.type !== "event") return;
      if (entry.kind === "approval.requested") requested(entry.request_id);
      else if (entry.kind === "approval.answered") forgetPending(entry.request_id);
    });
  }
  loadPending();
}
