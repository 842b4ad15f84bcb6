/**
 * `#/chat/<fighter>`: a conversation with one fighter. Each message is sent with `Accept:
 * text/event-stream`, so the reply streams into the page as the model writes it; Cancel asks the
 * daemon to cancel the running turn (`POST /api/v1/fighters/:id/cancel`), which records it
 * cancelled. Sessions live outside the view, so a reply keeps streaming while another view is open.
 * A chat opens on the conversation it continues: the fighter's latest bout of a user's own (not a
 * troop's or another fighter's), its messages shown and the next message sent to it. A key that may
 * not chat with the fighter (`read`) sees the conversation without the box to write in it; a
 * `chat:<fighter>` key is offered its own fighters only. While a call of the turn waits for an
 * approval (`approval.requested` for this fighter, until its `approval.answered`), the chat says so
 * and links to the Approvals view.
 */

import { currentAccess, mayChat, mayRead, refusal } from "../lib/access.js";
import { api, streamMessage } from "../lib/api.js";
import { href } from "../lib/router.js";
import { Badge, Heading, Loading, Problem, useData, useLiveEvents } from "../lib/ui.js";
import { html, useEffect, useState } from "../vendor/standalone.module.js";

/** fighter id → { entries, boutId, running, newBout, listeners } */
const sessions = new Map();

function sessionOf(id) {
  let session = sessions.get(id);
  if (!session) {
    session = { entries: [], boutId: undefined, running: false, newBout: false, listeners: new Set() };
    sessions.set(id, session);
  }
  return session;
}

function changed(session) {
  for (const listen of session.listeners) listen();
}

/** Shows the latest user bout's messages, once per session, unless the chat has started already. */
async function loadLatest(id, session) {
  if (session.loaded) return;
  session.loaded = true;
  // The daemon says which bouts are the user's own (legacy ones without an origin included), newest first.
  const { bouts } = await api("GET", `/api/v1/fighters/${encodeURIComponent(id)}/bouts?origin=user`);
  const [latest] = bouts;
  if (!latest || session.entries.length > 0) return;
  const { messages } = await api("GET", `/api/v1/bouts/${encodeURIComponent(latest.id)}/messages`);
  if (session.entries.length > 0) return;
  session.entries = messages
    .filter((m) => (m.role === "user" || m.role === "assistant") && m.content)
    .map((m) => ({ role: m.role === "user" ? "user" : "fighter", text: m.content, state: "done" }));
  session.boutId = latest.id;
  changed(session);
}

async function send(id, session, message) {
  const reply = { role: "fighter", text: "", state: "streaming" };
  session.entries.push({ role: "user", text: message }, reply);
  session.running = true;
  changed(session);
  const payload = {
    message,
    ...(session.newBout ? { bout: "new" } : session.boutId ? { bout_id: session.boutId } : {}),
  };
  try {
    const result = await streamMessage(id, payload, {
      onDelta: (text) => {
        reply.text += text;
        changed(session);
      },
    });
    Object.assign(reply, { text: result.response, state: "done", tokens: result.usage });
    session.boutId = result.bout_id;
    session.newBout = false;
  } catch (error) {
    Object.assign(reply, { state: error.code === "CANCELLED" ? "cancelled" : "failed", error });
  } finally {
    session.running = false;
    changed(session);
  }
}

export function ChatView({ id }) {
  if (!id) return mayRead() ? html`<${ChooseFighter} />` : html`<${ChooseOwnFighter} />`;
  // A `chat` key may not even look at another fighter: it is refused without asking the daemon.
  if (!mayRead() && !mayChat(id)) {
    return html`<section aria-labelledby="view-title">
      <${Heading}>Chat with ${id}<//>
      <p class="problem" role="alert">${refusal(currentAccess(), `a chat with ${id} needs scope operator or chat:${id}`)}</p>
      <${ChooseOwnFighter} />
    </section>`;
  }
  return html`<${Chat} key=${id} id=${id} />`;
}

/** A `chat` key's fighters, as its scope names them: it may not list the others. */
function ChooseOwnFighter() {
  const own = currentAccess().fighters ?? [];
  return html`<section aria-labelledby="view-title">
    <${Heading}>Chat<//>
    <p>This key may chat with:</p>
    <ul>${own.map((f) => html`<li key=${f}><a href=${href("chat", f)}>${f}</a></li>`)}</ul>
  </section>`;
}

function ChooseFighter() {
  const { data, error } = useData(() => api("GET", "/api/v1/fighters"), []);
  return html`<section aria-labelledby="view-title">
    <${Heading}>Chat<//>
    <${Problem} error=${error} />
    <p>Choose a fighter to talk to:</p>
    ${
      data === undefined
        ? html`<${Loading} what="fighters" />`
        : html`<ul>${data.fighters.filter((f) => mayChat(f)).map((f) => html`<li key=${f.id}><a href=${href("chat", f.id)}>${f.name}</a></li>`)}</ul>`
    }
  </section>`;
}

function Chat({ id }) {
  const session = sessionOf(id);
  const [, redraw] = useState(0);
  const [draft, setDraft] = useState("");
  const [problem, setProblem] = useState(undefined);
  const { data: fighter, error } = useData(
    () => api("GET", `/api/v1/fighters/${encodeURIComponent(id)}`),
    [id],
  );
  const [status, setStatus] = useState(undefined);
  /** This fighter's calls waiting for an approval: request id → move. */
  const [asking, setAsking] = useState({});
  useEffect(() => {
    const listen = () => redraw((n) => n + 1);
    session.listeners.add(listen);
    loadLatest(id, session).catch((err) => {
      session.loaded = false;
      setProblem(err);
    });
    return () => session.listeners.delete(listen);
  }, [session]);
  useLiveEvents((event) => {
    if (event.fighter_id !== fighter?.id) return;
    if (event.kind === "fighter.status") setStatus(event.status);
    else if (event.kind === "approval.requested")
      setAsking((a) => ({ ...a, [event.request_id]: event.move }));
    else if (event.kind === "approval.answered") {
      setAsking(({ [event.request_id]: _, ...rest }) => rest);
    }
  });

  const submit = (event) => {
    event.preventDefault();
    const message = draft.trim();
    if (!message || session.running) return;
    setDraft("");
    setProblem(undefined);
    send(id, session, message);
  };
  const cancel = async () => {
    try {
      await api("POST", `/api/v1/fighters/${encodeURIComponent(id)}/cancel`);
    } catch (err) {
      setProblem(err);
    }
  };
  const keydown = (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) submit(event);
  };
  const name = fighter?.name ?? id;
  const writes = mayChat(fighter ?? id);
  return html`<section aria-labelledby="view-title">
    <${Heading}>Chat with ${name} ${fighter && html`<${Badge} value=${status ?? fighter.status} />`}<//>
    <${Problem} error=${error ?? problem} />
    <ol class="transcript" aria-label="Conversation">
      ${session.entries.map((entry, i) => html`<${Entry} key=${i} entry=${entry} />`)}
    </ol>
    ${
      session.running &&
      Object.keys(asking).length > 0 &&
      html`<p class="notice" role="status">
      Waiting for an approval: ${Object.values(asking).join(", ")}. <a href="#/approvals">Answer it in Approvals</a>.
    </p>`
    }
    ${
      writes
        ? html`<${ChatForm} name=${name} session=${session} draft=${draft} setDraft=${setDraft}
            submit=${submit} cancel=${cancel} keydown=${keydown} />`
        : html`<p class="muted" id="chat-read-only">${refusal(
            currentAccess(),
            `it may read this conversation but not write in it: a chat needs scope operator or chat:${name}`,
          )}</p>`
    }
    ${mayRead() && session.boutId && html`<p><a href=${href("fighters", id, "bouts", session.boutId)}>This bout's messages</a></p>`}
  </section>`;
}

function ChatForm({ name, session, draft, setDraft, submit, cancel, keydown }) {
  return html`<form class="chat-form" onSubmit=${submit}>
      <label for="chat-message">Message to ${name}</label>
      <textarea id="chat-message" rows="3" value=${draft} onInput=${(e) => setDraft(e.currentTarget.value)}
        onKeyDown=${keydown} aria-describedby="chat-hint"></textarea>
      <p id="chat-hint" class="muted small">Enter sends; Shift+Enter starts a new line.</p>
      <div class="row">
        <button type="submit" disabled=${session.running}>Send</button>
        <button type="button" class="secondary" onClick=${cancel} disabled=${!session.running}>Cancel</button>
        <label class="inline">
          <input type="checkbox" checked=${session.newBout}
            onChange=${(e) => {
              session.newBout = e.currentTarget.checked;
              changed(session);
            }} />
          Start a new bout
        </label>
      </div>
    </form>`;
}

function Entry({ entry }) {
  if (entry.role === "user") {
    return html`<li class="message user"><div class="role">You</div><div class="text">${entry.text}</div></li>`;
  }
  const streaming = entry.state === "streaming";
  return html`<li class=${`message fighter reply-${entry.state}`}>
    <div class="role">Fighter</div>
    <div class="text reply" aria-live="polite" aria-busy=${streaming ? "true" : "false"}>${entry.text}</div>
    <p class="muted small" role="status">${stateLine(entry)}</p>
  </li>`;
}

function stateLine(entry) {
  if (entry.state === "streaming") return "Writing…";
  if (entry.state === "cancelled") return "Cancelled: the turn was stopped and recorded cancelled.";
  if (entry.state === "failed") return `Failed: ${entry.error?.code ?? ""} ${entry.error?.message ?? ""}`;
  return entry.tokens ? `${entry.tokens.input_tokens} in / ${entry.tokens.output_tokens} out tokens` : "";
}
