/**
 * The three platforms' delivery signatures, checked over the body exactly as received and before
 * anything parses it. Every comparison is constant-time; anything missing or malformed is a refusal.
 * - Telegram: the `X-Telegram-Bot-Api-Secret-Token` header equals the secret given to `setWebhook`.
 * - Slack: `X-Slack-Signature` is `v0=` + HMAC-SHA256(signing secret, `v0:<timestamp>:<body>`), and
 *   `X-Slack-Request-Timestamp` is within 300 s of now (replays of old deliveries fail).
 * - Discord: `X-Signature-Ed25519` is the application key's Ed25519 signature of
 *   `<X-Signature-Timestamp><body>`; the timestamp within 300 s of now (`discordTimestampFresh`), and
 *   the interaction itself, whose id is a snowflake holding its creation time, at most 15 minutes
 *   old (`snowflakeFresh`).
 */
import { createHmac, createPublicKey, type KeyObject, timingSafeEqual, verify } from "node:crypto";

type Headers = Record<string, string | string[] | undefined>;

/** A header's single value; a repeated header is a refusal (which one would be signed?). */
function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return typeof value === "string" ? value : undefined;
}

/** Constant-time equality of two strings (length differences leak only the length). */
function sameSecret(given: string, wanted: string): boolean {
  const a = Buffer.from(given, "utf8");
  const b = Buffer.from(wanted, "utf8");
  return a.length === b.length && a.length > 0 && timingSafeEqual(a, b);
}

/** Whether a Telegram delivery carries the webhook's secret token (`X-Telegram-Bot-Api-Secret-Token`). */
export function telegramDeliveryOk(headers: Headers, secret: string): boolean {
  const given = header(headers, "x-telegram-bot-api-secret-token");
  return given !== undefined && secret.length > 0 && sameSecret(given, secret);
}

/** Slack's window: a delivery signed more than this many seconds from now is refused. */
export const SLACK_WINDOW_S = 300;

/** The `X-Slack-Signature` Slack sends for `rawBody` at `timestamp` (Unix seconds, as a string). */
export function slackSignature(signingSecret: string, timestamp: string, rawBody: Buffer): string {
  const hmac = createHmac("sha256", signingSecret);
  hmac.update(`v0:${timestamp}:`);
  hmac.update(rawBody);
  return `v0=${hmac.digest("hex")}`;
}

/** Whether a Slack delivery is signed with `signingSecret` and within `SLACK_WINDOW_S` of `nowS`. */
export function slackDeliveryOk(
  headers: Headers,
  rawBody: Buffer,
  signingSecret: string,
  nowS: number = Math.floor(Date.now() / 1000),
): boolean {
  const timestamp = header(headers, "x-slack-request-timestamp");
  const signature = header(headers, "x-slack-signature");
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp) || signingSecret.length === 0) return false;
  if (Math.abs(nowS - Number(timestamp)) > SLACK_WINDOW_S) return false;
  return sameSecret(signature, slackSignature(signingSecret, timestamp, rawBody));
}

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 raw key bytes follow. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** Discord's application public key (64 hex characters) as a key object; throws when malformed. */
export function discordPublicKey(hex: string): KeyObject {
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw new Error("a Discord public key is 64 hexadecimal characters");
  return createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(hex, "hex")]),
    format: "der",
    type: "spki",
  });
}

/** Whether a Discord delivery carries the application key's Ed25519 signature (check its time with `discordTimestampFresh`). */
export function discordDeliveryOk(headers: Headers, rawBody: Buffer, publicKey: KeyObject): boolean {
  const signature = header(headers, "x-signature-ed25519");
  const timestamp = header(headers, "x-signature-timestamp");
  if (!signature || !timestamp || !/^[0-9a-f]{128}$/i.test(signature)) return false;
  try {
    return verify(
      null,
      Buffer.concat([Buffer.from(timestamp, "utf8"), rawBody]),
      publicKey,
      Buffer.from(signature, "hex"),
    );
  } catch {
    return false;
  }
}

/** Discord's signing time: a delivery signed more than this many seconds from now is refused. */
export const DISCORD_SIGNATURE_WINDOW_S = 300;

/** Whether `X-Signature-Timestamp` is within `DISCORD_SIGNATURE_WINDOW_S` of now. */
export function discordTimestampFresh(
  headers: Headers,
  nowS: number = Math.floor(Date.now() / 1000),
): boolean {
  const timestamp = header(headers, "x-signature-timestamp");
  if (!timestamp || !/^\d{1,12}$/.test(timestamp)) return false;
  return Math.abs(nowS - Number(timestamp)) <= DISCORD_SIGNATURE_WINDOW_S;
}

/** The longest an interaction may have existed: its token, which answers it, lasts 15 minutes. */
export const DISCORD_INTERACTION_WINDOW_S = 15 * 60;

/** Discord's epoch (2015-01-01) in Unix milliseconds: a snowflake's top bits count from it. */
const DISCORD_EPOCH_MS = 1_420_070_400_000n;

/**
 * Whether a Discord snowflake (an interaction's id) was made within `windowS` seconds of now, or
 * at most the signature window ahead (clocks differ).
 */
export function snowflakeFresh(
  id: string,
  nowMs: number = Date.now(),
  windowS: number = DISCORD_INTERACTION_WINDOW_S,
): boolean {
  if (!/^\d{17,20}$/.test(id)) return false;
  const made = Number((BigInt(id) >> 22n) + DISCORD_EPOCH_MS);
  const age = nowMs - made;
  return age <= windowS * 1000 && age >= -DISCORD_SIGNATURE_WINDOW_S * 1000;
}
