/**
 * The encoded-payload rule: base64 (plain or URL-safe, on one line or wrapped), hex (a run, \x
 * escapes, 0x arrays), %-escapes, \u and octal escapes, char-code lists and PowerShell
 * `-EncodedCommand` are decoded (gzip and zlib inflated) and the result scanned again with every
 * pattern rule, up to three layers deep. A blob that decodes to a command or to another rule's
 * content is high; readable hidden text is medium; an opaque high-entropy blob is medium; a digest
 * (hex of a hash length) or recognisable binary (a public key, an image) is not reported.
 */
import { gunzipSync, inflateSync } from "node:zlib";
import { scanPatterns } from "./scan-patterns.js";
import { type Hit, SEVERITY_RANK, showInvisible } from "./scan-text.js";

const MAX_DEPTH = 3;
const MAX_INFLATE = 1024 * 1024;
/** Decoded text beyond this is not scanned again (its start decides what the blob is). */
const MAX_RESCAN = 64 * 1024;
const RULE = "encoded-payload";

interface Blob {
  index: number;
  bytes: Buffer;
  /** How it was written, for the message ("base64", "hex", …). */
  form: string;
  /** Hex of a hash's length: a digest unless it decodes to text. */
  digestLike?: boolean;
  /** The original characters, to judge an opaque blob's entropy. */
  raw: string;
  /** PowerShell -EncodedCommand: whatever it decodes to is a command. */
  command?: boolean;
}

/** Words that introduce a digest or key written in base64 ("sha256-…", "pin-sha256: …", "integrity: …"). */
const DIGEST_CONTEXT =
  /(?:sha-?(?:1|224|256|384|512)|md5|digest|hash|pin|fingerprint|integrity|checksum|signature|nonce|salt)[\w-]*["'\s:=-]*$/i;

const COMMAND =
  /(?:^|[\n;&|(]\s*|\$\(\s*)(?:sudo\s+)?(?:curl|wget|bash|sh|zsh|python[0-9.]*|perl|ruby|node|php|nc|ncat|netcat|socat|rm|chmod|chown|dd|mkfs|powershell|pwsh|iex|invoke-expression|invoke-webrequest|cmd(?:\.exe)?|certutil|bitsadmin|mshta|rundll32|regsvr32|osascript|eval|exec|echo|cat|base64|export|source|cp|mv|tar|scp|ssh|nohup|crontab|systemctl|kill|pkill|apt(?:-get)?|yum|brew|pip3?|npm|npx|git|chattr|useradd|usermod|passwd)\b|^#!|\bimport\s+(?:os|subprocess|socket|sys|pty)\b|require\(\s*["']child_process|\bos\.system\(|\bsubprocess\.|\$\(/im;

/** Every blob worth decoding in `text`. */
function findBlobs(text: string): Blob[] {
  const blobs: Blob[] = [];
  const taken: Array<[number, number]> = [];
  const add = (blob: Blob, length: number) => {
    if (taken.some(([s, e]) => blob.index < e && blob.index + length > s)) return;
    taken.push([blob.index, blob.index + length]);
    blobs.push(blob);
  };
  // A JWT's header and payload are base64url JSON (scanned like any blob); its signature is random by design.
  for (const m of text.matchAll(/\beyJ[A-Za-z0-9_-]{10,}\.(eyJ[A-Za-z0-9_-]*)\.[A-Za-z0-9_-]*/g)) {
    const header = m[0].slice(0, m[0].indexOf("."));
    const payload = m[1] as string;
    blobs.push({ index: m.index, bytes: Buffer.from(header, "base64url"), form: "base64", raw: header });
    blobs.push({ index: m.index, bytes: Buffer.from(payload, "base64url"), form: "base64", raw: payload });
    taken.push([m.index, m.index + m[0].length]);
  }
  // Wrapped base64: consecutive lines that are nothing but base64, joined.
  const lines = text.split("\n");
  let offset = 0;
  let run: { start: number; parts: string[] } | undefined;
  const flush = () => {
    if (run && run.parts.length > 1) {
      const raw = run.parts.join("");
      if (raw.length >= 40)
        add({ index: run.start, bytes: Buffer.from(raw, "base64"), form: "base64", raw }, raw.length);
    }
    run = undefined;
  };
  for (const line of lines) {
    const body = /^[\s>"']*([A-Za-z0-9+/]{16,}={0,2})["',]*\s*$/.exec(line)?.[1];
    if (body && /[0-9]/.test(body) && /[A-Z]/.test(body) && /[a-z]/.test(body)) {
      if (!run) run = { start: offset + line.indexOf(body), parts: [] };
      run.parts.push(body);
    } else flush();
    offset += line.length + 1;
  }
  flush();
  for (const m of text.matchAll(
    /\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,300}?\s-e(?:nc|ncodedcommand|c)?\s+["']?([A-Za-z0-9+/]{8,}={0,2})/gi,
  )) {
    const raw = m[1] as string;
    add(
      {
        index: m.index,
        bytes: Buffer.from(raw, "base64"),
        form: "PowerShell -EncodedCommand",
        raw,
        command: true,
      },
      m[0].length,
    );
  }
  for (const m of text.matchAll(/(?:\\x[0-9a-fA-F]{2}){8,}/g)) {
    add(
      { index: m.index, bytes: Buffer.from(m[0].replace(/\\x/g, ""), "hex"), form: "\\x escapes", raw: m[0] },
      m[0].length,
    );
  }
  for (const m of text.matchAll(/(?:0x[0-9a-fA-F]{2}\s*,\s*){8,}0x[0-9a-fA-F]{2}/g)) {
    const hex = m[0].replace(/0x|[\s,]/g, "");
    add({ index: m.index, bytes: Buffer.from(hex, "hex"), form: "hex bytes", raw: m[0] }, m[0].length);
  }
  for (const m of text.matchAll(/(?:[0-9a-fA-F]{2}[ :]){19,}[0-9a-fA-F]{2}/g)) {
    const hex = m[0].replace(/[ :]/g, "");
    add(
      {
        index: m.index,
        bytes: Buffer.from(hex, "hex"),
        form: "hex",
        raw: m[0],
        digestLike: hex.length <= 128,
      },
      m[0].length,
    );
  }
  for (const m of text.matchAll(/(?:%[0-9a-fA-F]{2}){8,}/g)) {
    add(
      { index: m.index, bytes: Buffer.from(m[0].replace(/%/g, ""), "hex"), form: "%-escapes", raw: m[0] },
      m[0].length,
    );
  }
  for (const m of text.matchAll(/(?:\\u00[0-9a-fA-F]{2}|\\u\{[0-9a-fA-F]{1,2}\}){8,}/g)) {
    const hex = [...m[0].matchAll(/[0-9a-fA-F]{1,2}(?=\}|(?:\\|$))/g)]
      .map((h) => h[0].padStart(2, "0"))
      .join("");
    add({ index: m.index, bytes: Buffer.from(hex, "hex"), form: "\\u escapes", raw: m[0] }, m[0].length);
  }
  for (const m of text.matchAll(/(?:\\[0-3][0-7]{2}){8,}/g)) {
    const bytes = Buffer.from(
      [...m[0].matchAll(/\\([0-7]{3})/g)].map((o) => Number.parseInt(o[1] as string, 8)),
    );
    add({ index: m.index, bytes, form: "octal escapes", raw: m[0] }, m[0].length);
  }
  for (const m of text.matchAll(
    /\bfromCharCode\s*\(\s*(\d{1,3}(?:\s*,\s*\d{1,3}){5,})\s*\)|(?:\bchr\(\s*\d{1,3}\s*\)\s*[+.]\s*){5,}\bchr\(\s*\d{1,3}\s*\)|(?:\[char\]\s*\d{1,3}\s*\+?\s*){6,}/gi,
  )) {
    const codes = [...m[0].matchAll(/\d{1,3}/g)].map((d) => Number(d[0])).filter((n) => n < 256);
    add({ index: m.index, bytes: Buffer.from(codes), form: "character codes", raw: m[0] }, m[0].length);
  }
  // base32 (RFC 4648): upper-case letters and 2-7. Taken only when it decodes to text, else base64 may.
  for (const m of text.matchAll(/(?<![A-Za-z0-9+/=_-])[A-Z2-7]{24,}={0,6}(?![A-Za-z0-9+/=_-])/g)) {
    const bytes = base32(m[0]);
    if (bytes && /[2-7]/.test(m[0]) && asText(bytes) !== undefined)
      add({ index: m.index, bytes, form: "base32", raw: m[0] }, m[0].length);
  }
  for (const m of text.matchAll(/(?<![A-Za-z0-9+/=_\\%-])[A-Za-z0-9+/_-]{40,}={0,2}(?![A-Za-z0-9+/=_-])/g)) {
    const raw = m[0];
    if (/^[0-9a-fA-F]+$/.test(raw)) {
      if (raw.length % 2 === 0) {
        add(
          { index: m.index, bytes: Buffer.from(raw, "hex"), form: "hex", raw, digestLike: raw.length <= 128 },
          raw.length,
        );
      }
      continue;
    }
    const url = /[-_]/.test(raw) && !/[+/]/.test(raw);
    add(
      { index: m.index, bytes: Buffer.from(raw, url ? "base64url" : "base64"), form: "base64", raw },
      raw.length,
    );
  }
  return blobs;
}

/** RFC 4648 base32 to bytes; undefined when a character is outside the alphabet. */
function base32(raw: string): Buffer | undefined {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of raw.replace(/=+$/, "")) {
    const v = alphabet.indexOf(ch);
    if (v === -1) return undefined;
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >> bits) & 0xff);
    }
  }
  return Buffer.from(out);
}

/** Bytes as text when they are text (UTF-8 or UTF-16LE, nearly all printable), else undefined. */
function asText(bytes: Buffer): string | undefined {
  if (bytes.length < 6) return undefined;
  let text: string | undefined;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    text = undefined;
  }
  if ((text === undefined || text.includes("\0")) && bytes.length % 2 === 0) {
    let zeros = 0;
    for (let i = 1; i < bytes.length; i += 2) if (bytes[i] === 0) zeros++;
    if (zeros >= bytes.length / 4) text = bytes.toString("utf16le");
  }
  if (text === undefined) return undefined;
  let printable = 0;
  let letters = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0) as number;
    if (
      cp === 9 ||
      cp === 10 ||
      cp === 13 ||
      (cp >= 0x20 && cp !== 0x7f && !(cp >= 0x80 && cp <= 0x9f) && cp !== 0xfffd)
    )
      printable++;
    if (/\p{L}/u.test(ch)) letters++;
  }
  const length = [...text].length;
  return printable / length >= 0.95 && letters >= 3 ? text : undefined;
}

/** Inflates gzip or zlib data; undefined when it is neither (or breaks the cap). */
function inflate(bytes: Buffer): Buffer | undefined {
  try {
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) return gunzipSync(bytes, { maxOutputLength: MAX_INFLATE });
    if (bytes[0] === 0x78 && [0x01, 0x5e, 0x9c, 0xda].includes(bytes[1] as number)) {
      return inflateSync(bytes, { maxOutputLength: MAX_INFLATE });
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** Binary formats that are data, not a payload: SSH public keys, DER, images. */
function knownBinary(bytes: Buffer): boolean {
  const ascii = (at: number, text: string) =>
    bytes.subarray(at, at + text.length).toString("latin1") === text;
  // An SSH public key blob: a 4-byte length (7 to 19) and the key type ("ssh-ed25519", "ecdsa-…").
  const sshKey =
    bytes[0] === 0 &&
    bytes[1] === 0 &&
    bytes[2] === 0 &&
    (bytes[3] ?? 0) >= 7 &&
    (bytes[3] ?? 0) <= 19 &&
    (ascii(4, "ssh-") || ascii(4, "ecdsa-") || ascii(4, "sk-"));
  return (
    sshKey ||
    (bytes[0] === 0x30 && bytes[1] === 0x82) ||
    (bytes[0] === 0x89 && ascii(1, "PNG")) ||
    (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) ||
    ascii(0, "GIF8") ||
    (ascii(0, "RIFF") && ascii(8, "WEBP"))
  );
}

function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= (n / s.length) * Math.log2(n / s.length);
  return bits;
}

/** A string that looks like random data rather than a word, a path or an identifier. */
function opaque(raw: string): boolean {
  // An identifier (NODE_SEA_FUSE_…, a mangled _ZN… symbol) rather than data.
  if (raw.includes("_") && /^_|[A-Z]{3}_/.test(raw) && !/[+/]/.test(raw)) return false;
  // Mixing the standard (+/) and URL-safe (-_) alphabets is no base64: a path or an identifier.
  if (/[+/]/.test(raw) && /[-_]/.test(raw)) return false;
  const segments = raw.split("/");
  if (
    segments.length >= 3 &&
    !raw.includes("+") &&
    segments.every((s) => s.length <= 24) &&
    segments.some((s) => /^[a-z]{4,}$/.test(s))
  )
    return false;
  const classes = [/[A-Z]/, /[a-z]/, /[0-9]/].filter((re) => re.test(raw)).length;
  return classes === 3 && entropy(raw) >= (raw.length < 64 ? 4.2 : 4.5);
}

const preview = (text: string) => {
  const flat = showInvisible(text.trim().replace(/\s*\n\s*/g, " ⏎ "));
  return flat.length > 60 ? `${flat.slice(0, 59)}…` : flat;
};

/** What a decoded text amounts to, as one hit at `index`. */
function judgeText(decoded: string, blob: Blob, layers: string, depth: number): Hit | undefined {
  const text = decoded.length > MAX_RESCAN ? decoded.slice(0, MAX_RESCAN) : decoded;
  const inner = [...scanPatterns(text), ...scanEncoded(text, depth + 1)].filter(
    (h) => SEVERITY_RANK[h.severity] >= SEVERITY_RANK.medium,
  );
  inner.sort((a, b) => SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity]);
  const worst = inner[0];
  if (worst) {
    return {
      rule: RULE,
      severity: "high",
      index: blob.index,
      message: `${layers} decodes to text that ${worst.message} (${worst.rule}): "${preview(text)}"`,
    };
  }
  if (blob.command || COMMAND.test(text)) {
    return {
      rule: RULE,
      severity: "high",
      index: blob.index,
      message: `${layers} decodes to a command: "${preview(text)}"`,
    };
  }
  if (/^\s*[{[<]/.test(text) || /^[\w.-]+=[^\n]{0,300}$/m.test(text.trim())) {
    return {
      rule: RULE,
      severity: "low",
      index: blob.index,
      message: `${layers} decodes to data: "${preview(text)}"`,
    };
  }
  return {
    rule: RULE,
    severity: "medium",
    index: blob.index,
    message: `${layers} hides readable text: "${preview(text)}"`,
  };
}

/** Text that says it decodes ROT13: `tr 'A-Za-z' 'N-ZA-Mn-za-m'`, `codecs.decode(…, "rot13")`, "ROT13". */
const ROT13_MARK =
  /\brot[-_ ]?13\b|\btr\s+['"]?a-za-z['"]?\s+['"]?n-za-mn-za-m|\btr\s+['"]?a-z['"]?\s+['"]?n-za-m/i;
/** Code that reverses a string: `| rev`, `[::-1]`, `.reverse().join`, `strrev(`, `[array]::reverse`. */
const REVERSE_MARK =
  /\|\s*rev\b|\[\s*::\s*-1\s*\]|\.reverse\(\)\s*\.join|\bstrrev\s*\(|\[array\]::reverse|\breverse\s*\(\s*\$|\.chars\(\)\.rev\(\)/i;
/** Worth judging once reversed: it reads as a command, a URL or an order to the model. */
const REVERSED_SIGNAL = /:\/\/|\bignore\b|\binstructions?\b|\.ssh\b|\.aws\b|\bsystem prompt\b/i;

const rot13 = (text: string) =>
  text.replace(/[a-z]/gi, (c) => {
    const base = c <= "Z" ? 65 : 97;
    return String.fromCharCode(((c.charCodeAt(0) - base + 13) % 26) + base);
  });

/**
 * Text a skill decodes by ROT13 or reversal. Neither leaves a mark on the payload itself, so they
 * are looked for only where the text says it decodes them: the whole text ROT13-ed (letters map
 * one to one, so offsets hold), and each quoted string reversed.
 */
function scanTransformed(text: string, depth: number): Hit[] {
  const hits: Hit[] = [];
  if (ROT13_MARK.test(text)) {
    for (const hit of scanPatterns(rot13(text))) {
      if (SEVERITY_RANK[hit.severity] < SEVERITY_RANK.medium) continue;
      hits.push({
        rule: RULE,
        severity: "high",
        index: hit.index,
        message: `ROT13 text decodes to text that ${hit.message} (${hit.rule})`,
      });
    }
  }
  if (REVERSE_MARK.test(text)) {
    for (const m of text.matchAll(/(["'])([^"'\n]{12,2000})\1/g)) {
      const reversed = [...(m[2] as string)].reverse().join("");
      if (!REVERSED_SIGNAL.test(reversed) && !COMMAND.test(reversed)) continue;
      const blob: Blob = {
        index: m.index + 1,
        bytes: Buffer.from(reversed),
        form: "a reversed string",
        raw: reversed,
      };
      const hit = judgeText(reversed, blob, blob.form, depth);
      if (hit && hit.severity !== "low")
        hits.push({ ...hit, severity: hit.severity === "high" ? "high" : "medium" });
    }
  }
  return hits;
}

/** The encoded-payload hits in `text` (offsets in `text`). `depth` counts decoding layers already peeled. */
export function scanEncoded(text: string, depth = 0): Hit[] {
  if (depth >= MAX_DEPTH) return [];
  const hits: Hit[] = depth === 0 ? scanTransformed(text, depth) : [];
  for (const blob of findBlobs(text)) {
    let bytes = blob.bytes;
    let layers = blob.form;
    const inflated = inflate(bytes);
    if (inflated) {
      bytes = inflated;
      layers += " + compression";
    }
    const decoded = asText(bytes);
    if (decoded !== undefined) {
      const hit = judgeText(decoded, blob, layers, depth);
      if (hit) hits.push(hit);
      continue;
    }
    if (blob.command) {
      hits.push({
        rule: RULE,
        severity: "high",
        index: blob.index,
        message: `${layers} hides an encoded command`,
      });
    } else if (inflated) {
      hits.push({
        rule: RULE,
        severity: "medium",
        index: blob.index,
        message: `${layers} hides compressed binary data`,
      });
    } else if (
      blob.digestLike ||
      knownBinary(bytes) ||
      DIGEST_CONTEXT.test(text.slice(Math.max(0, blob.index - 24), blob.index))
    ) {
      // A digest, a public key or an image: data, not a payload.
    } else if (blob.form === "base64" ? opaque(blob.raw) : blob.raw.length > 128) {
      hits.push({
        rule: RULE,
        severity: "medium",
        index: blob.index,
        message: `an opaque ${blob.form} blob of ${blob.raw.length} characters that decodes to nothing readable`,
      });
    }
  }
  return hits;
}
