/**
 * Request signing in the browser, the daemon's scheme (lib/http-signatures.ts, README "Signing
 * requests from other clients"): RFC 9421 HTTP Message Signatures with Ed25519 over `@method`,
 * `@target-uri` and, with a body, `content-digest` (RFC 9530, sha-256), with `created`, `keyid`,
 * a single-use `nonce` and `alg="ed25519"`. WebCrypto does the work; the private key is imported
 * non-extractable and lives only in this tab's memory.
 */

/** The names `spar key add` accepts, which are also safe inside a structured-field string. */
const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** DER prefix of a PKCS #8 Ed25519 private key; the 32-byte seed follows (RFC 8410). */
const PKCS8_ED25519_PREFIX = [
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

const toBase64 = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

function fromBase64(text) {
  const standard = text.replace(/-/g, "+").replace(/_/g, "/").replace(/\s+/g, "");
  const binary = atob(standard.padEnd(Math.ceil(standard.length / 4) * 4, "="));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/**
 * Why this page cannot sign requests, in a sentence, or undefined when it can. Asks the browser to
 * make an Ed25519 key, which is the only way to know it supports the algorithm.
 */
export async function signingUnavailable() {
  if (!globalThis.isSecureContext) {
    return `this page is not a secure context (${location.origin}): browsers give WebCrypto only to https pages and to http on localhost or 127.0.0.1, so open the dashboard at http://127.0.0.1:<port>/ on the daemon's machine, or behind https`;
  }
  if (!globalThis.crypto?.subtle) return "this browser has no WebCrypto (crypto.subtle is missing)";
  try {
    await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]);
    return undefined;
  } catch (err) {
    return `this browser's WebCrypto cannot make Ed25519 signatures (${err?.name ?? "error"}: ${err?.message ?? err}); Chrome 137, Firefox 129 and Safari 17 or later can`;
  }
}

/** The DER bytes of a PKCS #8 private key given as PEM, or as base64 of the raw 32-byte seed. */
function pkcs8Of(text) {
  const trimmed = text.trim();
  if (trimmed.includes("ENCRYPTED PRIVATE KEY")) {
    throw new Error("the key is encrypted: decrypt it first (openssl pkey -in <file>)");
  }
  const pem = /^-----BEGIN PRIVATE KEY-----([\s\S]+?)-----END PRIVATE KEY-----$/.exec(trimmed);
  if (pem) return fromBase64(pem[1] ?? "");
  if (trimmed.startsWith("-----BEGIN")) {
    throw new Error(
      'give the key as PKCS #8 PEM ("-----BEGIN PRIVATE KEY-----"), as spar init and openssl genpkey write it',
    );
  }
  let seed;
  try {
    seed = fromBase64(trimmed);
  } catch {
    throw new Error("not a PEM private key, nor base64 of a 32-byte Ed25519 seed");
  }
  if (seed.length !== 32)
    throw new Error(`not a PEM private key, nor a 32-byte seed (got ${seed.length} bytes)`);
  return Uint8Array.from([...PKCS8_ED25519_PREFIX, ...seed]);
}

/**
 * A signer for the key named `keyId` (its name in `spar key list`) with the private key `text`.
 * Throws an Error saying what is wrong with either.
 */
export async function createSigner(keyId, text) {
  if (!KEY_NAME.test(keyId)) {
    throw new Error("the key name is 1 to 64 letters, digits, '_', '.' or '-', as in spar key list");
  }
  let key;
  try {
    key = await crypto.subtle.importKey("pkcs8", pkcs8Of(text), { name: "Ed25519" }, false, ["sign"]);
  } catch (err) {
    if (err instanceof Error && !(err instanceof DOMException)) throw err;
    throw new Error(`not an Ed25519 private key (${err?.name ?? "error"}: ${err?.message ?? err})`);
  }
  return {
    keyId,
    /** The headers to add to this request; `body` is the exact string sent, if any. */
    async headers(method, url, body) {
      const target = new URL(url, location.href);
      const targetUri = `${target.protocol}//${target.host}${target.pathname}${target.search}`;
      const headers = {};
      const components = ["@method", "@target-uri"];
      const lines = [`"@method": ${method}`, `"@target-uri": ${targetUri}`];
      if (body !== undefined) {
        const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body));
        headers["content-digest"] = `sha-256=:${toBase64(digest)}:`;
        components.push("content-digest");
        lines.push(`"content-digest": ${headers["content-digest"]}`);
      }
      const nonce = toBase64(crypto.getRandomValues(new Uint8Array(16)))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, "");
      const created = Math.floor(Date.now() / 1000);
      const params = `(${components.map((c) => `"${c}"`).join(" ")});created=${created};keyid="${keyId}";nonce="${nonce}";alg="ed25519"`;
      lines.push(`"@signature-params": ${params}`);
      const signature = await crypto.subtle.sign("Ed25519", key, new TextEncoder().encode(lines.join("\n")));
      headers["signature-input"] = `sig1=${params}`;
      headers.signature = `sig1=:${toBase64(signature)}:`;
      return headers;
    },
  };
}
