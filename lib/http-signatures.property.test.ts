import { generateKeyPairSync, type KeyObject } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  contentDigest,
  digestMatches,
  type SignableRequest,
  signRequest,
  verifyRequest,
} from "./http-signatures.js";

const RUNS = 200;
const signer = generateKeyPairSync("ed25519");
const stranger = generateKeyPairSync("ed25519");
const KEYS: Record<string, KeyObject> = { cli: signer.publicKey, other: stranger.publicKey };

interface Sample {
  method: string;
  scheme: string;
  host: string;
  path: string;
  query: string | undefined;
  body: string | undefined;
  extra: Record<string, string>;
  derived: string[];
  created: number;
  nonce: string;
}

/** A correctly signed request, with what went into its signature so a mutation can rebuild the header. */
interface Signed {
  request: SignableRequest;
  body: string | undefined;
  components: string[];
  created: number;
  keyId: string;
  nonce: string;
}

/** What the Arena would be handed: the request, the body it read, and whether it saw one. */
interface Attempt {
  request: SignableRequest;
  body: string | undefined;
}

const sampleArb: fc.Arbitrary<Sample> = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
  scheme: fc.constantFrom("http", "https"),
  host: fc.constantFrom("127.0.0.1:6660", "localhost:6660", "[::1]:6660", "example.com", "Example.com:443"),
  path: fc
    .array(fc.stringMatching(/^[A-Za-z0-9._~%-]{1,8}$/), { maxLength: 4 })
    .map((s) => `/${s.join("/")}`),
  query: fc.option(fc.stringMatching(/^[A-Za-z0-9=&_-]{0,16}$/), { nil: undefined }),
  body: fc.option(fc.string({ unit: "binary", maxLength: 64 }), { nil: undefined }),
  extra: fc.dictionary(fc.stringMatching(/^x-[a-z]{1,6}$/), fc.stringMatching(/^[!-~]([ -~]{0,14}[!-~])?$/), {
    maxKeys: 3,
  }),
  derived: fc.subarray(["@authority", "@scheme", "@path", "@query", "@request-target"]),
  created: fc.integer({ min: 1_600_000_000, max: 2_000_000_000 }),
  nonce: fc.stringMatching(/^[A-Za-z0-9_-]{8,22}$/),
});

function sign(sample: Sample): Signed {
  const headers: Record<string, string> = { host: sample.host, ...sample.extra };
  if (sample.body !== undefined) headers["content-digest"] = contentDigest(sample.body);
  const components = ["@method", "@target-uri"]
    .concat(sample.body === undefined ? [] : ["content-digest"])
    .concat(sample.derived, Object.keys(sample.extra));
  const query = sample.query === undefined ? "" : `?${sample.query}`;
  const request = {
    method: sample.method,
    targetUri: `${sample.scheme}://${sample.host}${sample.path}${query}`,
    headers,
  };
  const { created, nonce } = sample;
  const added = signRequest(request, {
    keyId: "cli",
    privateKey: signer.privateKey,
    components,
    created,
    nonce,
  });
  const result = { request, body: sample.body, components, created, keyId: "cli", nonce };
  // The mutations rewrite Signature-Input by hand: check the hand-made one is what signRequest wrote.
  expect(signatureInput(result)).toBe(added["signature-input"]);
  return { ...result, request: { ...request, headers: { ...headers, ...added } } };
}

function signatureInput(s: Omit<Signed, "request">): string {
  const list = s.components.map((c) => `"${c}"`).join(" ");
  return `sig1=(${list});created=${s.created};keyid="${s.keyId}";nonce="${s.nonce}";alg="ed25519"`;
}

function withHeaders(s: Signed, headers: SignableRequest["headers"], body = s.body): Attempt {
  return { request: { ...s.request, headers: { ...s.request.headers, ...headers } }, body };
}

const reinput = (s: Signed, edit: Partial<Omit<Signed, "request">>): Attempt =>
  withHeaders(s, { "signature-input": signatureInput({ ...s, ...edit }) });

/** The next printable ASCII character: always a different one, so every mutation changes something. */
const bump = (c: string): string => String.fromCharCode(c === "~" ? 0x21 : (c.codePointAt(0) ?? 0x20) + 1);
const replaceAt = (text: string, index: number): string =>
  text.slice(0, index) + bump(text[index] ?? " ") + text.slice(index + 1);

/** The Arena's whole check: the signature, then the body against its (signed) Content-Digest. */
function accepted(s: Signed, attempt: Attempt): boolean {
  const hasBody = attempt.body !== undefined;
  const result = verifyRequest(attempt.request, {
    keys: (id) => KEYS[id],
    now: s.created,
    hasBody,
  });
  if (!result.ok || !hasBody) return result.ok;
  const digest = attempt.request.headers["content-digest"];
  return typeof digest === "string" && digestMatches(digest, attempt.body ?? "");
}

type Mutation = (s: Signed) => fc.Arbitrary<Attempt>;

const MUTATIONS: Record<string, Mutation> = {
  "the method": (s) =>
    fc
      .constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "get", "HEAD")
      .filter((m) => m !== s.request.method)
      .map((method) => ({ request: { ...s.request, method }, body: s.body })),
  "a character of the host, path or query": (s) => {
    const start = s.request.targetUri.indexOf("://") + 3;
    return fc.integer({ min: start, max: s.request.targetUri.length - 1 }).map((i) => ({
      request: { ...s.request, targetUri: replaceAt(s.request.targetUri, i) },
      body: s.body,
    }));
  },
  "the body (or a body added to a bodiless request)": (s) =>
    fc.string({ unit: "binary", maxLength: 64 }).map((extra) => ({
      request: s.request,
      body: s.body === undefined ? extra : `${s.body}${extra || "x"}`,
    })),
  "the content-digest header": (s) =>
    fc.string({ maxLength: 16 }).map((other) => {
      const body = s.body === undefined ? other : `${s.body}${other || "x"}`;
      return withHeaders(s, { "content-digest": contentDigest(body) });
    }),
  "created, by 301 to 10000 s": (s) =>
    fc
      .tuple(fc.integer({ min: 301, max: 10_000 }), fc.boolean())
      .map(([delta, ahead]) => reinput(s, { created: s.created + (ahead ? delta : -delta) })),
  "the keyid": (s) => fc.constantFrom("other", "nobody", "CLI", "cli ").map((keyId) => reinput(s, { keyId })),
  "the nonce in Signature-Input": (s) =>
    fc.nat({ max: s.nonce.length - 1 }).map((i) => reinput(s, { nonce: replaceAt(s.nonce, i) })),
  "a byte of the signature": (s) =>
    fc.tuple(fc.nat({ max: 63 }), fc.integer({ min: 1, max: 255 })).map(([i, xor]) => {
      const signature = Buffer.from(
        /:(.*):/.exec(s.request.headers.signature as string)?.[1] ?? "",
        "base64",
      );
      signature[i] = (signature[i] ?? 0) ^ xor;
      return withHeaders(s, { signature: `sig1=:${signature.toString("base64")}:` });
    }),
  "a component dropped from the covered list": (s) =>
    fc
      .nat({ max: s.components.length - 1 })
      .map((i) => reinput(s, { components: s.components.filter((_, j) => j !== i) })),
  "two components swapped": (s) =>
    fc
      .tuple(fc.nat({ max: s.components.length - 1 }), fc.nat({ max: s.components.length - 1 }))
      .filter(([i, j]) => i !== j)
      .map(([i, j]) => {
        const components = [...s.components];
        [components[i], components[j]] = [components[j] as string, components[i] as string];
        return reinput(s, { components });
      }),
  "Signature-Input taken from another signed request": (s) =>
    sampleArb
      .map(sign)
      .filter((o) => o.request.headers["signature-input"] !== s.request.headers["signature-input"])
      .map((o) => withHeaders(s, { "signature-input": o.request.headers["signature-input"] })),
};

describe("http-signatures properties", () => {
  it("a correctly signed request always verifies, and its body matches its digest", () => {
    fc.assert(
      fc.property(sampleArb, (sample) => {
        const s = sign(sample);
        expect(accepted(s, { request: s.request, body: s.body })).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  for (const [name, mutate] of Object.entries(MUTATIONS)) {
    it(`changing ${name} gets the request refused`, () => {
      const signedThenMutated = sampleArb
        .map(sign)
        .chain((s) => mutate(s).map((attempt) => ({ s, attempt })));
      fc.assert(
        fc.property(signedThenMutated, ({ s, attempt }) => {
          expect(accepted(s, attempt)).toBe(false);
        }),
        { numRuns: RUNS },
      );
    });
  }
});
