// The fakes' prompt caches, counted as the real APIs count them (in the fakes' own token estimate,
// chars / 4), so a test can check what Spar asks of a cache and what it records:
// - Anthropic caches only at `cache_control` breakpoints: the prefix up to a breakpoint is written
//   (cache_creation_input_tokens) on first use and read (cache_read_input_tokens) by a later request
//   that repeats it byte for byte, found at the breakpoint or up to 20 blocks before it;
// - OpenAI and Gemini cache by themselves: the longest prefix a request shares with an earlier one
//   (OpenAI: of the same prompt_cache_key) is read, OpenAI's in steps of 128 tokens.
// Nothing is cached below `minTokens` (1,024, the least any of these models caches).
import { createHash } from "node:crypto";
import { estimateTokens } from "./scripted.js";

export const MIN_CACHED_TOKENS = 1024;
/** How far back from a breakpoint Anthropic looks for an earlier write. */
const LOOKBACK_BLOCKS = 20;

/** One block of an Anthropic request, in prompt order: its identity (for the hash) and its text. */
export interface CacheBlock {
  key: unknown;
  text: string;
  breakpoint: boolean;
}

export interface CacheCounts {
  /** Every prompt token, the cached ones included. */
  total: number;
  read: number;
  written: number;
}

/** Anthropic's explicit cache: counts for a request with breakpoints, undefined for one without. */
export function createBreakpointCache(minTokens = MIN_CACHED_TOKENS) {
  const entries = new Set<string>();
  return (blocks: CacheBlock[]): CacheCounts | undefined => {
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
    if (breakpoints.length === 0) return undefined;
    const hashes: string[] = [];
    const tokens: number[] = [];
    const hash = createHash("sha256");
    let text = "";
    for (const block of blocks) {
      hash.update(JSON.stringify(block.key));
      hashes.push(hash.copy().digest("hex"));
      text += block.text;
      tokens.push(estimateTokens(text));
    }
    let read = 0;
    for (const bp of breakpoints) {
      for (let i = bp; i >= Math.max(0, bp - LOOKBACK_BLOCKS + 1); i--) {
        if (entries.has(hashes[i] ?? "")) {
          read = Math.max(read, tokens[i] ?? 0);
          break;
        }
      }
    }
    const last = breakpoints.at(-1) ?? 0;
    const upTo = tokens[last] ?? 0;
    const written = upTo >= minTokens && !entries.has(hashes[last] ?? "") ? upTo - read : 0;
    for (const bp of breakpoints) if ((tokens[bp] ?? 0) >= minTokens) entries.add(hashes[bp] ?? "");
    return { total: tokens.at(-1) ?? 0, read, written };
  };
}

/** OpenAI's and Gemini's automatic cache: the tokens of the longest prefix seen before, by key. */
export function createPrefixCache(options: { step?: number; minTokens?: number } = {}) {
  const { step = 1, minTokens = MIN_CACHED_TOKENS } = options;
  const seen = new Map<string, string[]>();
  return (prompt: string, key = ""): number => {
    const earlier = seen.get(key) ?? [];
    let shared = 0;
    for (const other of earlier) shared = Math.max(shared, commonPrefix(prompt, other));
    seen.set(key, [...earlier.slice(-20), prompt]);
    const tokens = Math.floor(shared / 4);
    if (tokens < minTokens) return 0;
    return Math.min(estimateTokens(prompt), tokens - (tokens % step));
  };
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}
