/**
 * `#/fighters/<id>` and `#/fighters/<id>/bouts/<bout>`: one fighter: its live status, usage per
 * model, Creed, bouts, and the chosen bout's messages (the newest bout when none is chosen) grouped
 * by turn, tool calls and their results included.
 */

import { mayChat } from "../lib/access.js";
import { api } from "../lib/api.js";
import { tokens, when } from "../lib/format.js";
import { href } from "../lib/router.js";
import { Badge, Heading, Loading, Problem, UsageTable, useData, useLiveEvents } from "../lib/ui.js";
import { html, useState } from "../vendor/standalone.module.js";

const path = (id, rest = "") => `/api/v1/fighters/${encodeURIComponent(id)}${rest}`;

async function loadFighter(id) {
  const [fighter, usage, creed, { bouts }] = await Promise.all([
    api("GET", path(id)),
    api("GET", path(id, "/usage")),
    api("GET", path(id, "/creed")),
    api("GET", path(id, "/bouts")),
  ]);
  return { fighter, usage, creed, bouts };
}

async function loadBout(boutId) {
  if (!boutId) return { messages: [], turns: [] };
  const at = `/api/v1/bouts/${encodeURIComponent(boutId)}`;
  const [{ messages }, { turns }] = await Promise.all([
    api("GET", `${at}/messages`),
    api("GET", `${at}/turns`),
  ]);
  return { messages, turns };
}

export function FighterView({ id, boutId }) {
  const { data, error, reload } = useData(() => loadFighter(id), [id]);
  const [status, setStatus] = useState(undefined);
  const shown = boutId ?? data?.bouts[0]?.id;
  const bout = useData(() => loadBout(shown), [shown]);
  useLiveEvents((event) => {
    if (event.fighter_id !== data?.fighter.id) return;
    if (event.kind === "fighter.status") setStatus(event.status);
    if (event.kind === "message.completed" || event.kind === "message.failed") {
      reload();
      bout.reload();
    }
  });
  if (!data) {
    return html`<section aria-labelledby="view-title">
      <${Heading}>Fighter ${id}<//>
      ${error ? html`<${Problem} error=${error} />` : html`<${Loading} what="the fighter" />`}
    </section>`;
  }
  const { fighter, usage, creed, bouts } = data;
  return html`<section aria-labelledby="view-title">
    <${Heading}>${fighter.name} <${Badge} value=${status ?? fighter.status} /><//>
    <${Problem} error=${error} />
    <p>${fighter.description}</p>
    <p class="muted">
      ${fighter.model.provider}/${fighter.model.model} · ${fighter.weight_class} ·
      capabilities: ${fighter.capabilities.map((c) => c.type).join(", ") || "none"}
    </p>
    ${mayChat(fighter) && html`<p><a class="button-link" href=${href("chat", fighter.id)}>Chat with ${fighter.name}</a></p>`}
    <div class="columns">
      <section aria-labelledby="usage-title">
        <h2 id="usage-title">Usage</h2>
        <${UsageTable} usage=${usage} />
      </section>
      <${Creed} creed=${creed} />
    </div>
    <section aria-labelledby="bouts-title">
      <h2 id="bouts-title">Bouts</h2>
      ${bouts.length === 0 ? html`<p class="muted">No bouts yet.</p>` : html`<${BoutList} fighter=${fighter} bouts=${bouts} shown=${shown} />`}
    </section>
    ${shown && html`<${Bout} id=${shown} state=${bout} />`}
  </section>`;
}

function Creed({ creed }) {
  return html`<section aria-labelledby="creed-title">
    <h2 id="creed-title">Creed</h2>
    <p>${creed.identity}</p>
    ${list("Traits", creed.traits)}
    ${list("Directives", creed.directives)}
    ${list(
      "Observations",
      creed.observations.map((o) => `${o.text} (confidence ${o.confidence.toFixed(2)}, seen ${o.seen}×)`),
    )}
    <p class="muted small">
      ${creed.counters.bouts} bouts · ${creed.counters.conversations} conversations ·
      ${creed.counters.messages} messages · updated ${when(creed.updated_at)}
    </p>
  </section>`;
}

function list(title, items) {
  if (items.length === 0) return null;
  return html`<h3>${title}</h3><ul>${items.map((item) => html`<li key=${item}>${item}</li>`)}</ul>`;
}

function BoutList({ fighter, bouts, shown }) {
  return html`<ul class="bouts">
    ${bouts.map(
      (b) => html`<li key=${b.id}>
        <a href=${href("fighters", fighter.id, "bouts", b.id)} aria-current=${b.id === shown ? "true" : undefined}>
          ${when(b.created_at)}</a>
        <span class="muted"> · ${b.message_count} messages · last ${when(b.updated_at)}</span>
      </li>`,
    )}
  </ul>`;
}

function Bout({ id, state }) {
  const { data, error } = state;
  return html`<section aria-labelledby="messages-title">
    <h2 id="messages-title">Messages of bout <code>${id.slice(0, 8)}</code></h2>
    <${Problem} error=${error} />
    ${data === undefined ? html`<${Loading} what="messages" />` : turnsOf(data).map((t) => html`<${Turn} key=${t.id} turn=${t} />`)}
  </section>`;
}

/** The bout's messages grouped by turn, in order; messages without a turn form their own group. */
function turnsOf({ messages, turns }) {
  const byId = new Map(turns.map((t) => [t.id, { ...t, messages: [] }]));
  const groups = [];
  for (const message of messages) {
    const key = message.turn_id ?? `message-${message.id}`;
    let group = byId.get(key);
    if (!group) {
      group = { id: key, messages: [] };
      byId.set(key, group);
    }
    if (group.messages.length === 0) groups.push(group);
    group.messages.push(message);
  }
  return groups;
}

function Turn({ turn }) {
  return html`<article class="turn" aria-label=${`Turn ${turn.status ?? ""}`}>
    ${
      turn.status &&
      html`<header class="turn-header">
        <${Badge} value=${turn.status} />
        <span class="muted small"> ${when(turn.started_at)} · ${tokens(turn.usage)}${turn.model ? ` · ${turn.model}` : ""}</span>
        ${turn.error && html`<div class="small"><code>${turn.error.code}</code> ${turn.error.message}</div>`}
      </header>`
    }
    ${turn.messages.map((m) => html`<${Message} key=${m.id} message=${m} />`)}
  </article>`;
}

function Message({ message }) {
  const compacted = message.compacted ? html`<span class="muted small"> (compacted)</span>` : null;
  if (message.role === "tool") {
    return html`<div class=${`message tool${message.is_error ? " tool-error" : ""}`}>
      <div class="role">Result of ${message.name}${message.is_error ? " (error)" : ""}${compacted}</div>
      <pre>${message.content}</pre>
    </div>`;
  }
  return html`<div class=${`message ${message.role}`}>
    <div class="role">${message.role === "user" ? "User" : "Fighter"}${compacted}</div>
    ${message.content && html`<div class="text">${message.content}</div>`}
    ${(message.tool_calls ?? []).map(
      (call) => html`<div class="tool-call" key=${call.id}>
        <div class="role">Calls ${call.name}</div>
        <pre>${JSON.stringify(call.arguments, null, 2)}</pre>
      </div>`,
    )}
  </div>`;
}
