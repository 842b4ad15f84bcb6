/**
 * `#/approvals`: the calls waiting for an operator's answer (README "Approvals"), live from the
 * WebSocket (lib/pending.js): each with its fighter, the exact call, its folder and files' sha256,
 * why it was asked (the rule or default, and what untrusted content the turn had read), who started
 * the turn and the time left; Approve, Approve always (with an optional pattern) and Deny (with an
 * optional reason) for a key that may answer (`operator`, `admin`). Below: the answered requests,
 * filtered by status, and the rules, the stored ones removable.
 *
 * Everything a request holds may have been written by a hijacked model (planted content makes it
 * send `<img onerror=…>` as an argument): it is rendered as text by htm, never as markup, and a
 * URL in it is never made a link.
 */

import { currentAccess, mayOperate, refusal } from "../lib/access.js";
import { api } from "../lib/api.js";
import { clip, when } from "../lib/format.js";
import { forgetPending, loadPending, pendingRequests, pendingState, watchPending } from "../lib/pending.js";
import { href } from "../lib/router.js";
import { Badge, Heading, Loading, Problem, useData, useLiveEvents } from "../lib/ui.js";
import { html, useEffect, useRef, useState } from "../vendor/standalone.module.js";

const path = (id, rest = "") => `/api/v1/approvals/${encodeURIComponent(id)}${rest}`;
const ANSWERED = ["approved", "denied", "expired", "cancelled"];

function usePending() {
  const [, redraw] = useState(0);
  useEffect(() => watchPending(() => redraw((n) => n + 1)), []);
  return { requests: pendingRequests(), ...pendingState() };
}

export function ApprovalsView() {
  const pending = usePending();
  const [filter, setFilter] = useState("answered");
  const history = useData(
    () => api("GET", `/api/v1/approvals?status=${filter === "answered" ? "all" : filter}&limit=50`),
    [filter],
  );
  const rules = useData(() => api("GET", "/api/v1/approvals/rules"), []);
  const [outcome, setOutcome] = useState(undefined);
  const said = useRef(null);
  useLiveEvents((event) => {
    if (event.kind === "approval.answered") history.reload();
  });
  useEffect(() => {
    if (outcome) said.current?.focus();
  }, [outcome]);

  /** Sends an answer; says what happened, and moves the focus there (the request's card is gone). */
  const answer = async (request, action, body) => {
    try {
      const answered = await api("POST", path(request.id, `/${action}`), body);
      forgetPending(request.id);
      setOutcome({ text: describeAnswer(request, action, body, answered) });
      if (answered.rule) rules.reload();
    } catch (error) {
      // Answered elsewhere first, or expired: the list is the daemon's to say again.
      if (error.code === "CONFLICT" || error.code === "APPROVAL_EXPIRED") loadPending();
      setOutcome({ error });
    }
    history.reload();
  };
  const removeRule = async (rule) => {
    try {
      await api("DELETE", `/api/v1/approvals/rules/${encodeURIComponent(rule.id)}`);
      setOutcome({ text: `Removed the rule for ${rule.move} of ${rule.fighter}.` });
    } catch (error) {
      setOutcome({ error });
    }
    rules.reload();
  };

  return html`<section aria-labelledby="view-title">
    <${Heading}>Approvals<//>
    <p class="muted">A call the policy asks about waits in its turn until it is answered here, from <code>spar approvals</code> or the API; it runs once when approved. Expiry is a deny.</p>
    <div ref=${said} tabindex="-1" class="outcome">
      ${outcome?.text && html`<p role="status">${outcome.text}</p>`}
      <${Problem} error=${outcome?.error} />
    </div>
    <${Waiting} pending=${pending} answer=${answer} />
    <${History} state=${history} filter=${filter} setFilter=${setFilter} />
    <${Rules} state=${rules} remove=${removeRule} />
  </section>`;
}

function describeAnswer(request, action, body, answered) {
  const call = `${request.move} of ${request.fighter}`;
  if (action === "deny")
    return `Denied ${call}: the model is told${body?.reason ? `, with your reason` : ""}.`;
  const rule = answered.rule
    ? `, and a rule lets ${body.pattern ? `calls matching ${body.pattern}` : "this exact call"} run unasked from now on`
    : "";
  return `Approved ${call}: it runs once${rule}.`;
}

function Waiting({ pending, answer }) {
  const { requests, loaded, error } = pending;
  return html`<section aria-labelledby="waiting-title">
    <h2 id="waiting-title">Waiting for an answer (${requests.length})</h2>
    <p class="visually-hidden" role="status">${loaded ? `${requests.length} waiting` : ""}</p>
    <${Problem} error=${error} />
    ${
      !loaded
        ? html`<${Loading} what="the pending requests" />`
        : requests.length === 0
          ? html`<p class="muted">No call is waiting. New requests appear here as they are made.</p>`
          : requests.map((r) => html`<${Request} key=${r.id} request=${r} answer=${answer} />`)
    }
  </section>`;
}

function Request({ request, answer }) {
  const r = request;
  const title = `approval-${r.id}`;
  return html`<article class="approval" data-approval=${r.id} aria-labelledby=${title}>
    <h3 id=${title}><code>${r.move}</code> for ${r.fighter}</h3>
    <dl class="facts">
      <dt>Call</dt><dd><code class="subject">${r.subject}</code></dd>
      <dt>Arguments</dt><dd><pre class="arguments">${JSON.stringify(r.arguments, null, 2)}</pre></dd>
      <dt>Folder</dt><dd><code>${r.cwd}</code></dd>
      <dt>Files</dt><dd><${Files} files=${r.files} /></dd>
      <dt>Why</dt><dd class="why">${r.why}<${Taint} taint=${r.taint} /></dd>
      <dt>Fighter</dt><dd><a href=${href("fighters", r.fighter_id)}>${r.fighter}</a></dd>
      <dt>Started by</dt><dd><code>${r.origin}</code></dd>
      <dt>Asked</dt><dd>${when(r.created_at)}</dd>
      <dt>Time left</dt><dd><${TimeLeft} until=${r.expires_at} /></dd>
      <dt>Request</dt><dd><code>${r.id}</code></dd>
    </dl>
    ${
      mayOperate()
        ? html`<${Answer} request=${r} answer=${answer} />`
        : html`<p class="muted small">${refusal(currentAccess(), "answering needs scope operator or admin")}</p>`
    }
  </article>`;
}

function Files({ files }) {
  if (!files?.length) return html`<span class="muted">none bound</span>`;
  return html`<ul class="plain files">
    ${files.map(
      (f) =>
        html`<li key=${f.path}><code>${f.path}</code><div class="muted small">sha256 <code>${f.sha256}</code></div></li>`,
    )}
  </ul>`;
}

function Taint({ taint }) {
  if (!taint?.length) return null;
  return html`<div class="taint">
    <strong>This turn had read untrusted content:</strong>
    <ul class="taint-list">
      ${taint.map(
        (t, i) =>
          html`<li key=${i}>${t.kind}: <code>${t.detail}</code>${t.move ? html` (from ${t.move})` : ""}</li>`,
      )}
    </ul>
  </div>`;
}

/** "12 min 5 s left", counted down each second; not read out as it changes. */
function TimeLeft({ until }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const left = Math.max(0, Math.round((Date.parse(until) - now) / 1000));
  const words =
    left === 0
      ? "expired"
      : left >= 60
        ? `${Math.floor(left / 60)} min ${left % 60} s left`
        : `${left} s left`;
  return html`<time datetime=${until} title=${when(until)}>${words}</time>`;
}

function Answer({ request, answer }) {
  const [pattern, setPattern] = useState("");
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const id = request.id;
  const who = `${request.move} for ${request.fighter}`;
  const act = async (action, body) => {
    setBusy(true);
    await answer(request, action, body);
    setBusy(false);
  };
  const always = () =>
    act("approve", { always: true, ...(pattern.trim() ? { pattern: pattern.trim() } : {}) });
  const deny = () => act("deny", reason.trim() ? { reason: reason.trim() } : {});
  return html`<form class="answer" onSubmit=${(e) => e.preventDefault()} aria-label=${`Answer ${who}`}>
    <div class="columns">
      <div>
        <label for=${`pattern-${id}`}>Pattern for Approve always (optional)</label>
        <input id=${`pattern-${id}`} type="text" value=${pattern} maxlength="4096" spellcheck="false"
          aria-describedby=${`pattern-${id}-hint`} onInput=${(e) => setPattern(e.currentTarget.value)} />
        <p id=${`pattern-${id}-hint`} class="muted small">A glob over the call (<code>npm run *</code>); empty: this exact call only.</p>
      </div>
      <div>
        <label for=${`reason-${id}`}>Reason for Deny (optional)</label>
        <input id=${`reason-${id}`} type="text" value=${reason} maxlength="1000"
          aria-describedby=${`reason-${id}-hint`} onInput=${(e) => setReason(e.currentTarget.value)} />
        <p id=${`reason-${id}-hint`} class="muted small">The model is told it.</p>
      </div>
    </div>
    <div class="row">
      <button type="button" disabled=${busy} onClick=${() => act("approve", {})} aria-label=${`Approve ${who}`}>Approve</button>
      <button type="button" class="secondary" disabled=${busy} onClick=${always} aria-label=${`Approve always ${who}`}>Approve always</button>
      <button type="button" class="danger" disabled=${busy} onClick=${deny} aria-label=${`Deny ${who}`}>Deny</button>
    </div>
  </form>`;
}

function History({ state, filter, setFilter }) {
  const { data, error } = state;
  const rows = data?.approvals.filter((r) => filter !== "answered" || r.status !== "pending");
  return html`<section aria-labelledby="history-title">
    <h2 id="history-title">Answered</h2>
    <form class="search" onSubmit=${(e) => e.preventDefault()}>
      <label for="history-status">Show</label>
      <select id="history-status" value=${filter} onChange=${(e) => setFilter(e.currentTarget.value)}>
        <option value="answered">every answered request</option>
        ${ANSWERED.map((s) => html`<option key=${s} value=${s}>${s}</option>`)}
      </select>
    </form>
    <${Problem} error=${error} />
    ${
      rows === undefined
        ? html`<${Loading} what="answered requests" />`
        : rows.length === 0
          ? html`<p class="muted">None${filter === "answered" ? "" : ` ${filter}`} yet.</p>`
          : html`<table class="approvals-history">
            <caption>The latest ${rows.length}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Asked</th><th scope="col">Fighter</th><th scope="col">Call</th>
                <th scope="col">Status</th><th scope="col">Answered</th><th scope="col">Then</th>
              </tr>
            </thead>
            <tbody>
              ${rows.map(
                (r) => html`<tr key=${r.id} data-approval=${r.id}>
                  <td>${when(r.created_at)}</td>
                  <td>${r.fighter}</td>
                  <td><code>${r.move}</code> <span class="subject">${clip(r.subject, 160)}</span></td>
                  <td><${Badge} value=${r.status} /></td>
                  <td>${r.answered_by ?? "—"}<div class="muted small">${when(r.answered_at)}</div></td>
                  <td>${then(r)}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

/** What came of a request after its answer. */
function then(r) {
  if (r.stale) return `not run: ${r.stale}`;
  if (r.released_at) return `ran ${when(r.released_at)}${r.rule_id ? "; rule stored" : ""}`;
  if (r.reason) return `reason: ${clip(r.reason, 200)}`;
  return r.rule_id ? "rule stored" : "—";
}

function Rules({ state, remove }) {
  const { data, error } = state;
  return html`<section aria-labelledby="rules-title">
    <h2 id="rules-title">Rules</h2>
    <p class="muted small">config.toml's <code>[[approvals.rules]]</code> (edited in the file) and those stored by Approve always.</p>
    <${Problem} error=${error} />
    ${
      data === undefined
        ? html`<${Loading} what="rules" />`
        : data.rules.length === 0
          ? html`<p class="muted">No rules: the grants and the defaults decide.</p>`
          : html`<table class="approval-rules">
            <caption>${data.rules.length} rules, config.toml's first</caption>
            <thead>
              <tr>
                <th scope="col">Fighter</th><th scope="col">Move</th><th scope="col">Calls</th>
                <th scope="col">Action</th><th scope="col">From</th><th scope="col">Remove</th>
              </tr>
            </thead>
            <tbody>
              ${data.rules.map(
                (rule) => html`<tr key=${rule.id} data-rule=${rule.id}>
                  <td>${rule.fighter}</td>
                  <td><code>${rule.move}</code></td>
                  <td>${calls(rule)}</td>
                  <td><${Badge} value=${rule.action} /></td>
                  <td>${rule.source === "config" ? "config.toml" : html`${rule.created_by}<div class="muted small">${when(rule.created_at)}</div>`}</td>
                  <td>${removal(rule, remove)}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

function calls(rule) {
  if (rule.pattern !== undefined) return html`matching <code>${rule.pattern}</code>`;
  if (rule.arguments !== undefined) return html`exactly <code>${clip(rule.arguments, 200)}</code>`;
  return "every call";
}

function removal(rule, remove) {
  if (rule.source === "config") return html`<span class="muted small">edit config.toml</span>`;
  if (!mayOperate()) return html`<span class="muted small">needs scope operator</span>`;
  return html`<button type="button" class="danger small" onClick=${() => remove(rule)}
    aria-label=${`Remove the rule for ${rule.move} of ${rule.fighter}`}>Remove</button>`;
}
