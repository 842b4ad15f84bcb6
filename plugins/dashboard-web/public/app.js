/**
 * The dashboard's entry: the page frame (skip link, navigation, who the requests run as, the live
 * connection's state, what the key may do) and the view the address names, when the key may open
 * it. The live event stream starts once the daemon is known to take unsigned requests from here, or
 * once a key signs them.
 */

import { describeAccess, homeView, mayOpen, mayRead, offered, refusal } from "./lib/access.js";
import { authState, forgetKey, loadAccess, watchAuth } from "./lib/api.js";
import { KeyPrompt } from "./lib/key-prompt.js";
import { liveState, onLive, startLive } from "./lib/live.js";
import { followPending, pendingRequests, watchPending } from "./lib/pending.js";
import { useRoute, VIEWS } from "./lib/router.js";
import { Heading, Loading } from "./lib/ui.js";
import { html, render, useEffect, useRef, useState } from "./vendor/standalone.module.js";
import { ApprovalsView } from "./views/approvals.js";
import { ChannelsView } from "./views/channels.js";
import { ChatView } from "./views/chat.js";
import { EventsView } from "./views/events.js";
import { FighterView } from "./views/fighter.js";
import { FightersView } from "./views/fighters.js";
import { GorillasView } from "./views/gorillas.js";
import { MovesView } from "./views/moves.js";
import { SchedulesView } from "./views/schedules.js";
import { TroopsView } from "./views/troops.js";
import { UsageView } from "./views/usage.js";

function useAuth() {
  const [auth, setAuth] = useState(authState);
  useEffect(() => watchAuth(() => setAuth(authState())), []);
  return auth;
}

function useLiveState() {
  const [state, setState] = useState(liveState);
  useEffect(() => onLive((entry) => entry === undefined && setState(liveState())), []);
  return state;
}

/** How many approval requests wait, for the navigation's badge. */
function usePendingCount() {
  const [count, setCount] = useState(0);
  useEffect(() => watchPending(() => setCount(pendingRequests().length)), []);
  return count;
}

function View({ route, view, access }) {
  const [first, second, third] = route.parts;
  if (!mayOpen(view, access)) {
    const needs = "this view needs scope read";
    return html`<section aria-labelledby="view-title">
      <${Heading}>Not for this key<//>
      <p class="problem" role="alert">${refusal(access, needs)}</p>
      <p><a href=${`#/${homeView(access)}`}>Go to what this key may see</a>.</p>
    </section>`;
  }
  switch (view) {
    case "fighters":
      return first
        ? html`<${FighterView} id=${first} boutId=${second === "bouts" ? third : undefined} />`
        : html`<${FightersView} />`;
    case "chat":
      return html`<${ChatView} id=${first} />`;
    case "approvals":
      return html`<${ApprovalsView} />`;
    case "gorillas":
      return html`<${GorillasView} name=${first} />`;
    case "schedules":
      return html`<${SchedulesView} />`;
    case "troops":
      return html`<${TroopsView} name=${first} />`;
    case "moves":
      return html`<${MovesView} />`;
    case "events":
      return html`<${EventsView} />`;
    case "channels":
      return html`<${ChannelsView} />`;
    case "usage":
      return html`<${UsageView} />`;
    default:
      return html`<section aria-labelledby="view-title">
        <${Heading}>Not found<//>
        <p>No view at <code>${location.hash}</code>. <a href="#/fighters">Go to the fighters</a>.</p>
      </section>`;
  }
}

function App() {
  const route = useRoute();
  const auth = useAuth();
  const live = useLiveState();
  const waiting = usePendingCount();
  const main = useRef(null);
  const opened = useRef(false);
  const access = auth.access;
  const view = route.bare && access ? homeView(access) : route.view;

  useEffect(() => {
    // Signed, the socket opens with a one-use ticket asked for by a signed request (lib/live.js).
    if (auth.mode === "unsigned" || auth.mode === "signed") startLive();
  }, [auth.mode]);
  // What the key may do is asked first, and again for each new key.
  useEffect(() => {
    if (access === undefined && auth.mode !== "needs-key") loadAccess();
  }, [access, auth.mode]);
  // The pending approvals (the navigation's count): for a key that may read them, again for each key.
  useEffect(() => {
    if (access && mayRead(access)) followPending();
  }, [access]);
  // A new view takes the focus to its heading, so the keyboard and screen readers start there.
  useEffect(() => {
    if (opened.current) main.current?.querySelector("h1")?.focus();
    opened.current = true;
  }, [view, route.parts.join("/"), auth.mode === "needs-key"]);

  return html`
    <a class="skip-link" href="#main">Skip to content</a>
    <header class="top">
      <span class="brand">Spar</span>
      <nav aria-label="Views">
        <ul>
          ${VIEWS.filter(([name]) => access && offered(name, access)).map(
            ([name, label]) => html`<li key=${name}>
              <a href=${`#/${name}`} aria-current=${view === name ? "page" : undefined}>${label}${
                name === "approvals" &&
                waiting > 0 &&
                html` <span class="count">${waiting}<span class="visually-hidden"> waiting</span></span>`
              }</a>
            </li>`,
          )}
        </ul>
      </nav>
      <div class="session">
        <span class="small">${liveLabel(live)}</span>
        <span class="small">${authLabel(auth)}</span>
        ${access && html`<span class="small" id="key-scope">${describeAccess(access)}</span>`}
        ${auth.mode === "signed" && html`<button type="button" class="secondary small" onClick=${forgetKey}>Forget key</button>`}
      </div>
    </header>
    <main id="main" ref=${main} tabindex="-1">
      ${
        auth.mode === "needs-key"
          ? html`<${KeyPrompt} refusal=${auth.refusal} />`
          : access === undefined
            ? html`<${Loading} what="what this key may do" />`
            : html`<${View} route=${route} view=${view} access=${access} />`
      }
    </main>`;
}

function authLabel(auth) {
  if (auth.mode === "signed") return `Signed as ${auth.keyId}`;
  if (auth.mode === "unsigned") return "Unsigned (this machine)";
  if (auth.mode === "needs-key") return "Key needed";
  return "";
}

function liveLabel(live) {
  if (live.status === "live") return "● Live";
  if (live.status === "reconnecting") return "○ Reconnecting…";
  if (live.status === "connecting") return "○ Connecting…";
  return "";
}

render(html`<${App} />`, document.getElementById("app"));
