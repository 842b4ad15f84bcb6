/**
 * `#/troops` and `#/troops/<name>`: every troop (strategy, leader, members) and the chosen troop's
 * tasks, newest first, each with its result and its steps: who, in what role, what it was asked,
 * what it answered or why it failed, and its tokens. Refreshed on every `troop.*` event.
 */

import { api } from "../lib/api.js";
import { clip, tokens, when } from "../lib/format.js";
import { href } from "../lib/router.js";
import { Badge, Heading, Loading, Problem, useData, useLiveEvents } from "../lib/ui.js";
import { html } from "../vendor/standalone.module.js";

const path = (name, rest = "") => `/api/v1/troops/${encodeURIComponent(name)}${rest}`;

async function loadTroop(name) {
  const [troop, { tasks }] = await Promise.all([
    api("GET", path(name)),
    api("GET", path(name, "/tasks?limit=20")),
  ]);
  return { troop, tasks };
}

export function TroopsView({ name }) {
  const list = useData(() => api("GET", "/api/v1/troops"), []);
  const chosen = useData(() => (name ? loadTroop(name) : Promise.resolve(undefined)), [name]);
  useLiveEvents((event) => {
    if (!event.kind.startsWith("troop.")) return;
    list.reload();
    if (name) chosen.reload();
  });
  const { data, error } = list;
  return html`<section aria-labelledby="view-title">
    <${Heading}>Troops<//>
    <${Problem} error=${error} />
    ${
      data === undefined
        ? html`<${Loading} what="troops" />`
        : data.troops.length === 0
          ? html`<p class="muted">No troops yet: <code>spar troop create</code> makes one.</p>`
          : html`<${TroopTable} troops=${data.troops} />`
    }
    ${name && html`<${Tasks} name=${name} state=${chosen} />`}
  </section>`;
}

const nameOf = (troop, id) => troop.names?.[id] ?? id.slice(0, 8);

function TroopTable({ troops }) {
  return html`<table class="troops">
    <thead><tr><th scope="col">Troop</th><th scope="col">Strategy</th><th scope="col">Leader</th><th scope="col">Members</th></tr></thead>
    <tbody>
      ${troops.map(
        (t) => html`<tr key=${t.id}>
          <th scope="row"><a href=${href("troops", t.name)} aria-label=${`${t.name}: tasks`}>${t.name}</a></th>
          <td>${t.strategy}</td>
          <td>${nameOf(t, t.leader)}</td>
          <td>${t.members.map((m) => nameOf(t, m)).join(", ")}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

function Tasks({ name, state }) {
  const { data, error } = state;
  return html`<section aria-labelledby="tasks-title">
    <h2 id="tasks-title">Tasks of ${name}</h2>
    <${Problem} error=${error} />
    ${
      data === undefined
        ? html`<${Loading} what="tasks" />`
        : data.tasks.length === 0
          ? html`<p class="muted">No tasks yet.</p>`
          : data.tasks.map((task) => html`<${Task} key=${task.id} task=${task} troop=${data.troop} />`)
    }
  </section>`;
}

function Task({ task, troop }) {
  return html`<article class="task" aria-label=${`Task: ${clip(task.task, 60)}`}>
    <header>
      <${Badge} value=${task.status} />${task.partial ? html` <${Badge} value="partial" />` : null}
      <strong> ${task.task}</strong>
      <div class="muted small">${task.strategy} · ${when(task.created_at)} · ${tokens(task.usage)}</div>
    </header>
    ${task.result !== null && html`<h3>Result</h3><div class="text">${task.result}</div>`}
    ${task.error && html`<p class="problem"><code>${task.error.code}</code> ${task.error.message}</p>`}
    <table class="steps">
      <caption>${task.steps.length} step${task.steps.length === 1 ? "" : "s"}</caption>
      <thead>
        <tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col">Asked</th><th scope="col">Answered</th><th scope="col">Tokens</th></tr>
      </thead>
      <tbody>
        ${task.steps.map(
          (s, i) => html`<tr key=${i}>
            <td>${nameOf(troop, s.fighter_id)}</td>
            <td>${s.role}</td>
            <td>${clip(s.input, 200)}</td>
            <td>${s.error ? html`<span class="problem-text"><code>${s.error.code}</code> ${s.error.message}</span>` : clip(s.output ?? "…", 300)}</td>
            <td>${tokens(s.usage)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </article>`;
}
