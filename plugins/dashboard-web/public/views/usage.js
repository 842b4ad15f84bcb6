/**
 * `#/usage`: where the tokens go (`GET /api/v1/usage`). A bar chart of the last 30 days' cost per
 * day, drawn here as SVG (no chart library: the page's CSP allows its own scripts only), with the
 * same figures in a table for those who do not see the chart; the calls, tokens and cost per model
 * and per fighter over those days; and the budgets against what they have spent
 * (`GET /api/v1/budgets`, when the daemon has that route). Days are the reader's own (the request
 * carries the browser's time zone). Refreshed when a turn ends or a budget speaks, and every 30 s.
 */

import { api } from "../lib/api.js";
import { when } from "../lib/format.js";
import { Heading, Loading, Problem, useData, useLiveEvents } from "../lib/ui.js";
import { html, useEffect } from "../vendor/standalone.module.js";

const DAYS = 30;
const REFRESH_MS = 30_000;
/** Events after which the figures may have moved: a turn's end (its calls are on the books) and budgets'. */
const MOVES = /^(message\.(completed|failed)|turn\.|budget\.|usage\.)/;

function zone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

async function loadUsage() {
  const query = (by) => api("GET", `/api/v1/usage?by=${by}&since=${DAYS}d&tz=${encodeURIComponent(zone())}`);
  const [days, models, fighters, budgets] = await Promise.all([
    query("day"),
    query("model"),
    query("fighter"),
    loadBudgets(),
  ]);
  return { days, models, fighters, budgets };
}

/** Whether this daemon serves budgets: asked of its OpenAPI document once, so no request meets a 404. */
let budgetsServed;

/** The budgets, or undefined when the daemon has none to offer (no such route yet). */
async function loadBudgets() {
  budgetsServed ??= api("GET", "/api/v1/openapi.json").then(
    (doc) => Boolean(doc?.paths?.["/api/v1/budgets"]),
    () => false,
  );
  if (!(await budgetsServed)) return undefined;
  try {
    return (await api("GET", "/api/v1/budgets")).budgets;
  } catch (error) {
    if (error.status === 404) return undefined;
    throw error;
  }
}

export function UsageView() {
  const { data, error, reload } = useData(loadUsage, []);
  useLiveEvents((event) => MOVES.test(event.kind) && reload());
  useEffect(() => {
    const timer = setInterval(reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  return html`<section aria-labelledby="view-title">
    <${Heading}>Usage<//>
    <${Problem} error=${error} />
    ${
      data === undefined
        ? html`<${Loading} what="usage" />`
        : html`
          <${CostChart} report=${data.days} />
          <${Breakdown} id="by-model" title="By model" column="Model" report=${data.models} />
          <${Breakdown} id="by-fighter" title="By fighter" column="Fighter" report=${data.fighters} />
          <${Budgets} budgets=${data.budgets} />`
    }
  </section>`;
}

/** The last `DAYS` days in the browser's zone, oldest first, as the API keys them (YYYY-MM-DD). */
function lastDays() {
  const now = new Date();
  const days = [];
  for (let back = DAYS - 1; back >= 0; back--) {
    const day = new Date(now.getFullYear(), now.getMonth(), now.getDate() - back);
    days.push(
      `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, "0")}-${String(day.getDate()).padStart(2, "0")}`,
    );
  }
  return days;
}

/** A cost for people: `$0.009525`, `$1.50`; "unpriced" for null. */
export function money(cost, currency = "USD") {
  if (cost === null || cost === undefined) return "unpriced";
  const fixed = cost.toFixed(6).replace(/0{1,4}$/, "");
  return currency === "USD" ? `$${fixed}` : `${fixed} ${currency}`;
}

const WIDTH = 720;
const HEIGHT = 220;
const TOP = 24;
const BOTTOM = 28;
const LEFT = 8;

function CostChart({ report }) {
  const byDay = new Map(report.usage.map((u) => [u.key, u]));
  const days = lastDays().map((key) => ({ key, usage: byDay.get(key) }));
  const highest = Math.max(0, ...days.map((d) => d.usage?.cost ?? 0));
  const plot = HEIGHT - TOP - BOTTOM;
  const slot = (WIDTH - LEFT * 2) / DAYS;
  const currency = report.total.currency;
  const top = days.find((d) => highest > 0 && d.usage?.cost === highest);
  const summary =
    report.total.requests === 0
      ? `No model calls in the last ${DAYS} days.`
      : `${money(report.total.cost, currency)} over the last ${DAYS} days, ${calls(report.total.requests)}` +
        (top ? `; the most on ${top.key}: ${money(highest, currency)}` : "") +
        (report.total.unpriced_requests > 0 ? `; ${calls(report.total.unpriced_requests)} unpriced` : "") +
        ".";
  return html`<section aria-labelledby="cost-title">
    <h2 id="cost-title">Cost per day, last ${DAYS} days</h2>
    <p id="cost-summary">${summary}</p>
    <svg class="chart" viewBox=${`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby="cost-chart-title cost-summary">
      <title id="cost-chart-title">Bar chart: cost per day (${zone()})</title>
      <line class="axis" x1=${LEFT} x2=${WIDTH - LEFT} y1=${HEIGHT - BOTTOM} y2=${HEIGHT - BOTTOM} />
      <text class="label" x=${LEFT} y=${TOP - 8}>${highest > 0 ? money(highest, currency) : money(0, currency)}</text>
      ${days.map((d, i) => {
        const cost = d.usage?.cost ?? 0;
        const height = highest > 0 ? (cost / highest) * plot : 0;
        const x = LEFT + i * slot + slot * 0.15;
        const label = d.usage
          ? `${d.key}: ${money(d.usage.cost, currency)}, ${calls(d.usage.requests)}`
          : `${d.key}: no calls`;
        return html`<g key=${d.key}>
          <rect class=${d.usage ? "bar" : "bar empty"} data-day=${d.key} data-cost=${d.usage?.cost ?? ""}
            x=${x.toFixed(2)} y=${(HEIGHT - BOTTOM - height).toFixed(2)} width=${(slot * 0.7).toFixed(2)} height=${height.toFixed(2)}>
            <title>${label}</title>
          </rect>
          ${(DAYS - 1 - i) % 7 === 0 && html`<text class="label" x=${x.toFixed(2)} y=${HEIGHT - 8}>${d.key.slice(5)}</text>`}
        </g>`;
      })}
    </svg>
    <details>
      <summary>The chart as a table</summary>
      ${
        report.usage.length === 0
          ? html`<p class="muted">No model calls in these days.</p>`
          : html`<table class="usage-days">
            <caption>Cost per day with calls, last ${DAYS} days (${zone()})</caption>
            <thead><tr><th scope="col">Day</th><th scope="col">Calls</th><th scope="col">Tokens in / out</th><th scope="col">Cost</th></tr></thead>
            <tbody>
              ${report.usage.map(
                (u) => html`<tr key=${u.key} data-day=${u.key}>
                  <th scope="row">${u.key}</th><td>${u.requests}</td>
                  <td>${u.input_tokens.toLocaleString()} / ${u.output_tokens.toLocaleString()}</td>
                  <td>${costCell(u)}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
      }
    </details>
  </section>`;
}

function calls(n) {
  return `${n} ${n === 1 ? "call" : "calls"}`;
}

function costCell(u) {
  const cost = money(u.cost, u.currency);
  return u.unpriced_requests > 0 && u.cost !== null ? `${cost} (+${u.unpriced_requests} unpriced)` : cost;
}

function Breakdown({ id, title, column, report }) {
  return html`<section aria-labelledby=${id}>
    <h2 id=${id}>${title}</h2>
    ${
      report.usage.length === 0
        ? html`<p class="muted">No model calls in the last ${DAYS} days.</p>`
        : html`<table class=${`usage-${id}`}>
          <caption>${title.toLowerCase()}, last ${DAYS} days</caption>
          <thead>
            <tr>
              <th scope="col">${column}</th><th scope="col">Calls</th><th scope="col">Input</th>
              <th scope="col">Cached</th><th scope="col">Output</th><th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            ${[...report.usage, { ...report.total, key: "Total" }].map(
              (u) => html`<tr key=${u.key} data-key=${u.key}>
                <th scope="row">${u.key}</th><td>${u.requests}</td><td>${u.input_tokens.toLocaleString()}</td>
                <td>${u.cached_tokens.toLocaleString()}</td><td>${u.output_tokens.toLocaleString()}</td>
                <td>${costCell(u)}</td>
              </tr>`,
            )}
          </tbody>
        </table>`
    }
  </section>`;
}

function amount(value, budget) {
  return budget.unit === "tokens"
    ? `${Number(value).toLocaleString()} tokens`
    : money(value, budget.currency);
}

function Budgets({ budgets }) {
  return html`<section aria-labelledby="budgets-title">
    <h2 id="budgets-title">Budgets</h2>
    ${
      !budgets || budgets.length === 0
        ? html`<p class="muted" id="no-budgets">No budgets configured.</p>`
        : html`<table class="budgets">
          <thead>
            <tr>
              <th scope="col">Budget</th><th scope="col">Spent</th><th scope="col">Limit</th>
              <th scope="col">Used</th><th scope="col">Resets</th>
            </tr>
          </thead>
          <tbody>
            ${budgets.map(
              (b) => html`<tr key=${b.budget} data-budget=${b.budget}>
                <th scope="row">${b.budget}<div class="muted small">${b.period}, ${b.on_exceed === "ask" ? "asks when over" : "stops when over"}</div></th>
                <td>${amount(b.spent, b)}${b.reserved > 0 ? html`<div class="muted small">${amount(b.reserved, b)} reserved</div>` : null}</td>
                <td>${amount(b.limit, b)}</td>
                <td>
                  <meter min="0" max=${b.limit} high=${b.limit * 0.8} optimum="0" value=${Math.min(b.spent, b.limit)}
                    aria-label=${`${b.budget}: ${percent(b)} used`}></meter>
                  <span class="small"> ${percent(b)}</span>
                </td>
                <td>${when(b.resets_at)}</td>
              </tr>`,
            )}
          </tbody>
        </table>`
    }
  </section>`;
}

function percent(budget) {
  if (!(budget.limit > 0)) return "—";
  return `${Math.round((budget.spent / budget.limit) * 100)} %`;
}
