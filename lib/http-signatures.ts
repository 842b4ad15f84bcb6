import { createHash, type KeyObject, randomBytes, sign, verify } from "node:crypto";
import { SparError } from "../sdk/errors.js";
import {
  type Member,
  type Params,
  SfError,
  SfParser,
  serializeBareItem,
  serializeParams,
  serializeString,
} from "./structured-fields.js";

/**
 * HTTP Message Signatures (RFC 9421) with Ed25519, and Content-Digest (RFC 9530), on node:crypto only.
 * The CLI signs requests with `signRequest`; the Arena checks them with `verifyRequest` and the body with
 * `digestMatches` (verifyRequest never sees the body: it only proves the digest header was signed).
 *
 * @example
 * const headers = { "content-digest": contentDigest(body) };
 * Object.assign(headers, signRequest({ method: "POST", targetUri, headers }, { keyId: "cli", privateKey }));
 */

/** The parts of an HTTP request a signature can cover. Header names lowercase. */
export interface SignableRequest {
  method: string;
  /** Absolute, used verbatim for `@target-uri`: both ends must build the same string. */
  targetUri: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface SignOptions {
  keyId: string;
  privateKey: KeyObject;
  /** Default "sig1". */
  label?: string;
  /** Default: ["@method", "@target-uri"] plus "content-digest" when that header is present. */
  components?: string[];
  /** Unix seconds, default now. */
  created?: number;
  /** Default: 16 random bytes base64url; null omits the parameter (RFC 9421 B.2.6 has none). */
  nonce?: string | null;
  /** Default "ed25519"; null omits the parameter (RFC 9421 B.2.6 has none). */
  alg?: "ed25519" | null;
}

/** How `verifyRequest` checks a signature: whose keys, how old it may be, what it must cover. */
export interface VerifyOptions {
  /** Ed25519 public keys by key id. */
  keys: (keyId: string) => KeyObject | undefined;
  /** Unix seconds, default now. */
  now?: number;
  /** Default 300: |now - created| beyond this is refused, in both directions. */
  maxAgeSeconds?: number;
  /** Default ["@method", "@target-uri"]; "content-digest" is added when the request has one or `hasBody`. */
  requiredComponents?: string[];
  hasBody?: boolean;
  /** Default true. Without a nonce the caller cannot detect replays; false exists for the RFC vectors. */
  requireNonce?: boolean;
}

/** On success `nonce` is "" only when `requireNonce: false` let a signature without one through. */
export type VerifyResult =
  | { ok: true; keyId: string; nonce: string; created: number; label: string; components: string[] }
  | { ok: false; reason: string };

/** `("a" "b");created=1;keyid="x"`: the Signature-Input member and the `@signature-params` value. */
function serializeSignatureParams(components: string[], params: Params): string {
  return `(${components.map(serializeString).join(" ")})${serializeParams(params)}`;
}

// ---------------------------------------------------------------------------------------------------------
// Components and the signature base (RFC 9421 §2).

type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string };
const refuse = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

const DERIVED = new Set("@method @target-uri @authority @scheme @path @query @request-target".split(" "));
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
// Ports the authority drops (RFC 9421 §2.2.3): the scheme already implies them.
const DEFAULT_PORTS: Record<string, string> = { http: "80", https: "443" };
const TARGET_URI = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]+)([^?#]*)(?:\?([^#]*))?$/;

/** Checks names before anything is built, so a typo fails the same way on both ends. */
function checkComponents(components: string[]): string | undefined {
  const seen = new Set<string>();
  for (const name of components) {
    if (seen.has(name)) return `duplicate component ${JSON.stringify(name)}`;
    seen.add(name);
    if (name.startsWith("@") ? !DERIVED.has(name) : !FIELD_NAME.test(name)) {
      return `unsupported component ${JSON.stringify(name)}`;
    }
  }
  return undefined;
}

function headerValue(headers: SignableRequest["headers"], name: string): string | undefined {
  const raw = headers[name];
  if (raw === undefined) return undefined;
  if (typeof raw === "string") return raw.trim();
  return raw.length === 0 ? undefined : raw.map((v) => v.trim()).join(", ");
}

function derivedValue(request: SignableRequest, name: string): Outcome<string> {
  if (name === "@method") return { ok: true, value: request.method };
  const uri = TARGET_URI.exec(request.targetUri);
  if (!uri) {
    return refuse(`target URI ${JSON.stringify(request.targetUri)} is not absolute or has a fragment`);
  }
  if (name === "@target-uri") return { ok: true, value: request.targetUri };
  const [, scheme = "", authority = "", path = "", query] = uri;
  const lowerScheme = scheme.toLowerCase();
  switch (name) {
    case "@scheme":
      return { ok: true, value: lowerScheme };
    case "@authority": {
      if (authority.includes("@")) return refuse("target URI must not carry user info");
      const port = /:([0-9]*)$/.exec(authority);
      const host = authority.toLowerCase();
      const drop = port && (port[1] === "" || port[1] === DEFAULT_PORTS[lowerScheme]);
      return { ok: true, value: drop ? host.slice(0, -port[0].length) : host };
    }
    case "@path":
      return { ok: true, value: path || "/" };
    case "@query":
      return { ok: true, value: `?${query ?? ""}` };
    default:
      return { ok: true, value: `${path || "/"}${query === undefined ? "" : `?${query}`}` };
  }
}

function buildBase(request: SignableRequest, components: string[], signatureParams: string): Outcome<string> {
  const lines: string[] = [];
  for (const name of components) {
    let value: string;
    if (name.startsWith("@")) {
      const derived = derivedValue(request, name);
      if (!derived.ok) return derived;
      value = derived.value;
    } else {
      const field = headerValue(request.headers, name);
      if (field === undefined) return refuse(`covered component "${name}" is absent from the request`);
      value = field;
    }
    // The base is US-ASCII, one component per line (§2.5): anything else could forge extra lines.
    if (!/^[\t\x20-\x7e]*$/.test(value)) {
      return refuse(`component "${name}" has characters outside printable ASCII`);
    }
    lines.push(`"${name}": ${value}`);
  }
  lines.push(`"@signature-params": ${signatureParams}`);
  return { ok: true, value: lines.join("\n") };
}

/** Builds the signature base (RFC 9421 §2.5) for the given covered components and serialized params. */
export function signatureBase(
  request: SignableRequest,
  components: string[],
  signatureParams: string,
): string {
  const problem = checkComponents(components);
  if (problem) throw new SparError("VALIDATION_FAILED", problem);
  const base = buildBase(request, components, signatureParams);
  if (!base.ok) throw new SparError("VALIDATION_FAILED", base.reason);
  return base.value;
}

// ---------------------------------------------------------------------------------------------------------
// Content-Digest (RFC 9530).

const DIGEST_ALGORITHMS = { "sha-256": "sha256", "sha-512": "sha512" } as const;

/** sha-256 Content-Digest header value for a body: `sha-256=:<base64>:` */
export function contentDigest(body: Uint8Array | string): string {
  return `sha-256=:${createHash("sha256").update(body).digest("base64")}:`;
}

/**
 * True when the Content-Digest header value has a sha-256 or sha-512 member matching the body. Every one of
 * those two that is present must match; unknown algorithms are ignored, and alone they give false.
 */
export function digestMatches(header: string, body: Uint8Array | string): boolean {
  const members = parseDictionary(header, "Content-Digest");
  if (!members.ok) return false;
  let checked = 0;
  for (const [name, algorithm] of Object.entries(DIGEST_ALGORITHMS)) {
    const member = members.value.get(name);
    if (member === undefined) continue;
    if (member.kind !== "item" || member.value.type !== "bytes") return false;
    if (!createHash(algorithm).update(body).digest().equals(member.value.value)) return false;
    checked++;
  }
  return checked > 0;
}

// ---------------------------------------------------------------------------------------------------------
// Signing and verifying.

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** Returns the headers to add: { "signature-input": ..., "signature": ... }. */
export function signRequest(
  request: SignableRequest,
  options: SignOptions,
): { "signature-input": string; signature: string } {
  const label = options.label ?? "sig1";
  if (!/^[a-z*][a-z0-9_\-.*]*$/.test(label)) throw new SparError("VALIDATION_FAILED", `bad label "${label}"`);
  if (options.privateKey.type !== "private" || options.privateKey.asymmetricKeyType !== "ed25519") {
    throw new SparError("VALIDATION_FAILED", "signRequest needs an Ed25519 private key");
  }
  const components =
    options.components ??
    ["@method", "@target-uri"].concat(
      headerValue(request.headers, "content-digest") === undefined ? [] : ["content-digest"],
    );
  const created = options.created ?? nowSeconds();
  if (!Number.isSafeInteger(created)) throw new SparError("VALIDATION_FAILED", "created must be an integer");
  const nonce = options.nonce === undefined ? randomBytes(16).toString("base64url") : options.nonce;
  const params: Params = [
    ["created", { type: "integer", value: created }],
    ["keyid", { type: "string", value: options.keyId }],
  ];
  if (nonce !== null) params.push(["nonce", { type: "string", value: nonce }]);
  if (options.alg !== null) params.push(["alg", { type: "string", value: options.alg ?? "ed25519" }]);
  const signatureParams = serializeSignatureParams(components, params);
  const base = signatureBase(request, components, signatureParams);
  const signature = sign(null, Buffer.from(base, "ascii"), options.privateKey).toString("base64");
  return { "signature-input": `${label}=${signatureParams}`, signature: `${label}=:${signature}:` };
}

/** Checks a request's signature. Never throws on what the request carries; the reason is one sentence. */
export function verifyRequest(request: SignableRequest, options: VerifyOptions): VerifyResult {
  const inputHeader = headerValue(request.headers, "signature-input");
  const signatureHeader = headerValue(request.headers, "signature");
  if (inputHeader === undefined) return refuse("missing Signature-Input header");
  if (signatureHeader === undefined) return refuse("missing Signature header");
  const inputs = parseDictionary(inputHeader, "Signature-Input");
  if (!inputs.ok) return inputs;
  const signatures = parseDictionary(signatureHeader, "Signature");
  if (!signatures.ok) return signatures;
  const label = [...inputs.value.keys()].find((key) => signatures.value.has(key));
  if (label === undefined) return refuse("no label appears in both Signature-Input and Signature");
  return verifyMember(
    request,
    options,
    label,
    inputs.value.get(label) as Member,
    signatures.value.get(label) as Member,
  );
}

/**
 * The `keyid` a request's signature names, checking nothing else: so a caller whose key lookup is
 * asynchronous can fetch the key before the (synchronous) verification. Undefined when there is none.
 */
export function signatureKeyId(headers: SignableRequest["headers"]): string | undefined {
  const inputHeader = headerValue(headers, "signature-input");
  const signatureHeader = headerValue(headers, "signature");
  if (inputHeader === undefined || signatureHeader === undefined) return undefined;
  const inputs = parseDictionary(inputHeader, "Signature-Input");
  const signatures = parseDictionary(signatureHeader, "Signature");
  if (!inputs.ok || !signatures.ok) return undefined;
  const label = [...inputs.value.keys()].find((key) => signatures.value.has(key));
  const input = label === undefined ? undefined : inputs.value.get(label);
  if (input?.kind !== "list") return undefined;
  const keyId = input.params.find(([key]) => key === "keyid")?.[1];
  return keyId?.type === "string" ? keyId.value : undefined;
}

function parseDictionary(text: string, header: string): Outcome<Map<string, Member>> {
  try {
    return { ok: true, value: new SfParser(text).dictionary() };
  } catch (err) {
    if (err instanceof SfError) return refuse(`malformed ${header}: ${err.message}`);
    throw err;
  }
}

function verifyMember(
  request: SignableRequest,
  options: VerifyOptions,
  label: string,
  input: Member,
  signatureMember: Member,
): VerifyResult {
  if (input.kind !== "list") return refuse(`malformed Signature-Input: "${label}" is not an inner list`);
  if (signatureMember.kind !== "item" || signatureMember.value.type !== "bytes") {
    return refuse(`malformed Signature: "${label}" is not a byte sequence`);
  }
  const components: string[] = [];
  for (const item of input.items) {
    if (item.value.type !== "string") return refuse("malformed Signature-Input: components must be strings");
    if (item.params.length > 0) return refuse("component parameters are not supported");
    components.push(item.value.value);
  }
  const problem = checkComponents(components);
  if (problem) return refuse(problem);

  const params = checkParams(input.params, options);
  if (!params.ok) return params;
  const { keyId, created, nonce } = params.value;

  const required = [...(options.requiredComponents ?? ["@method", "@target-uri"])];
  if (options.hasBody || headerValue(request.headers, "content-digest") !== undefined)
    required.push("content-digest");
  const missing = required.find((name) => !components.includes(name));
  if (missing !== undefined) return refuse(`required component "${missing}" is not covered`);

  const key = options.keys(keyId);
  if (key === undefined) return refuse(`unknown key id ${JSON.stringify(keyId)}`);
  if (key.asymmetricKeyType !== "ed25519") return refuse(`key ${JSON.stringify(keyId)} is not Ed25519`);
  const signature = signatureMember.value.value;
  if (signature.length !== 64) return refuse(`signature is ${signature.length} bytes, not 64`);

  const base = buildBase(request, components, serializeSignatureParams(components, input.params));
  if (!base.ok) return base;
  if (!verify(null, Buffer.from(base.value, "ascii"), key, signature)) {
    return refuse("signature does not match");
  }
  return { ok: true, keyId, nonce, created, label, components };
}

/** Longest nonce accepted; the CLI sends 22 characters (16 random bytes, base64url). */
export const MAX_NONCE_LENGTH = 128;
const MAX_KEY_ID_LENGTH = 128;

function checkParams(
  params: Params,
  options: VerifyOptions,
): Outcome<{ keyId: string; created: number; nonce: string }> {
  const get = (name: string) => params.find(([key]) => key === name)?.[1];
  const created = get("created");
  const keyId = get("keyid");
  const nonce = get("nonce");
  const alg = get("alg");
  const expires = get("expires");
  if (created === undefined) return refuse("missing created parameter");
  if (created.type !== "integer") return refuse("created parameter is not an integer");
  if (keyId === undefined) return refuse("missing keyid parameter");
  if (keyId.type !== "string") return refuse("keyid parameter is not a string");
  if (nonce !== undefined && nonce.type !== "string") return refuse("nonce parameter is not a string");
  if ((options.requireNonce ?? true) && (nonce === undefined || nonce.value === "")) {
    return refuse("missing or empty nonce parameter");
  }
  // Nonces are remembered until they expire: a cap keeps a signer from filling the disk with them.
  if (nonce?.type === "string" && nonce.value.length > MAX_NONCE_LENGTH) {
    return refuse(`nonce is longer than ${MAX_NONCE_LENGTH} characters`);
  }
  if (keyId.value.length > MAX_KEY_ID_LENGTH)
    return refuse(`keyid is longer than ${MAX_KEY_ID_LENGTH} characters`);
  if (alg !== undefined && (alg.type !== "string" || alg.value !== "ed25519")) {
    return refuse(`unsupported alg ${serializeBareItem(alg)} (only "ed25519")`);
  }
  const now = options.now ?? nowSeconds();
  if (expires !== undefined) {
    if (expires.type !== "integer") return refuse("expires parameter is not an integer");
    if (now > expires.value) return refuse(`signature expired ${now - expires.value} s ago`);
  }
  const limit = options.maxAgeSeconds ?? 300;
  const age = now - created.value;
  if (age > limit) return refuse(`signature is ${age} s old (limit ${limit} s)`);
  if (-age > limit) return refuse(`signature is created ${-age} s in the future (limit ${limit} s)`);
  return {
    ok: true,
    value: { keyId: keyId.value, created: created.value, nonce: nonce?.type === "string" ? nonce.value : "" },
  };
}
