/**
 * The dashboard's API client: same-origin fetch to /api/v1, under the rules every client follows.
 * Requests go unsigned (which a daemon allows from its own machine while `[auth]
 * allow_unsigned_loopback` is on); the first 401 asks the user for a key once, and from then on every
 * request is signed with it (sign.js). A request waiting for the key is sent again once it is given.
 */
import { createSigner } from "./sign.js";

/** An error answer of the API: its HTTP status and its stable code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * `mode`: "unknown" until the first answer, "unsigned" when unsigned requests work, "needs-key"
 * while a 401 waits for a key, "signed" once one is in use. `refusal` is the daemon's last reason.
 * `access` is what the requests may do (`GET /api/v1/key`), undefined until the daemon has said.
 */
const auth = { mode: "unknown", signer: undefined, refusal: undefined, access: undefined };
const watchers = new Set();
let keyGiven;
let releaseKey;

function setAuth(changes) {
  Object.assign(auth, changes);
  for (const watch of watchers) watch();
}

/** The authentication state, for the header and the key form. */
export function authState() {
  return { mode: auth.mode, keyId: auth.signer?.keyId, refusal: auth.refusal, access: auth.access };
}

/** Calls `watch` whenever the authentication state changes; returns the way to stop. */
export function watchAuth(watch) {
  watchers.add(watch);
  return () => watchers.delete(watch);
}

/** Signs every request from now on with this key; throws when the key cannot be used. */
export async function giveKey(keyId, text) {
  const signer = await createSigner(keyId, text);
  setAuth({ signer, mode: "signed", access: undefined });
  releaseKey?.();
  keyGiven = undefined;
}

/** Drops the key: the next request goes unsigned again, and asks for a key if it is refused. */
export function forgetKey() {
  setAuth({ signer: undefined, mode: "unknown", refusal: undefined, access: undefined });
}

let accessAsked = false;

/**
 * Asks the daemon what the requests may do (`GET /api/v1/key`), once per key: the first request the
 * page sends, so a 401 asks for the key before anything else, and the answer is the signed key's.
 * When the daemon cannot say, the page offers everything and the daemon's refusals speak instead.
 */
export function loadAccess() {
  if (accessAsked) return;
  accessAsked = true;
  api("GET", "/api/v1/key")
    .then(
      (access) => setAuth({ access }),
      (error) =>
        setAuth({
          access: { key: auth.signer?.keyId ?? null, scope: "unknown", fighters: null, error, may: {} },
        }),
    )
    .finally(() => {
      accessAsked = false;
    });
}

function waitForKey(refusal) {
  keyGiven ??= new Promise((done) => {
    releaseKey = done;
  });
  setAuth({ mode: "needs-key", refusal, signer: undefined });
  return keyGiven;
}

async function errorOf(response) {
  const body = await response.json().catch(() => undefined);
  const error = body?.error ?? {};
  return new ApiError(
    response.status,
    error.code ?? "HTTP_ERROR",
    error.message ?? `HTTP ${response.status}`,
  );
}

/** Sends a request, signed when a key is in use; after a 401 waits for a key and sends it again. */
async function send(method, path, { body, accept, signal } = {}) {
  const text = body === undefined ? undefined : JSON.stringify(body);
  const headers = { accept: accept ?? "application/json" };
  if (text !== undefined) headers["content-type"] = "application/json";
  const signer = auth.signer;
  if (signer) Object.assign(headers, await signer.headers(method, path, text));
  const response = await fetch(path, { method, headers, body: text, signal });
  if (response.status !== 401) {
    if (!signer && auth.mode === "unknown") setAuth({ mode: "unsigned" });
    return response;
  }
  const refusal = (await errorOf(response)).message;
  await waitForKey(refusal);
  return send(method, path, { body, accept, signal });
}

/** A JSON request; answers the parsed body, or throws ApiError. */
export async function api(method, path, body) {
  const response = await send(method, path, { body });
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return undefined;
  return response.json();
}

/**
 * A message answered as server-sent events (README "Streaming, events and quotas"): calls `onDelta`
 * with each piece of text, and answers the reply, or throws ApiError (CANCELLED when the turn was
 * cancelled). Aborting `signal` closes the stream, which cancels the turn.
 */
export async function streamMessage(fighter, payload, { onDelta, signal }) {
  const path = `/api/v1/fighters/${encodeURIComponent(fighter)}/message`;
  const response = await send("POST", path, { body: payload, accept: "text/event-stream", signal });
  if (!response.ok) throw await errorOf(response);
  if (!response.headers.get("content-type")?.startsWith("text/event-stream")) return response.json();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
    let end = buffered.indexOf("\n\n");
    while (end !== -1) {
      const event = parseEvent(buffered.slice(0, end));
      buffered = buffered.slice(end + 2);
      if (event.name === "delta") onDelta(event.data.text);
      else if (event.name === "reply") return event.data;
      else if (event.name === "error") {
        const error = event.data.error ?? {};
        throw new ApiError(200, error.code ?? "STREAM_ERROR", error.message ?? "the stream failed");
      }
      end = buffered.indexOf("\n\n");
    }
  }
  throw new ApiError(0, "STREAM_ENDED", "the stream ended before the reply");
}

function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  return { name, data: JSON.parse(data.join("\n") || "null") };
}
