/**
 * `#/moves`: the moves (tools, each behind its capability) and the skills the daemon knows, with a
 * search over both (`GET /api/v1/moves/search?q=`, best first).
 */

import { api } from "../lib/api.js";
import { clip } from "../lib/format.js";
import { Heading, Loading, Problem, useData } from "../lib/ui.js";
import { html, useState } from "../vendor/standalone.module.js";

export function MovesView() {
  const { data, error } = useData(() => api("GET", "/api/v1/moves"), []);
  const [query, setQuery] = useState("");
  const [search, setSearch] = useState(undefined);
  const submit = async (event) => {
    event.preventDefault();
    const q = query.trim();
    if (!q) return setSearch(undefined);
    setSearch({ query: q });
    try {
      setSearch(await api("GET", `/api/v1/moves/search?q=${encodeURIComponent(q)}&limit=20`));
    } catch (err) {
      setSearch({ query: q, error: err });
    }
  };
  const clear = () => {
    setQuery("");
    setSearch(undefined);
  };
  return html`<section aria-labelledby="view-title">
    <${Heading}>Moves and skills<//>
    <form class="search" role="search" onSubmit=${submit}>
      <label for="move-search">Search moves and skills</label>
      <input id="move-search" type="search" value=${query} onInput=${(e) => setQuery(e.currentTarget.value)} />
      <button type="submit">Search</button>
      ${search && html`<button type="button" class="secondary" onClick=${clear}>Clear</button>`}
    </form>
    ${search && html`<${Results} search=${search} />`}
    <${Problem} error=${error} />
    ${data === undefined ? html`<${Loading} what="moves" />` : html`<${Catalog} moves=${data.moves} skills=${data.skills} />`}
  </section>`;
}

function Results({ search }) {
  return html`<section aria-labelledby="results-title" class="results">
    <h2 id="results-title">Results for “${search.query}”</h2>
    <${Problem} error=${search.error} />
    <div aria-live="polite">
      ${
        search.results === undefined
          ? search.error
            ? null
            : html`<${Loading} what="results" />`
          : search.results.length === 0
            ? html`<p>Nothing matches.</p>`
            : html`<ol class="search-results">
              ${search.results.map(
                (r) => html`<li key=${`${r.kind}:${r.name}`}>
                  <span class="badge badge-neutral">${r.kind}</span> <strong>${r.name}</strong>
                  <span class="muted small"> score ${r.score.toFixed(2)}</span>
                  <div>${clip(r.description, 240)}</div>
                </li>`,
              )}
            </ol>`
      }
    </div>
  </section>`;
}

function Catalog({ moves, skills }) {
  return html`<div class="columns">
    <section aria-labelledby="moves-title">
      <h2 id="moves-title">Moves (${moves.length})</h2>
      <table class="moves">
        <thead><tr><th scope="col">Move</th><th scope="col">Capability</th><th scope="col">What it does</th></tr></thead>
        <tbody>
          ${moves.map(
            (m) =>
              html`<tr key=${m.name}><th scope="row"><code>${m.name}</code></th><td>${m.capability}</td><td>${clip(m.description, 200)}</td></tr>`,
          )}
        </tbody>
      </table>
    </section>
    <section aria-labelledby="skills-title">
      <h2 id="skills-title">Skills (${skills.length})</h2>
      <table class="skills">
        <thead><tr><th scope="col">Skill</th><th scope="col">Category</th><th scope="col">Source</th><th scope="col">What it is for</th></tr></thead>
        <tbody>
          ${skills.map(
            (s) =>
              html`<tr key=${s.name}><th scope="row">${s.name}</th><td>${s.category}</td><td>${s.source}</td><td>${clip(s.description, 200)}</td></tr>`,
          )}
        </tbody>
      </table>
    </section>
  </div>`;
}
