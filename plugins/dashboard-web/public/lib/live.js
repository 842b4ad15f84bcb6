/**
 * The live event stream: one WebSocket to /api/v1/ws, subscribed to every kind. After a drop it
 * reconnects (after 1 s, doubling up to 30 s) and subscribes with `since` = the seq of the last event
 * it saw, so what happened in between is replayed from the daemon's history ring. The first
 * connection subscribes with `since: 0`, so the feed opens with the recent events the daemon keeps. A browser cannot
 * sign a WebSocket upgrade (it sends no custom headers on one): when the page signs its requests, it
 * first asks for a one-use ticket (a signed `POST /api/v1/ws/ticket`) and opens the socket with it.
 */
import { api, authState } from "./api.js";

const KEEP = 500;
const listeners = new Set();
/** Newest last: events (`type: "event"`) and notices (`type: "notice"`) as they came. */
const feed = [];
const state = { status: "off", lastSeq: undefined, resumedFrom: undefined };
let socket;
/** True while a connection is being set up (its ticket asked for), before `socket` is set. */
let opening = false;
let retryMs = 1000;
/** The `since` the open connection subscribed with. */
let subscribedSince;

function notify(entry) {
  for (const listen of listeners) listen(entry);
}

function remember(entry) {
  feed.push(entry);
  if (feed.length > KEEP) feed.splice(0, feed.length - KEEP);
  notify(entry);
}

function setState(changes) {
  Object.assign(state, changes);
  notify(undefined);
}

/** The connection's state: status "off" | "connecting" | "live" | "reconnecting". */
export function liveState() {
  return { ...state };
}

/** The events and notices received so far, newest last. */
export function liveFeed() {
  return feed;
}

/** Calls `listen(entry)` for each event or notice, and `listen(undefined)` when the state changes. */
export function onLive(listen) {
  listeners.add(listen);
  return () => listeners.delete(listen);
}

/** Connects (once); later calls do nothing while a connection is open or coming. */
export function startLive() {
  if (socket || opening) return;
  connect();
}

/** Tries again later, each wait twice the last, up to 30 s. */
function retry() {
  setState({ status: "reconnecting" });
  setTimeout(connect, retryMs);
  retryMs = Math.min(retryMs * 2, 30_000);
}

async function connect() {
  opening = true;
  const resuming = state.lastSeq !== undefined;
  setState({ status: resuming ? "reconnecting" : "connecting" });
  let query = "";
  if (authState().mode === "signed") {
    try {
      const { ticket } = await api("POST", "/api/v1/ws/ticket");
      query = `?ticket=${encodeURIComponent(ticket)}`;
    } catch {
      opening = false;
      retry();
      return;
    }
  }
  opening = false;
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/api/v1/ws${query}`);
  socket = ws;
  ws.addEventListener("open", () => {
    subscribedSince = state.lastSeq;
    ws.send(JSON.stringify({ type: "subscribe", kinds: ["*"], since: subscribedSince ?? 0 }));
  });
  ws.addEventListener("message", (message) => receive(ws, JSON.parse(message.data)));
  ws.addEventListener("close", () => {
    if (socket !== ws) return;
    socket = undefined;
    retry();
  });
}

function receive(ws, frame) {
  if (socket !== ws) return;
  if (frame.type === "event") {
    state.lastSeq = frame.seq;
    // Streamed tokens belong to the chat that asked for them, not to the feed.
    if (frame.kind !== "message.delta") remember(frame);
    return;
  }
  if (frame.type === "subscribed") {
    retryMs = 1000;
    const seen = state.lastSeq;
    const restarted = seen !== undefined && frame.last_seq < seen;
    if (restarted) {
      // The daemon restarted: its sequence began again, and what it held before is gone.
      remember({
        type: "notice",
        code: "RESTARTED",
        message: "the daemon restarted; earlier events are gone",
      });
    }
    setState({
      status: "live",
      resumedFrom: subscribedSince,
      lastSeq: seen === undefined || restarted ? frame.last_seq : seen,
    });
    return;
  }
  // On the first connection a gap only means the daemon has let its oldest events go.
  if (frame.type === "notice" && !(frame.code === "HISTORY_GAP" && subscribedSince === undefined)) {
    remember(frame);
  }
}
