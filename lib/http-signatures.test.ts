import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  contentDigest,
  digestMatches,
  type SignableRequest,
  type SignOptions,
  signatureBase,
  signRequest,
  type VerifyOptions,
  verifyRequest,
} from "./http-signatures.js";

// RFC 9421 Appendix B.1.4 (test-key-ed25519) and the test request of Appendix B.2.
const RFC_JWK = {
  kty: "OKP",
  crv: "Ed25519",
  x: "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs",
  d: "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU",
};
const RFC_PRIVATE = createPrivateKey({ key: RFC_JWK, format: "jwk" });
const RFC_PUBLIC = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: RFC_JWK.x }, format: "jwk" });
const RFC_BODY = '{"hello": "world"}';
const RFC_REQUEST: SignableRequest = {
  method: "POST",
  targetUri: "https://example.com/foo?param=Value&Pet=dog",
  headers: {
    host: "example.com",
    date: "Tue, 20 Apr 2021 02:07:55 GMT",
    "content-type": "application/json",
    "content-digest":
      "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:",
    "content-length": "18",
  },
};
const B26_COMPONENTS = ["date", "@method", "@path", "@authority", "content-type", "content-length"];
const B26_PARAMS =
  '("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"';

describe("RFC 9421 Appendix B.2.6 (Ed25519), byte for byte", () => {
  const options: SignOptions = {
    keyId: "test-key-ed25519",
    privateKey: RFC_PRIVATE,
    label: "sig-b26",
    components: B26_COMPONENTS,
    created: 1618884473,
    nonce: null,
    alg: null,
  };

  it("builds the RFC's signature base", () => {
    expect(signatureBase(RFC_REQUEST, B26_COMPONENTS, B26_PARAMS)).toBe(
      [
        '"date": Tue, 20 Apr 2021 02:07:55 GMT',
        '"@method": POST',
        '"@path": /foo',
        '"@authority": example.com',
        '"content-type": application/json',
        '"content-length": 18',
        `"@signature-params": ${B26_PARAMS}`,
      ].join("\n"),
    );
  });

  it("produces the RFC's Signature-Input and Signature", () => {
    expect(signRequest(RFC_REQUEST, options)).toEqual({
      "signature-input": `sig-b26=${B26_PARAMS}`,
      signature:
        "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:",
    });
  });

  it("verifies the RFC's signature with the RFC's public key", () => {
    const headers = {
      ...RFC_REQUEST.headers,
      "signature-input": `sig-b26=${B26_PARAMS}`,
      signature:
        "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:",
    };
    const options: VerifyOptions = {
      keys: (id) => (id === "test-key-ed25519" ? RFC_PUBLIC : undefined),
      now: 1618884473 + 10,
      requiredComponents: [],
      requireNonce: false,
    };
    // The RFC covers content-length but not content-digest, so the digest rule refuses it as sent...
    expect(verifyRequest({ ...RFC_REQUEST, headers }, options)).toEqual({
      ok: false,
      reason: 'required component "content-digest" is not covered',
    });
    // ...and without that header the RFC's signature verifies as published.
    const withoutDigest = { ...headers, "content-digest": undefined };
    expect(verifyRequest({ ...RFC_REQUEST, headers: withoutDigest }, options)).toEqual({
      ok: true,
      keyId: "test-key-ed25519",
      nonce: "",
      created: 1618884473,
      label: "sig-b26",
      components: B26_COMPONENTS,
    });
  });
});

describe("Content-Digest (RFC 9530)", () => {
  const sha = (algorithm: string, body: string) => createHash(algorithm).update(body).digest("base64");

  it("matches the RFC values, recomputed here rather than trusted", () => {
    expect(sha("sha256", `${RFC_BODY}\n`)).toBe("RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=");
    expect(contentDigest(`${RFC_BODY}\n`)).toBe("sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:");
    expect(sha("sha512", RFC_BODY)).toBe(
      "WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==",
    );
    expect(Buffer.byteLength(RFC_BODY)).toBe(18);
  });

  it("checks sha-256, or sha-512 alone, and every known member present", () => {
    const digest512 = RFC_REQUEST.headers["content-digest"] as string;
    expect(digestMatches(contentDigest(RFC_BODY), RFC_BODY)).toBe(true);
    expect(digestMatches(contentDigest(RFC_BODY), Buffer.from(RFC_BODY))).toBe(true);
    expect(digestMatches(digest512, RFC_BODY)).toBe(true);
    expect(digestMatches(`${contentDigest(RFC_BODY)}, ${digest512}`, RFC_BODY)).toBe(true);
    expect(digestMatches(contentDigest(RFC_BODY), `${RFC_BODY} `)).toBe(false);
    expect(digestMatches(digest512, `${RFC_BODY} `)).toBe(false);
    // A lying sha-512 beside a right sha-256 is refused: the sender's header is wrong either way.
    expect(digestMatches(`${contentDigest(RFC_BODY)}, sha-512=:AAAA:`, RFC_BODY)).toBe(false);
  });

  it("gives false for unknown algorithms alone, wrong types and malformed headers", () => {
    expect(digestMatches("md5=:AAAA:", RFC_BODY)).toBe(false);
    expect(digestMatches("sha-256=abc", RFC_BODY)).toBe(false);
    expect(digestMatches("sha-256=:abc", RFC_BODY)).toBe(false);
    expect(digestMatches("", RFC_BODY)).toBe(false);
    expect(digestMatches(`${contentDigest(RFC_BODY)},`, RFC_BODY)).toBe(false);
  });
});

describe("derived and header components", () => {
  const line = (request: Partial<SignableRequest>, component: string) =>
    signatureBase({ method: "GET", targetUri: "", headers: {}, ...request }, [component], "()").split(
      "\n",
    )[0];

  it("derives the RFC 9421 §2.2 values", () => {
    const targetUri = "HTTPS://Example.COM:443/a%20b/c?x=1&y=";
    expect(line({ targetUri }, "@target-uri")).toBe(`"@target-uri": ${targetUri}`);
    expect(line({ targetUri }, "@authority")).toBe('"@authority": example.com');
    expect(line({ targetUri }, "@scheme")).toBe('"@scheme": https');
    expect(line({ targetUri }, "@path")).toBe('"@path": /a%20b/c');
    expect(line({ targetUri }, "@query")).toBe('"@query": ?x=1&y=');
    expect(line({ targetUri }, "@request-target")).toBe('"@request-target": /a%20b/c?x=1&y=');
    expect(line({ method: "post" }, "@method")).toBe('"@method": post');
  });

  it("keeps non-default ports, and gives / and ? for an empty path and query", () => {
    const targetUri = "http://127.0.0.1:6660";
    expect(line({ targetUri }, "@authority")).toBe('"@authority": 127.0.0.1:6660');
    expect(line({ targetUri: "http://[::1]:80" }, "@authority")).toBe('"@authority": [::1]');
    expect(line({ targetUri }, "@path")).toBe('"@path": /');
    expect(line({ targetUri }, "@query")).toBe('"@query": ?');
    expect(line({ targetUri }, "@request-target")).toBe('"@request-target": /');
  });

  it("trims header values and joins repeated ones with a comma and a space", () => {
    expect(line({ headers: { "x-a": ["  one ", "two  "] } }, "x-a")).toBe('"x-a": one, two');
    expect(line({ headers: { "x-a": "  spaced  value " } }, "x-a")).toBe('"x-a": spaced  value');
    expect(line({ headers: { "x-a": "" } }, "x-a")).toBe('"x-a": ');
  });

  it("refuses absent, duplicate, unknown and non-ASCII components", () => {
    expect(() => line({}, "x-missing")).toThrow(/"x-missing" is absent/);
    expect(() => line({ headers: { "x-a": [] } }, "x-a")).toThrow(/absent/);
    expect(() =>
      signatureBase({ method: "GET", targetUri: "", headers: {} }, ["@method", "@method"], ""),
    ).toThrow(/duplicate component "@method"/);
    expect(() => line({}, "@status")).toThrow(/unsupported component "@status"/);
    expect(() => line({}, "Content-Type")).toThrow(/unsupported component/);
    expect(() => line({ headers: { "x-a": "a\nb" } }, "x-a")).toThrow(/outside printable ASCII/);
    expect(() => line({ headers: { "x-a": "café" } }, "x-a")).toThrow(/outside printable ASCII/);
    expect(() => line({ targetUri: "/relative" }, "@path")).toThrow(/not absolute/);
    expect(() => line({ targetUri: "http://h/p#frag" }, "@target-uri")).toThrow(/fragment/);
    expect(() => line({ targetUri: "http://user@h/p" }, "@authority")).toThrow(/user info/);
  });
});

const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const other = generateKeyPairSync("ed25519");
const NOW = 1_750_000_000;
const KEYS: Record<string, KeyObject> = { cli: publicKey, other: other.publicKey };
const verifyOptions = (extra: Partial<VerifyOptions> = {}): VerifyOptions => ({
  keys: (id) => KEYS[id],
  now: NOW,
  ...extra,
});
const BODY = JSON.stringify({ message: "hi", n: 1 });

function signed(
  request: SignableRequest = {
    method: "POST",
    targetUri: "http://127.0.0.1:6660/api/v1/fighters?x=1",
    headers: {
      host: "127.0.0.1:6660",
      "content-type": "application/json",
      "content-digest": contentDigest(BODY),
    },
  },
  options: Partial<SignOptions> = {},
): SignableRequest {
  const added = signRequest(request, { keyId: "cli", privateKey, created: NOW, ...options });
  return { ...request, headers: { ...request.headers, ...added } };
}

/** The signed request with its Signature-Input text rewritten: the checks before the crypto are under test. */
function withInput(edit: (input: string) => string, request = signed()): SignableRequest {
  const input = request.headers["signature-input"] as string;
  return { ...request, headers: { ...request.headers, "signature-input": edit(input) } };
}

describe("round trips", () => {
  it("signs and verifies a GET without a body", () => {
    const request = signed({ method: "GET", targetUri: "http://127.0.0.1:6660/api/v1/health", headers: {} });
    expect(request.headers["signature-input"]).toMatch(
      /^sig1=\("@method" "@target-uri"\);created=1750000000;keyid="cli";nonce="[A-Za-z0-9_-]{22}";alg="ed25519"$/,
    );
    const result = verifyRequest(request, verifyOptions());
    expect(result).toMatchObject({ ok: true, keyId: "cli", created: NOW, label: "sig1" });
    expect(result.ok && result.components).toEqual(["@method", "@target-uri"]);
    expect(result.ok && result.nonce).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it("signs and verifies a POST with its body bound by Content-Digest", () => {
    const request = signed();
    const result = verifyRequest(request, verifyOptions({ hasBody: true }));
    expect(result).toMatchObject({ ok: true, components: ["@method", "@target-uri", "content-digest"] });
    expect(digestMatches(request.headers["content-digest"] as string, BODY)).toBe(true);
    expect(digestMatches(request.headers["content-digest"] as string, `${BODY} `)).toBe(false);
  });

  it("uses fresh nonces, accepts arrays for repeated headers and picks the first label present in both", () => {
    const a = signed();
    expect(a.headers["signature-input"]).not.toBe(signed().headers["signature-input"]);
    const b = signed(undefined, { label: "second" });
    const input = (first: string) => [first, a.headers["signature-input"] as string];
    const signature = [a.headers.signature as string, b.headers.signature as string];
    const request = (first: string) => ({
      ...a,
      headers: { ...a.headers, "signature-input": input(first), signature },
    });
    // "second" comes first in Signature-Input, so it is the one verified...
    const second = request(b.headers["signature-input"] as string);
    expect(verifyRequest(second, verifyOptions())).toMatchObject({ ok: true, label: "second" });
    // ...unless Signature lacks it: then the next label present in both is.
    const third = request((b.headers["signature-input"] as string).replace(/^second=/, "third="));
    expect(verifyRequest(third, verifyOptions())).toMatchObject({ ok: true, label: "sig1" });
  });

  it("covers extra components in the order given", () => {
    const request = signed(undefined, {
      components: ["content-type", "@authority", "@method", "@target-uri"],
    });
    const result = verifyRequest(
      { ...request, headers: { ...request.headers, "content-digest": undefined } },
      verifyOptions(),
    );
    expect(result).toMatchObject({
      ok: true,
      components: ["content-type", "@authority", "@method", "@target-uri"],
    });
  });
});

describe("refusals", () => {
  const refused = (request: SignableRequest, reason: RegExp, options: Partial<VerifyOptions> = {}) => {
    const result = verifyRequest(request, verifyOptions(options));
    expect(result.ok).toBe(false);
    expect(result.ok ? "" : result.reason).toMatch(reason);
  };
  const without = (name: string, request = signed()) => ({
    ...request,
    headers: { ...request.headers, [name]: undefined },
  });

  it("refuses a missing Signature-Input or Signature header", () => {
    refused(without("signature-input"), /^missing Signature-Input header$/);
    refused(without("signature"), /^missing Signature header$/);
  });

  it("refuses malformed structured fields without throwing", () => {
    for (const bad of [
      "sig1=(",
      'sig1=("@method" "@target-uri"',
      'sig1=("@method""@target-uri");created=1',
      'sig1=("@method");created=1.5',
      'sig1=("@method");created=1,',
      'sig1=("@method");keyid="unterminated',
      'sig1=("@method");keyid="bad\\escape"',
      'sig1=("@method");created=1;created=2',
      'sig1=("@method"), sig1=("@method")',
      'Sig1=("@method")',
      'sig1=("@method");created=1234567890123456',
      "sig1=?2",
      'sig1=("caf\u00e9")',
    ]) {
      refused(
        withInput(() => bad),
        /^malformed Signature-Input: /,
      );
    }
    refused(
      { ...signed(), headers: { ...signed().headers, signature: "sig1=:abc" } },
      /^malformed Signature: /,
    );
    refused(
      { ...signed(), headers: { ...signed().headers, signature: "sig1=abc" } },
      /^malformed Signature: /,
    );
    refused(
      withInput(() => "sig1=token"),
      /^malformed Signature-Input: "sig1" is not an inner list$/,
    );
    refused(
      withInput((s) => s.replace('"@method"', "@method")),
      /^malformed Signature-Input: /,
    );
  });

  it("refuses when no label is in both headers", () => {
    refused(
      withInput((s) => s.replace(/^sig1=/, "sig2=")),
      /^no label appears in both/,
    );
  });

  it("refuses an unknown key id", () => {
    refused(signed(undefined, { keyId: "x" }), /^unknown key id "x"$/);
  });

  it("refuses a missing created, keyid or nonce parameter", () => {
    refused(
      withInput((s) => s.replace(/;created=\d+/, "")),
      /^missing created parameter$/,
    );
    refused(
      withInput((s) => s.replace(/;keyid="[^"]*"/, "")),
      /^missing keyid parameter$/,
    );
    refused(signed(undefined, { nonce: null }), /^missing or empty nonce parameter$/);
    refused(signed(undefined, { nonce: "" }), /^missing or empty nonce parameter$/);
    refused(
      withInput((s) => s.replace(/;created=\d+/, ';created="1"')),
      /^created parameter is not an integer$/,
    );
    refused(
      withInput((s) => s.replace(/;keyid="cli"/, ";keyid=cli")),
      /^keyid parameter is not a string$/,
    );
  });

  it("refuses an alg other than ed25519", () => {
    refused(
      withInput((s) => s.replace('alg="ed25519"', 'alg="rsa-pss-sha512"')),
      /^unsupported alg "rsa-pss-sha512"/,
    );
    refused(
      withInput((s) => s.replace('alg="ed25519"', "alg=ed25519")),
      /^unsupported alg ed25519/,
    );
  });

  it("refuses an expired signature", () => {
    refused(
      withInput((s) => `${s};expires=${NOW - 5}`),
      /^signature expired 5 s ago$/,
    );
    // One still ahead passes the time checks; added after signing, it then fails the crypto like any edit.
    refused(
      withInput((s) => `${s};expires=${NOW + 5}`),
      /^signature does not match$/,
    );
  });

  it("refuses a signature created too long ago or too far ahead", () => {
    refused(signed(undefined, { created: NOW - 412 }), /^signature is 412 s old \(limit 300 s\)$/);
    refused(
      signed(undefined, { created: NOW + 301 }),
      /^signature is created 301 s in the future \(limit 300 s\)$/,
    );
    refused(signed(undefined, { created: NOW - 50 }), /^signature is 50 s old \(limit 30 s\)$/, {
      maxAgeSeconds: 30,
    });
    expect(verifyRequest(signed(undefined, { created: NOW - 300 }), verifyOptions())).toMatchObject({
      ok: true,
    });
  });

  it("refuses a required component that is not covered", () => {
    refused(
      signed(undefined, { components: ["@method", "@target-uri"] }),
      /^required component "content-digest"/,
    );
    const get = signed({ method: "GET", targetUri: "http://h/x", headers: {} }, { components: ["@method"] });
    refused(get, /^required component "@target-uri" is not covered$/);
    const bodyless = signed({ method: "POST", targetUri: "http://h/x", headers: {} });
    refused(bodyless, /^required component "content-digest" is not covered$/, { hasBody: true });
    refused(signed(), /^required component "date" is not covered$/, { requiredComponents: ["date"] });
  });

  it("refuses duplicate, parameterized or unsupported components", () => {
    refused(
      withInput((s) => s.replace('("@method"', '("@method" "@method"')),
      /^duplicate component "@method"$/,
    );
    refused(
      withInput((s) => s.replace('"@method"', '"@method";req')),
      /^component parameters are not supported$/,
    );
    refused(
      withInput((s) => s.replace('"@method"', '"@method" "@status"')),
      /^unsupported component "@status"$/,
    );
  });

  it("refuses a covered component the request lacks", () => {
    const request = signed(undefined, {
      components: ["@method", "@target-uri", "content-digest", "content-type"],
    });
    refused(
      without("content-type", request),
      /^covered component "content-type" is absent from the request$/,
    );
  });

  it("refuses a signature that is not 64 bytes or does not verify", () => {
    const request = signed();
    const signature = request.headers.signature as string;
    const short = signature.replace(
      /:(.*):/,
      (_m, b64: string) => `:${Buffer.from(b64, "base64").subarray(1).toString("base64")}:`,
    );
    refused(
      { ...request, headers: { ...request.headers, signature: short } },
      /^signature is 63 bytes, not 64$/,
    );
    refused({ ...request, method: "PUT" }, /^signature does not match$/);
    refused(signed(undefined, { keyId: "other" }), /^signature does not match$/);
  });

  it("refuses a key that is not Ed25519", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey;
    refused(signed(), /^key "cli" is not Ed25519$/, { keys: () => rsa });
  });
});

describe("signRequest misuse", () => {
  const request: SignableRequest = { method: "GET", targetUri: "http://h/x", headers: {} };
  it("throws on a bad label, a non-Ed25519 or public key, a bad key id and absent components", () => {
    expect(() => signRequest(request, { keyId: "k", privateKey, label: "Sig" })).toThrow(/bad label/);
    expect(() => signRequest(request, { keyId: "k", privateKey: publicKey })).toThrow(/Ed25519 private key/);
    expect(() => signRequest(request, { keyId: "k\u00e9", privateKey })).toThrow(/printable ASCII/);
    expect(() => signRequest(request, { keyId: "k", privateKey, components: ["date"] })).toThrow(/absent/);
    expect(() => signRequest(request, { keyId: "k", privateKey, created: 1.5 })).toThrow(/integer/);
  });

  it("escapes quotes and backslashes in string parameters", () => {
    const out = signRequest(request, { keyId: 'a"b\\c', privateKey, created: 1, nonce: "n", alg: null });
    expect(out["signature-input"]).toBe(
      'sig1=("@method" "@target-uri");created=1;keyid="a\\"b\\\\c";nonce="n"',
    );
    const keys = (id: string) => (id === 'a"b\\c' ? publicKey : undefined);
    const verified = verifyRequest({ ...request, headers: out }, { keys, now: 1 });
    expect(verified).toMatchObject({ ok: true, keyId: 'a"b\\c', nonce: "n" });
  });
});
