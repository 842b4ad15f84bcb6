/**
 * The forged-delivery property, per platform, over 10,000 mutations each: a delivery signed as the
 * platform signs it is accepted, and any change to its body, timestamp, signature or headers is
 * refused. (The channel e2e tests send forgeries through the real webhook listener as well.)
 */
import { generateKeyPairSync, sign } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DISCORD_INTERACTION_WINDOW_S,
  DISCORD_SIGNATURE_WINDOW_S,
  discordDeliveryOk,
  discordPublicKey,
  discordTimestampFresh,
  SLACK_WINDOW_S,
  slackDeliveryOk,
  slackSignature,
  snowflakeFresh,
  telegramDeliveryOk,
} from "./verify.js";

const RUNS = 10_000;

/** One change to a delivery: a body byte, an appended or dropped byte, a header value, a header gone. */
type Mutation =
  | { kind: "flip"; at: number; bit: number }
  | { kind: "append"; byte: number }
  | { kind: "truncate" }
  | { kind: "header"; name: number; value: string }
  | { kind: "drop"; name: number }
  | { kind: "repeat"; name: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant("append" as const), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("truncate" as const) }),
  fc.record({ kind: fc.constant("header" as const), name: fc.nat(), value: fc.string({ maxLength: 140 }) }),
  fc.record({ kind: fc.constant("drop" as const), name: fc.nat() }),
  fc.record({ kind: fc.constant("repeat" as const), name: fc.nat() }),
);

type Headers = Record<string, string | string[] | undefined>;

/** Applies `m` to a copy of the delivery; `signed` lists the headers the signature depends on. */
function mutate(
  body: Buffer,
  headers: Headers,
  signed: string[],
  m: Mutation,
): { body: Buffer; headers: Headers } {
  const copy = { ...headers };
  const name = signed[("name" in m ? m.name : 0) % signed.length] as string;
  switch (m.kind) {
    case "flip": {
      if (body.length === 0) return { body: Buffer.from([1]), headers: copy };
      const changed = Buffer.from(body);
      const at = m.at % changed.length;
      changed[at] = (changed[at] as number) ^ (1 << m.bit);
      return { body: changed, headers: copy };
    }
    case "append":
      return { body: Buffer.concat([body, Buffer.from([m.byte])]), headers: copy };
    case "truncate":
      return {
        body: body.length === 0 ? Buffer.from("x") : body.subarray(0, body.length - 1),
        headers: copy,
      };
    case "header":
      // A different value (the same one would be no forgery).
      copy[name] = m.value === copy[name] ? `${m.value}x` : m.value;
      return { body, headers: copy };
    case "drop":
      delete copy[name];
      return { body, headers: copy };
    case "repeat":
      copy[name] = [String(copy[name]), String(copy[name])];
      return { body, headers: copy };
  }
}

const bodies = fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.from(b));

describe("forged deliveries are refused", () => {
  it(`Telegram: the secret-token header, ${RUNS} mutations`, () => {
    fc.assert(
      fc.property(bodies, fc.string({ minLength: 1, maxLength: 256 }), mutation, (body, secret, m) => {
        const headers = { "x-telegram-bot-api-secret-token": secret };
        expect(telegramDeliveryOk(headers, secret)).toBe(true);
        // The body is not signed on Telegram: only header changes are forgeries there.
        if (m.kind === "flip" || m.kind === "append" || m.kind === "truncate") return;
        const forged = mutate(body, headers, ["x-telegram-bot-api-secret-token"], m);
        expect(telegramDeliveryOk(forged.headers, secret)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it(`Slack: v0 HMAC over timestamp and body, 300 s window, ${RUNS} mutations`, () => {
    const now = 1_800_000_000;
    fc.assert(
      fc.property(
        bodies,
        fc.string({ minLength: 1, maxLength: 64 }),
        fc.integer({ min: -SLACK_WINDOW_S, max: SLACK_WINDOW_S }),
        mutation,
        (body, secret, skew, m) => {
          const timestamp = String(now + skew);
          const headers = {
            "x-slack-request-timestamp": timestamp,
            "x-slack-signature": slackSignature(secret, timestamp, body),
          };
          expect(slackDeliveryOk(headers, body, secret, now)).toBe(true);
          const forged = mutate(body, headers, ["x-slack-request-timestamp", "x-slack-signature"], m);
          expect(slackDeliveryOk(forged.headers, forged.body, secret, now)).toBe(false);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("Slack: a genuine delivery signed outside the 300 s window is refused", () => {
    const now = 1_800_000_000;
    fc.assert(
      fc.property(
        bodies,
        fc.integer({ min: SLACK_WINDOW_S + 1, max: 10 ** 6 }),
        fc.boolean(),
        (body, off, past) => {
          const timestamp = String(past ? now - off : now + off);
          const headers = {
            "x-slack-request-timestamp": timestamp,
            "x-slack-signature": slackSignature("secret", timestamp, body),
          };
          expect(slackDeliveryOk(headers, body, "secret", now)).toBe(false);
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it(`Discord: Ed25519 over timestamp and body, ${RUNS} mutations`, () => {
    const { publicKey, privateKey } = generateKeyPairSync("ed25519");
    const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("hex");
    const key = discordPublicKey(raw);
    fc.assert(
      fc.property(bodies, fc.integer({ min: 1_600_000_000, max: 2_000_000_000 }), mutation, (body, t, m) => {
        const timestamp = String(t);
        const headers = {
          "x-signature-timestamp": timestamp,
          "x-signature-ed25519": sign(
            null,
            Buffer.concat([Buffer.from(timestamp), body]),
            privateKey,
          ).toString("hex"),
        };
        expect(discordDeliveryOk(headers, body, key)).toBe(true);
        const forged = mutate(body, headers, ["x-signature-timestamp", "x-signature-ed25519"], m);
        expect(discordDeliveryOk(forged.headers, forged.body, key)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it("refuses empty secrets and malformed keys outright", () => {
    expect(telegramDeliveryOk({ "x-telegram-bot-api-secret-token": "" }, "")).toBe(false);
    expect(slackDeliveryOk({}, Buffer.alloc(0), "")).toBe(false);
    expect(() => discordPublicKey("abc")).toThrow(/64 hexadecimal/);
  });
});

describe("Discord's windows", () => {
  const now = 1_800_000_000_000;
  /** A snowflake made `ageMs` before `now` (Discord's epoch is 2015-01-01). */
  const madeAgo = (ageMs: number) => String(((BigInt(now - ageMs) - 1_420_070_400_000n) << 22n) | 5n);

  it("takes an interaction made within 15 minutes, refuses an older one or one from the future", () => {
    expect(snowflakeFresh(madeAgo(0), now)).toBe(true);
    expect(snowflakeFresh(madeAgo(DISCORD_INTERACTION_WINDOW_S * 1000), now)).toBe(true);
    expect(snowflakeFresh(madeAgo(DISCORD_INTERACTION_WINDOW_S * 1000 + 1), now)).toBe(false);
    expect(snowflakeFresh(madeAgo(-(DISCORD_SIGNATURE_WINDOW_S * 1000) - 1), now)).toBe(false);
    expect(snowflakeFresh("not a snowflake", now)).toBe(false);
  });

  it("takes a signing time within 300 s of now, and nothing else", () => {
    const at = (t: number | string) => ({ "x-signature-timestamp": String(t) });
    const nowS = now / 1000;
    expect(discordTimestampFresh(at(nowS - DISCORD_SIGNATURE_WINDOW_S), nowS)).toBe(true);
    expect(discordTimestampFresh(at(nowS + DISCORD_SIGNATURE_WINDOW_S), nowS)).toBe(true);
    expect(discordTimestampFresh(at(nowS - DISCORD_SIGNATURE_WINDOW_S - 1), nowS)).toBe(false);
    expect(discordTimestampFresh(at("soon"), nowS)).toBe(false);
    expect(discordTimestampFresh({}, nowS)).toBe(false);
  });
});
