/**
 * The strength rule for master secrets. A secret is judged by the key material it carries: hex and
 * base64 text by the bytes they decode to, anything else by its bytes as read. It works on bytes,
 * never on a JS string of the secret (a string cannot be zeroized), and reports only lengths.
 */

/** The least key material a master secret must carry: as much as the 256-bit key derived from it. */
export const MIN_SECRET_BYTES = 32;

/** How much key material a secret carries (lengths only: safe to print). */
export interface SecretStrength {
  /** `hex` and `base64` (or base64url) text count by the bytes they decode to; `raw` as read. */
  encoding: "hex" | "base64" | "raw";
  bytes: number;
  /** The secret, or what it decodes to, is one byte repeated (`aaaa…`, `0000…`). */
  repeated: boolean;
}

/**
 * Counts a secret's key material. Text is read without surrounding whitespace (a key file written by
 * `openssl rand -hex 32 >` ends in a newline); hex wins where base64 would fit too. Only counted:
 * the bytes the key is derived from stay exactly as they were read.
 *
 * @example
 * secretStrength(Buffer.from("a".repeat(64))); // { encoding: "hex", bytes: 32, repeated: true }
 */
export function secretStrength(secret: Buffer): SecretStrength {
  const text = trimmed(secret);
  const decoded = decodeHex(text) ?? decodeBase64(text);
  if (!decoded) return { encoding: "raw", bytes: secret.length, repeated: oneByteRepeated(secret) };
  const strength: SecretStrength = {
    encoding: decoded.encoding,
    bytes: decoded.bytes.length,
    repeated: oneByteRepeated(decoded.bytes) || oneByteRepeated(text),
  };
  decoded.bytes.fill(0);
  return strength;
}

/**
 * Why a secret is too weak to protect a new database, giving lengths only; undefined when it is
 * strong enough.
 *
 * @example
 * secretWeakness(secretStrength(Buffer.from("a"))); // "carries 1 byte, fewer than the 32 it needs (…)"
 */
export function secretWeakness(strength: SecretStrength): string | undefined {
  const counted = strength.encoding === "raw" ? "" : ` (${strength.encoding}-decoded)`;
  if (strength.bytes < MIN_SECRET_BYTES) {
    const unit = strength.bytes === 1 ? "byte" : "bytes";
    return (
      `carries ${strength.bytes} ${unit}${counted}, fewer than the ${MIN_SECRET_BYTES} it needs ` +
      `(${MIN_SECRET_BYTES} random bytes, or 64 hex or 44 base64 characters)`
    );
  }
  if (strength.repeated) return `is one byte repeated${counted}, the first thing a guesser tries`;
  return undefined;
}

const WHITESPACE = new Set([0x09, 0x0a, 0x0d, 0x20]);

/** A view (no copy) of `bytes` without surrounding ASCII whitespace. */
function trimmed(bytes: Buffer): Buffer {
  let start = 0;
  let end = bytes.length;
  while (start < end && WHITESPACE.has(bytes[start] ?? 0)) start++;
  while (end > start && WHITESPACE.has(bytes[end - 1] ?? 0)) end--;
  return bytes.subarray(start, end);
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

function decodeHex(text: Buffer): { encoding: "hex"; bytes: Buffer } | undefined {
  if (text.length === 0 || text.length % 2 !== 0 || !text.every((c) => hexValue(c) >= 0)) return undefined;
  const bytes = Buffer.alloc(text.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = (hexValue(text[2 * i] ?? 0) << 4) | hexValue(text[2 * i + 1] ?? 0);
  }
  return { encoding: "hex", bytes };
}

/** Base64 and base64url share this table: the two alphabets differ only in `+/` against `-_`. */
const BASE64 = new Int8Array(256).fill(-1);
for (const [i, c] of [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"].entries()) {
  BASE64[c.charCodeAt(0)] = i;
}
BASE64[0x2b] = BASE64[0x2d] = 62; // + -
BASE64[0x2f] = BASE64[0x5f] = 63; // / _

function decodeBase64(text: Buffer): { encoding: "base64"; bytes: Buffer } | undefined {
  let end = text.length;
  while (end > 0 && text[end - 1] === 0x3d) end--; // "=" padding
  if (end === 0 || text.length - end > 2 || end % 4 === 1) return undefined;
  const body = text.subarray(0, end);
  if (!body.every((c) => (BASE64[c] ?? -1) >= 0)) return undefined;
  const bytes = Buffer.alloc(Math.floor((end * 6) / 8));
  let bits = 0;
  let acc = 0;
  let at = 0;
  for (const c of body) {
    acc = ((acc << 6) | (BASE64[c] ?? 0)) & 0xfff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes[at++] = (acc >> bits) & 0xff;
    }
  }
  return { encoding: "base64", bytes };
}

function oneByteRepeated(bytes: Buffer): boolean {
  return bytes.length > 0 && bytes.every((b) => b === bytes[0]);
}
