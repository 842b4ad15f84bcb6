/**
 * `#/gorillas` and `#/gorillas/<name>`: every gorilla with its state, schedule, next and last run,
 * an Unleash or Cage button, the files that did not load, and the chosen gorilla's run history.
 * Refreshed on every `gorilla.*` event.
 */

import { mayOperate } from "../lib/access.js";
import { api } from "../lib/api.js";
import { clip, tokens, when } from "../lib/format.js";
import { href } from "../lib/router.js";
import { Badge, Heading, Loading, Problem, useData, useLiveEvents } from "../lib/ui.js";
import { html, useState } from "../vendor/standalone.module.js";

const path = (name, rest = "") => `/api/v1/gorillas/${encodeURIComponent(name)}${rest}`;

export function GorillasView({ name }) {
  const list = useData(() => api("GET", "/api/v1/gorillas"), []);
  const runs = useData(
    () => (name ? api("GET", path(name, "/runs?limit=20")) : Promise.resolve(undefined)),
    [name],
  );
  const [problem, setProblem] = useState(undefined);
  useLiveEvents((event) => {
    if (!event.kind.startsWith("gorilla.")) return;
    list.reload();
    if (event.gorilla === name) runs.reload();
  });
  const act = async (gorilla, action) => {
    setProblem(undefined);
    try {
      await api("POST", path(gorilla, `/${action}`));
    } catch (err) {
      setProblem(err);
    }
    list.reload();
  };
  const { data, error } = list;
  return html`<section aria-labelledby="view-title">
    <${Heading}>Gorillas<//>
    <${Problem} error=${error ?? problem} />
    ${data === undefined ? html`<${Loading} what="gorillas" />` : html`<${GorillaTable} gorillas=${data.gorillas} act=${act} />`}
    ${data?.problems.length > 0 && html`<${Problems} problems=${data.problems} />`}
    ${name && html`<${Runs} name=${name} state=${runs} />`}
  </section>`;
}

function GorillaTable({ gorillas, act }) {
  return html`<table class="gorillas">
    <caption>${gorillas.length} gorillas; each starts caged and runs only once unleashed</caption>
    <thead>
      <tr>
        <th scope="col">Gorilla</th><th scope="col">State</th><th scope="col">Schedule</th>
        <th scope="col">Next run</th><th scope="col">Last run</th><th scope="col">Action</th>
      </tr>
    </thead>
    <tbody>
      ${gorillas.map(
        (g) => html`<tr key=${g.name} data-gorilla=${g.name}>
          <th scope="row">
            <a href=${href("gorillas", g.name)} aria-label=${`${g.display_name || g.name}: run history`}>${g.display_name || g.name}</a>
            <div class="muted small">${clip(g.description, 120)}</div>
          </th>
          <td><${Badge} value=${g.state} /></td>
          <td><code>${g.schedule}</code><div class="muted small">${g.timezone}</div></td>
          <td>${when(g.next_run_at)}</td>
          <td>${g.last_run ? html`<${Badge} value=${g.last_run.outcome} /> ${when(g.last_run.started_at)}` : "—"}</td>
          <td>
            ${
              !mayOperate()
                ? html`<span class="muted small">needs scope operator</span>`
                : g.state === "CAGED"
                  ? html`<button type="button" onClick=${() => act(g.name, "unleash")} aria-label=${`Unleash ${g.name}`}>Unleash</button>`
                  : html`<button type="button" class="danger" onClick=${() => act(g.name, "cage")} aria-label=${`Cage ${g.name}`}>Cage</button>`
            }
          </td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

function Problems({ problems }) {
  return html`<section aria-labelledby="gorilla-problems">
    <h2 id="gorilla-problems">Files that did not load</h2>
    <ul>${problems.map((p) => html`<li key=${p.file}><code>${p.file}</code>: ${p.error}</li>`)}</ul>
  </section>`;
}

function Runs({ name, state }) {
  const { data, error } = state;
  return html`<section aria-labelledby="runs-title">
    <h2 id="runs-title">Runs of ${name}</h2>
    <${Problem} error=${error} />
    ${
      data === undefined
        ? html`<${Loading} what="runs" />`
        : data.runs.length === 0
          ? html`<p class="muted">No runs yet.</p>`
          : html`<table class="runs">
            <thead>
              <tr>
                <th scope="col">Started</th><th scope="col">Trigger</th><th scope="col">Outcome</th>
                <th scope="col">Finished</th><th scope="col">Tokens</th><th scope="col">Output or error</th>
              </tr>
            </thead>
            <tbody>
              ${data.runs.map(
                (r) => html`<tr key=${r.id}>
                  <td>${when(r.started_at)}</td><td>${r.trigger}</td><td><${Badge} value=${r.outcome} /></td>
                  <td>${when(r.finished_at)}</td><td>${tokens(r.usage)}</td>
                  <td>${clip(r.error ?? r.output ?? "", 200)}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}
