/**
 * Pieces every view uses: loading data from the API (with a way to load it again), following live
 * events, and the small components for headings, errors, states and usage.
 */
import { html, useCallback, useEffect, useRef, useState } from "../vendor/standalone.module.js";
import { tokens } from "./format.js";
import { onLive } from "./live.js";

/**
 * Runs `load` now and whenever `deps` change; `reload()` runs it again keeping what is shown until
 * the new answer comes. Reloads asked for while one runs are folded into one more run after it, so a
 * burst of events costs two loads, not one each. Answers { data, error, reload }.
 */
export function useData(load, deps) {
  const [state, setState] = useState({ data: undefined, error: undefined });
  const run = useRef({ generation: 0, busy: false, again: false });
  const latest = useRef(load);
  latest.current = load;
  const reload = useCallback(() => {
    const current = run.current;
    if (current.busy) {
      current.again = true;
      return;
    }
    current.busy = true;
    const mine = current.generation;
    latest
      .current()
      .then(
        (data) => mine === current.generation && setState({ data, error: undefined }),
        (error) => mine === current.generation && setState((s) => ({ data: s.data, error })),
      )
      .finally(() => {
        current.busy = false;
        if (!current.again) return;
        current.again = false;
        reload();
      });
  }, []);
  useEffect(() => {
    // What an earlier `load` answers now belongs to other deps: it is dropped.
    run.current.generation++;
    setState({ data: undefined, error: undefined });
    reload();
  }, deps);
  return { ...state, reload };
}

/** Calls `handle(event)` for each live event while the view is shown. */
export function useLiveEvents(handle) {
  const latest = useRef(handle);
  latest.current = handle;
  useEffect(() => onLive((entry) => entry?.type === "event" && latest.current(entry)), []);
}

/** A view's title; focused when the view opens, so keyboard users start at its content. */
export function Heading({ children }) {
  return html`<h1 id="view-title" tabindex="-1">${children}</h1>`;
}

export function Loading({ what }) {
  return html`<p class="muted" role="status">Loading ${what}…</p>`;
}

/** An API error, read out when it appears. */
export function Problem({ error }) {
  if (!error) return null;
  const code = error.code ? html`<code>${error.code}</code> ` : null;
  return html`<p class="problem" role="alert">${code}${error.message ?? String(error)}</p>`;
}

/** A state word (idle, fighting, CAGED, completed …) in a colour that also says it. */
export function Badge({ value }) {
  const word = String(value ?? "unknown");
  return html`<span class=${`badge badge-${word.toLowerCase()}`}>${word}</span>`;
}

/** A fighter's usage per provider and model (`GET /api/v1/fighters/:id/usage`). */
export function UsageTable({ usage, caption }) {
  if (!usage) return null;
  if (usage.usage.length === 0) return html`<p class="muted">No model calls yet.</p>`;
  return html`<table class="usage">
    <caption>${caption ?? "Usage per model"}</caption>
    <thead><tr><th scope="col">Model</th><th scope="col">Requests</th><th scope="col">Tokens</th></tr></thead>
    <tbody>
      ${usage.usage.map(
        (u) => html`<tr key=${`${u.provider}/${u.model}`}>
          <td>${u.provider}/${u.model}</td><td>${u.requests}</td><td>${tokens(u)}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}
