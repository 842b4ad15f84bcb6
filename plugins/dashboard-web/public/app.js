/**
 * The dashboard's entry: the page frame (skip link, navigation, who the requests run as, the live
 * connection's state) and the view the address names. The live event stream starts once the daemon
 * is known to take unsigned requests from here, and is switched off, with the reason, when it takes
 * signed ones only.
 */

import { authState, forgetKey, watchAuth } from "./lib/api.js";
import { KeyPrompt } from "./lib/key-prompt.js";
import { liveState, onLive, startLive } from "./lib/live.js";
import { useRoute, VIEWS } from "./lib/router.js";
import { Heading } from "./lib/ui.js";
import { html, render, useEffect, useRef, useState } from "./vendor/standalone.module.js";
import { ChannelsView } from "./views/channels.js";
import { ChatView } from "./views/chat.js";
import { EventsView } from "./views/events.js";
import { FighterView } from "./views/fighter.js";
import { FightersView } from "./views/fighters.js";
import { GorillasView } from "./views/gorillas.js";
import { MovesView } from "./views/moves.js";
import { SchedulesView } from "./views/schedules.js";
import { TroopsView } from "./views/troops.js";

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

function View({ route }) {
  const [first, second, third] = route.parts;
  switch (route.view) {
    case "fighters":
      return first
        ? html`<${FighterView} id=${first} boutId=${second === "bouts" ? third : undefined} />`
        : html`<${FightersView} />`;
    case "chat":
      return html`<${ChatView} id=${first} />`;
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
  const main = useRef(null);
  const opened = useRef(false);

  useEffect(() => {
    // Signed, the socket opens with a one-use ticket asked for by a signed request (lib/live.js).
    if (auth.mode === "unsigned" || auth.mode === "signed") startLive();
  }, [auth.mode]);
  // A new view takes the focus to its heading, so the keyboard and screen readers start there.
  useEffect(() => {
    if (opened.current) main.current?.querySelector("h1")?.focus();
    opened.current = true;
  }, [route.view, route.parts.join("/"), auth.mode === "needs-key"]);

  return html`
    <a class="skip-link" href="#main">Skip to content</a>
    <header class="top">
      <span class="brand">Spar</span>
      <nav aria-label="Views">
        <ul>
          ${VIEWS.map(
            ([name, label]) => html`<li key=${name}>
              <a href=${`#/${name}`} aria-current=${route.view === name ? "page" : undefined}>${label}</a>
            </li>`,
          )}
        </ul>
      </nav>
      <div class="session">
        <span class="small">${liveLabel(live)}</span>
        <span class="small">${authLabel(auth)}</span>
        ${auth.mode === "signed" && html`<button type="button" class="secondary small" onClick=${forgetKey}>Forget key</button>`}
      </div>
    </header>
    <main id="main" ref=${main} tabindex="-1">
      ${auth.mode === "needs-key" ? html`<${KeyPrompt} refusal=${auth.refusal} />` : html`<${View} route=${route} />`}
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
