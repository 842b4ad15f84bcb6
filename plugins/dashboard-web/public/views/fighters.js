/**
 * `#/fighters`: every fighter with its live status (idle, fighting, resting, from `fighter.status`
 * events) and what it spent per model (`GET /api/v1/fighters/:id/usage`, fetched again after each
 * of its turns).
 */

import { mayChat } from "../lib/access.js";
import { api } from "../lib/api.js";
import { tokens } from "../lib/format.js";
import { href } from "../lib/router.js";
import { Badge, Heading, Loading, Problem, useData, useLiveEvents } from "../lib/ui.js";
import { html, useState } from "../vendor/standalone.module.js";

async function loadFighters() {
  const { fighters } = await api("GET", "/api/v1/fighters");
  const usages = await Promise.all(
    fighters.map((f) => api("GET", `/api/v1/fighters/${encodeURIComponent(f.id)}/usage`)),
  );
  return fighters.map((fighter, i) => ({ ...fighter, usage: usages[i] }));
}

export function FightersView() {
  const { data, error, reload } = useData(loadFighters, []);
  /** Statuses from live events, newer than the list. */
  const [live, setLive] = useState({});
  useLiveEvents((event) => {
    if (event.kind === "fighter.status") setLive((s) => ({ ...s, [event.fighter_id]: event.status }));
    else if (
      ["fighter.spawned", "fighter.killed", "message.completed", "message.failed"].includes(event.kind)
    ) {
      reload();
    }
  });
  return html`<section aria-labelledby="view-title">
    <${Heading}>Fighters<//>
    <${Problem} error=${error} />
    ${data === undefined ? html`<${Loading} what="fighters" />` : html`<${FighterTable} fighters=${data} live=${live} />`}
  </section>`;
}

function FighterTable({ fighters, live }) {
  return html`<table class="fighters">
    <caption>${fighters.length} fighter${fighters.length === 1 ? "" : "s"}</caption>
    <thead>
      <tr>
        <th scope="col">Name</th><th scope="col">Status</th><th scope="col">Model</th>
        <th scope="col">Usage per model</th><th scope="col"><span class="visually-hidden">Actions</span></th>
      </tr>
    </thead>
    <tbody>
      ${fighters.map(
        (f) => html`<tr key=${f.id} data-fighter=${f.name}>
          <th scope="row"><a href=${href("fighters", f.id)}>${f.name}</a><div class="muted small">${f.description}</div></th>
          <td><${Badge} value=${live[f.id] ?? f.status} /></td>
          <td class="nowrap">${f.model.provider}/${f.model.model}</td>
          <td>${usageLines(f.usage)}</td>
          <td>${mayChat(f) && html`<a class="button-link" href=${href("chat", f.id)} aria-label=${`Chat with ${f.name}`}>Chat</a>`}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

function usageLines(usage) {
  if (!usage || usage.usage.length === 0) return html`<span class="muted">none yet</span>`;
  return html`<ul class="plain">
    ${usage.usage.map(
      (u) => html`<li key=${`${u.provider}/${u.model}`}>
        ${u.provider}/${u.model}: ${u.requests} request${u.requests === 1 ? "" : "s"}, ${tokens(u)}
      </li>`,
    )}
  </ul>`;
}
