// The embedding side every fake LLM server shares: a deterministic default model, the requests
// recorded in protocol-neutral terms, and failures scripted for the next N embedding calls. Each fake
// speaks its own wire shape around it (openai-server.ts, ollama-server.ts, gemini-server.ts).
import type { IncomingHttpHeaders } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";

/** Turns one text into its vector; a fake's `embed` option replaces the default. */
export type Embedder = (text: string) => number[];

/** The length of the default model's vectors when no `dimensions` is asked for. */
export const DEFAULT_EMBED_DIMENSIONS = 64;

/** One embedding request as the fake understood it. */
export interface EmbedCall {
  model: string;
  inputs: string[];
  dimensions?: number;
  /** Gemini's `taskType` (RETRIEVAL_DOCUMENT, RETRIEVAL_QUERY), when it was sent. */
  task_type?: string;
}

/** How the next embedding calls fail: an HTTP error (429 with `retry_after_s`), or no answer at all. */
export type EmbedFailure = { status: number; retry_after_s?: number; message?: string } | { hang: true };

export interface FakeEmbeddings {
  /** Every embedding request received, in order. */
  readonly embedCalls: EmbedCall[];
  /** The key each of them carried (a bearer token, or Gemini's x-goog-api-key), in the same order. */
  readonly embedKeys: (string | undefined)[];
  /** The next `count` embedding calls fail as `failure` says (a hang lasts until the client leaves). */
  failEmbeddings(count: number, failure: EmbedFailure): void;
}

/**
 * A deterministic stand-in for an embedding model: a hashed bag of words (each lower-cased word adds
 * ±1 at two positions its FNV-1a hash picks), normalised to length 1, so texts sharing words are
 * close and the same text always gives the same vector. The empty text gives a unit vector too.
 */
export function hashedEmbedding(text: string, dimensions = DEFAULT_EMBED_DIMENSIONS): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const hash = fnv1a(word);
    vector[hash % dimensions] = (vector[hash % dimensions] ?? 0) + (hash & 0x8000_0000 ? -1 : 1);
    const second = fnv1a(`${word}#`);
    vector[second % dimensions] = (vector[second % dimensions] ?? 0) + (second & 1 ? -0.5 : 0.5);
  }
  return normalise(vector.every((v) => v === 0) ? vector.map((_, i) => (i === 0 ? 1 : 0)) : vector);
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x0100_0193) >>> 0;
  }
  return hash;
}

function normalise(vector: number[]): number[] {
  const norm = Math.hypot(...vector) || 1;
  return vector.map((v) => v / norm);
}

/** The embedding state of one fake: what it answers, what it recorded, what it must fail. */
export function createFakeEmbeddings(embed?: Embedder) {
  const embedCalls: EmbedCall[] = [];
  const embedKeys: (string | undefined)[] = [];
  const failures: EmbedFailure[] = [];
  return {
    embedCalls,
    embedKeys,
    failEmbeddings(count: number, failure: EmbedFailure) {
      for (let i = 0; i < count; i++) failures.push(failure);
    },
    /**
     * Records the call, then either the failure scripted for it (a hang waits for `signal`) or the
     * vectors: the `embed` option's cut to `dimensions` and normalised again, as a shortened
     * Matryoshka embedding is, or the default model's at that length.
     */
    async answer(
      call: EmbedCall,
      headers: IncomingHttpHeaders,
      signal: AbortSignal,
    ): Promise<{ failure?: EmbedFailure; vectors: number[][] }> {
      embedCalls.push(call);
      const bearer = headers.authorization?.replace(/^Bearer /, "");
      const google = headers["x-goog-api-key"];
      embedKeys.push(typeof google === "string" ? google : bearer);
      const failure = failures.shift();
      if (failure && "hang" in failure) {
        await sleep(3_600_000, undefined, { signal }).catch(() => undefined);
        return { failure, vectors: [] };
      }
      if (failure) return { failure, vectors: [] };
      const vectors = call.inputs.map((text) =>
        embed
          ? call.dimensions
            ? normalise(embed(text).slice(0, call.dimensions))
            : embed(text)
          : hashedEmbedding(text, call.dimensions),
      );
      return { vectors };
    },
    reset() {
      embedCalls.length = 0;
      embedKeys.length = 0;
      failures.length = 0;
    },
  };
}

/** Rough token count of embedded texts, as the fakes report usage (about four characters a token). */
export function embedTokens(inputs: readonly string[]): number {
  return inputs.reduce((sum, text) => sum + Math.max(1, Math.ceil(text.length / 4)), 0);
}

/** A vector as the OpenAI API's `encoding_format: "base64"` sends it: little-endian float32 bytes. */
export function base64Floats(vector: readonly number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString("base64");
}
