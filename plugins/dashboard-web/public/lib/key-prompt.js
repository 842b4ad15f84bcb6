/**
 * The form shown when the daemon refuses unsigned requests: the name of an authorized key and its
 * Ed25519 private key, used to sign every request from this tab. The key is kept in memory only
 * (never in localStorage or sessionStorage): reloading the page asks again. When this browser
 * cannot sign, the form is replaced by the exact reason.
 */
import { html, useEffect, useState } from "../vendor/standalone.module.js";
import { giveKey } from "./api.js";
import { signingUnavailable } from "./sign.js";

export function KeyPrompt({ refusal }) {
  const [unavailable, setUnavailable] = useState(undefined);
  const [checked, setChecked] = useState(false);
  const [keyId, setKeyId] = useState("");
  const [key, setKey] = useState("");
  const [problem, setProblem] = useState(undefined);
  useEffect(() => {
    signingUnavailable().then((why) => {
      setUnavailable(why);
      setChecked(true);
    });
  }, []);
  const submit = async (event) => {
    event.preventDefault();
    setProblem(undefined);
    try {
      await giveKey(keyId.trim(), key);
    } catch (err) {
      setProblem(err.message);
    }
  };
  return html`<section class="key-prompt" aria-labelledby="view-title">
    <h1 id="view-title" tabindex="-1">Sign in with a key</h1>
    <p>The daemon refused an unsigned request: <q>${refusal}</q></p>
    <p>
      It accepts signed requests only (<code>[auth] allow_unsigned_loopback = false</code>, or this page is
      not on the daemon's machine). Give the name of an authorized key (<code>spar key list</code>) and its
      Ed25519 private key: the PEM file <code>spar init</code> wrote to <code>${"<data dir>/keys/cli.key"}</code>
      for the key <code>cli</code>, or one made with <code>openssl genpkey -algorithm ed25519</code> and
      authorized with <code>spar key add</code>. This page signs each request with it (RFC 9421) and keeps it
      in this tab's memory only: nothing is stored, and reloading the page asks again.
    </p>
    ${!checked && html`<p class="muted" role="status">Checking that this browser can sign…</p>`}
    ${checked && unavailable && html`<p class="problem" role="alert">This page cannot sign requests: ${unavailable}.</p>`}
    ${
      checked &&
      !unavailable &&
      html`<form onSubmit=${submit}>
        <label for="key-id">Key name</label>
        <input id="key-id" autocomplete="off" spellcheck="false" required value=${keyId}
          onInput=${(e) => setKeyId(e.currentTarget.value)} />
        <label for="key-text">Private key (PEM)</label>
        <textarea id="key-text" rows="5" spellcheck="false" required value=${key}
          onInput=${(e) => setKey(e.currentTarget.value)}></textarea>
        ${problem && html`<p class="problem" role="alert">${problem}</p>`}
        <button type="submit">Use this key</button>
      </form>`
    }
  </section>`;
}
