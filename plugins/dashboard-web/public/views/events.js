/**
 * `#/events`: the live event feed from the WebSocket (lib/live.js), newest first, with the
 * connection's state: live, reconnecting, resumed from a seq, or why it is off. Streamed tokens are
 * left out; every other event kind is shown, those of plugins included.
 */

import { mayRead } from "../lib/access.js";
import { api, authState } from "../lib/api.js";
import { clip } from "../lib/format.js";
import { liveFeed, liveState, onLive } from "../lib/live.js";
import { Heading } from "../lib/ui.js";
import { html, useEffect, useState } from "../vendor/standalone.module.js";

const SHOWN = 200;
const ENVELOPE = new Set(["type", "id", "seq", "at", "kind", "fighter_id"]);

export function EventsView() {
  const [, redraw] = useState(0);
  const [filter, setFilter] = useState("");
  const [names, setNames] = useState({});
  useEffect(() => onLive(() => redraw((n) => n + 1)), []);
  useEffect(() => {
    // A `chat` key may not list the fighters: it asks for each of its own instead.
    const own = authState().access?.fighters ?? [];
    const listed = mayRead()
      ? api("GET", "/api/v1/fighters").then(({ fighters }) => fighters)
      : Promise.all(own.map((f) => api("GET", `/api/v1/fighters/${encodeURIComponent(f)}`)));
    listed.then(
      (fighters) => setNames(Object.fromEntries(fighters.map((f) => [f.id, f.name]))),
      () => undefined,
    );
  }, []);
  const state = liveState();
  const wanted = filter.trim().toLowerCase();
  const entries = liveFeed()
    .filter((e) => !wanted || (e.kind ?? e.code ?? "").toLowerCase().includes(wanted))
    .slice(-SHOWN)
    .reverse();
  return html`<section aria-labelledby="view-title">
    <${Heading}>Events<//>
    <p class="live-state" role="status">${describe(state)}</p>
    <form class="search" onSubmit=${(e) => e.preventDefault()}>
      <label for="event-filter">Show only kinds containing</label>
      <input id="event-filter" type="search" value=${filter} onInput=${(e) => setFilter(e.currentTarget.value)} />
    </form>
    <ol class="feed" aria-live="polite" aria-relevant="additions" aria-label="Events, newest first">
      ${entries.length === 0 && html`<li class="muted">No events yet.</li>`}
      ${entries.map((entry) => html`<${Entry} key=${entry.seq ?? `${entry.code}-${entry.message}`} entry=${entry} names=${names} />`)}
    </ol>
  </section>`;
}

function describe(state) {
  if (state.status === "live") {
    return state.resumedFrom === undefined
      ? "Live."
      : `Live again: resumed after event #${state.resumedFrom}, with what happened in between.`;
  }
  if (state.status === "reconnecting") return "The connection dropped; reconnecting…";
  return "Connecting…";
}

function Entry({ entry, names }) {
  if (entry.type === "notice") {
    return html`<li class="notice"><code>${entry.code}</code> ${entry.message}</li>`;
  }
  const who = entry.fighter_id
    ? (names[entry.fighter_id] ?? entry.name ?? entry.fighter_id.slice(0, 8))
    : undefined;
  const details = Object.entries(entry)
    .filter(([key, value]) => !ENVELOPE.has(key) && value !== undefined && value !== null)
    .filter(([key, value]) => !(key === "name" && value === who))
    .map(([key, value]) => `${key}=${typeof value === "object" ? JSON.stringify(value) : value}`)
    .join(" ");
  return html`<li class="event" data-kind=${entry.kind}>
    <span class="muted small">#${entry.seq} ${new Date(entry.at).toLocaleTimeString()}</span>
    <code class="kind">${entry.kind}</code>
    ${who && html`<strong>${who}</strong>`}
    <span class="details">${clip(details, 240)}</span>
  </li>`;
}
