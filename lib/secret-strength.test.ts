import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MIN_SECRET_BYTES, secretStrength, secretWeakness } from "./secret-strength.js";

const strength = (text: string | Buffer) =>
  secretStrength(typeof text === "string" ? Buffer.from(text) : text);
const weakness = (text: string | Buffer) => secretWeakness(strength(text));

describe("secretStrength", () => {
  it("counts hex by the bytes it decodes to: 64 characters are 32 bytes", () => {
    const hex = randomBytes(32).toString("hex");
    expect(strength(hex)).toEqual({ encoding: "hex", bytes: 32, repeated: false });
    expect(strength(hex.toUpperCase())).toMatchObject({ encoding: "hex", bytes: 32 });
    expect(weakness(hex)).toBeUndefined();
    expect(strength(hex.slice(0, 62))).toMatchObject({ encoding: "hex", bytes: 31 });
    expect(weakness(hex.slice(0, 62))).toMatch(/^carries 31 bytes \(hex-decoded\), fewer than the 32/);
  });

  it("counts base64 and base64url by the bytes they decode to: 44 characters are 32 bytes", () => {
    for (let i = 0; i < 20; i++) {
      const key = randomBytes(32);
      for (const text of [key.toString("base64"), key.toString("base64url")]) {
        expect(strength(text)).toEqual({ encoding: "base64", bytes: 32, repeated: false });
      }
    }
    // 43 unpadded characters still carry 32 bytes; 42 carry 31.
    const unpadded = randomBytes(32).toString("base64url");
    expect(unpadded).toHaveLength(43);
    expect(strength(unpadded.slice(0, 42))).toMatchObject({ encoding: "base64", bytes: 31 });
  });

  it("decodes base64 exactly as Node does", () => {
    for (let n = 1; n <= 40; n++) {
      const key = randomBytes(n);
      const text = key.toString("base64");
      if (/^[0-9a-fA-F]+$/.test(text) && text.length % 2 === 0) continue; // counted as hex instead
      expect(strength(text).bytes, text).toBe(Buffer.from(text, "base64").length);
    }
  });

  it("counts anything else by its bytes as read, UTF-8 included", () => {
    expect(strength("a")).toEqual({ encoding: "raw", bytes: 1, repeated: true });
    expect(strength("")).toEqual({ encoding: "raw", bytes: 0, repeated: false });
    expect(strength("correct horse battery staple")).toEqual({ encoding: "raw", bytes: 28, repeated: false });
    expect(strength("ключ ключ ключ ключ").bytes).toBe(Buffer.byteLength("ключ ключ ключ ключ"));
    const random = randomBytes(32);
    expect(strength(random)).toMatchObject({ bytes: 32 });
  });

  it("ignores the newline a key file written by a shell ends with, when counting text", () => {
    const hex = randomBytes(32).toString("hex");
    expect(strength(`${hex}\n`)).toEqual({ encoding: "hex", bytes: 32, repeated: false });
    expect(strength(`  ${randomBytes(32).toString("base64")}\r\n`)).toMatchObject({
      encoding: "base64",
      bytes: 32,
    });
  });

  it("sees one byte repeated, in the text or in what it decodes to", () => {
    expect(strength("a".repeat(64))).toEqual({ encoding: "hex", bytes: 32, repeated: true });
    expect(strength("ab".repeat(32))).toEqual({ encoding: "hex", bytes: 32, repeated: true });
    expect(strength("x".repeat(60))).toMatchObject({ encoding: "base64", repeated: true });
    expect(strength(Buffer.alloc(32).toString("base64"))).toMatchObject({ bytes: 32, repeated: true });
    expect(strength("!".repeat(40))).toEqual({ encoding: "raw", bytes: 40, repeated: true });
    expect(strength(Buffer.alloc(48, 7))).toMatchObject({ encoding: "raw", repeated: true });
  });

  it("leaves the secret's bytes exactly as they were", () => {
    const hex = Buffer.from(`${randomBytes(32).toString("hex")}\n`);
    const copy = Buffer.from(hex);
    secretStrength(hex);
    expect(hex.equals(copy)).toBe(true);
  });
});

describe("secretWeakness", () => {
  it(`accepts ${MIN_SECRET_BYTES} random bytes in every encoding`, () => {
    const key = randomBytes(32);
    for (const secret of [key, key.toString("hex"), key.toString("base64"), key.toString("base64url")]) {
      expect(weakness(secret)).toBeUndefined();
    }
    expect(weakness("a long passphrase with spaces, forty bytes")).toBeUndefined();
  });

  it("refuses what is short or one byte repeated, giving lengths only", () => {
    expect(weakness("")).toBe(
      "carries 0 bytes, fewer than the 32 it needs (32 random bytes, or 64 hex or 44 base64 characters)",
    );
    expect(weakness("a")).toMatch(/^carries 1 byte, fewer than the 32/);
    expect(weakness("0".repeat(64))).toBe(
      "is one byte repeated (hex-decoded), the first thing a guesser tries",
    );
    expect(weakness("!".repeat(40))).toBe("is one byte repeated, the first thing a guesser tries");
    const text = "correct horse battery staple";
    expect(weakness(text)).not.toContain("horse");
  });
});
