import { createPrivateKey, KeyObject } from "node:crypto";
import { SparError } from "../sdk/errors.js";
import { contentDigest, signRequest } from "./http-signatures.js";

/**
 * Signing requests to the Spar API, for clients other than the `spar` CLI (which signs the same way).
 * Published as `spar/sign`. The daemon checks an RFC 9421 signature over the method, the URL
 * (`http://<Host header><path and query>`) and, with a body, its Content-Digest (RFC 9530), made with
 * an Ed25519 key authorized by `spar key add <name> <public key>`; the signature's key id is that name.
 * A signature is good for one request (its nonce is single-use) within 300 s of its creation.
 */

/** What to sign: the request exactly as it will be sent. */
export interface SignInput {
  /** GET, POST, DELETE … */
  method: string;
  /** The full URL the request goes to, as sent: `http://127.0.0.1:6660/api/v1/fighters`. */
  url: string | URL;
  /** The body, byte for byte as sent (a JSON string); leave it out for a request without one. */
  body?: string | Uint8Array;
  /** The name the public key was authorized under (`spar key add <name> …`). */
  keyId: string;
  /** The Ed25519 private key: PEM (PKCS #8) text, or a KeyObject. */
  privateKey: string | Buffer | KeyObject;
}

/** The headers to add to the request (names in lowercase, as fetch and Node send them). */
export interface SignedHeaders {
  "signature-input": string;
  signature: string;
  /** Only when there is a body. */
  "content-digest"?: string;
}

/**
 * The headers that let a request in when the daemon accepts signed requests only (or the client is
 * not on the daemon's machine). Send them with the same method, URL and body, within 300 s, once.
 *
 * @example
 * import { readFileSync } from "node:fs";
 * import { signedHeaders } from "spar/sign";
 *
 * const url = "http://127.0.0.1:6660/api/v1/fighters/spar/message";
 * const body = JSON.stringify({ message: "hello" });
 * const headers = signedHeaders({ method: "POST", url, body, keyId: "laptop", privateKey: readFileSync("laptop.key") });
 * const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
 */
export function signedHeaders(input: SignInput): SignedHeaders {
  const privateKey = toPrivateKey(input.privateKey);
  const targetUri = targetOf(input.url);
  const headers: Record<string, string> = {};
  if (input.body !== undefined) headers["content-digest"] = contentDigest(input.body);
  const signature = signRequest(
    { method: input.method.toUpperCase(), targetUri, headers },
    { keyId: input.keyId, privateKey },
  );
  return { ...signature, ...headers };
}

/** The URL as a client sends it: scheme, host (and port), path and query; never a fragment. */
function targetOf(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SparError("VALIDATION_FAILED", `not an absolute URL: ${String(url)}`);
  }
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}${parsed.search}`;
}

function toPrivateKey(key: string | Buffer | KeyObject): KeyObject {
  if (key instanceof KeyObject) return key;
  try {
    return createPrivateKey(key);
  } catch (err) {
    throw new SparError(
      "VALIDATION_FAILED",
      `not a private key (expected PEM, PKCS #8): ${(err as Error).message}`,
    );
  }
}
