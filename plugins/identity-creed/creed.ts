import type { FighterManifest } from "../../sdk/index.js";
import { wordOverlap } from "../../sdk/kits/recall.js";
import { decayedScore } from "../../sdk/kits/text.js";
import type { CreedDocument, CreedObservation, Relationship } from "./records.js";

export interface CreedConfig {
  /** Ask the model for observations after substantial exchanges. */
  reflect: boolean;
  /** An exchange (message + reply) shorter than this is not worth a reflection call. */
  reflect_min_chars: number;
  max_observations: number;
}

/** Confidence decay and forgetting share the memory settings: one notion of "fading" per daemon. */
export interface FadeConfig {
  rate_per_day: number;
  forget_below: number;
}

const NEW_OBSERVATION_CONFIDENCE = 0.5;
/** Each repetition closes this share of the gap to full confidence. */
const REINFORCEMENT = 0.3;
const SAME_OBSERVATION = 0.6;

/** The Creed a fighter starts with: its manifest's description as identity, nothing learned yet. */
export function initialCreed(manifest: FighterManifest, now: string): CreedDocument {
  return {
    identity: manifest.description,
    traits: [],
    directives: [],
    observations: [],
    counters: { bouts: 0, conversations: 0, messages: 0 },
    updated_at: now,
  };
}

/** Counters move after every conversation, whatever else happens. */
export function countConversation(
  creed: CreedDocument,
  turn: { new_bout: boolean; messages: number },
  now: string,
): CreedDocument {
  const { bouts, conversations, messages } = creed.counters;
  return {
    ...creed,
    counters: {
      bouts: bouts + (turn.new_bout ? 1 : 0),
      conversations: conversations + 1,
      messages: messages + turn.messages,
    },
    updated_at: now,
  };
}

/** Whether an exchange is worth a reflection call: long enough, never a one-line back and forth. */
export function isSubstantial(user: string, reply: string, config: CreedConfig): boolean {
  return config.reflect && user.length + reply.length >= config.reflect_min_chars;
}

/**
 * Merges new observations into the Creed: every confidence first decays to `now`; one that repeats
 * an existing observation (mostly the same words) reinforces it instead of being added; those faded
 * below `forget_below` are dropped, and only the most confident `max_observations` are kept.
 */
export function mergeObservations(
  creed: CreedDocument,
  texts: string[],
  now: string,
  fade: FadeConfig,
  max: number,
): CreedDocument {
  const at = Date.parse(now);
  const observations: CreedObservation[] = creed.observations.map((o) => ({
    ...o,
    confidence: decayedScore(o.confidence, o.last_seen, at, fade.rate_per_day),
    last_seen: now,
  }));
  for (const text of texts) {
    const same = observations.find((o) => wordOverlap(o.text, text) >= SAME_OBSERVATION);
    if (same) {
      same.confidence += (1 - same.confidence) * REINFORCEMENT;
      same.seen += 1;
    } else {
      observations.push({ text, confidence: NEW_OBSERVATION_CONFIDENCE, seen: 1, last_seen: now });
    }
  }
  const kept = observations
    .filter((o) => o.confidence >= fade.forget_below)
    .sort((a, b) => b.confidence - a.confidence)
    .slice(0, max)
    .map((o) => ({ ...o, confidence: Number(o.confidence.toFixed(4)) }));
  return { ...creed, observations: kept, updated_at: now };
}

/** The Creed as a compact block for the system prompt; empty sections are left out. */
export function renderCreed(name: string, creed: CreedDocument, relationships: Relationship[]): string {
  return [renderCreedCore(name, creed), renderCreedRecent(creed, relationships)].filter(Boolean).join("\n");
}

/**
 * What the Creed holds that changes only when it is edited or a reflection adds to it: identity,
 * traits, directives, what was learned. It belongs to the prompt's stable, cacheable prefix.
 */
export function renderCreedCore(name: string, creed: CreedDocument): string {
  const lines = [`## Creed of ${name}`];
  if (creed.identity) lines.push(`Identity: ${creed.identity}`);
  if (creed.traits.length > 0) lines.push(`Traits: ${creed.traits.join("; ")}`);
  for (const d of creed.directives) lines.push(`Directive: ${d}`);
  for (const o of creed.observations) lines.push(`Learned (${o.confidence.toFixed(2)}): ${o.text}`);
  return lines.join("\n");
}

/**
 * What changes with every conversation (relationships with their dates, the counters): the
 * prompt's volatile part, after the stable prefix. Empty for a fighter's first conversation.
 */
export function renderCreedRecent(creed: CreedDocument, relationships: Relationship[]): string {
  const lines: string[] = [];
  for (const r of relationships.slice(0, 5)) {
    const note = r.note ? ` (${r.note})` : "";
    lines.push(
      `Knows ${r.kind} ${r.with}: ${r.exchanges} exchange(s), last ${r.last_contact.slice(0, 10)}${note}`,
    );
  }
  const { conversations, messages, bouts } = creed.counters;
  if (conversations > 0)
    lines.push(`History: ${conversations} conversation(s), ${messages} message(s), ${bouts} bout(s)`);
  return lines.join("\n");
}

export const REFLECTION_SYSTEM =
  "You keep the Creed of an AI assistant: the lasting things it learns from its conversations. " +
  "Read the exchange and write at most three short observations worth remembering for future " +
  "conversations (about the user, their preferences, or how best to help them), one per line, each " +
  "starting with '- '. Write NONE if nothing is worth keeping. No other text.";

/** The exchange to reflect on, and the facts a compaction saved to memory since the last reflection. */
export function reflectionPrompt(user: string, reply: string, flushed: readonly string[] = []): string {
  const exchange = `User said:\n${user.slice(0, 4000)}\n\nAssistant replied:\n${reply.slice(0, 4000)}`;
  if (flushed.length === 0) return exchange;
  const facts = flushed.map((f) => `- ${f.slice(0, 500)}`).join("\n");
  return `${exchange}\n\nSaved to memory from earlier in the conversation:\n${facts}`;
}

/** Observation lines from a reflection reply: `- ` items (or plain lines), NONE and noise dropped. */
export function parseObservations(reply: string): string[] {
  return reply
    .split(/\r?\n/)
    .map((line) => line.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, "").trim())
    .filter((line) => line.length >= 3 && !/^none\.?$/i.test(line))
    .map((line) => line.slice(0, 200))
    .slice(0, 3);
}
