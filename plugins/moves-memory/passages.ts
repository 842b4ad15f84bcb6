/**
 * Past conversations as memory: what the user and the fighter said in each turn (not tool results),
 * copied after the turn into the plugin's `passages` collection, where the store's full-text index
 * and the embeddings find it. `conversation_search` reads only the fighter's own bouts, and of those
 * only its current bout's origin unless a `memory` grant's `scope` names more.
 */
import type {
  Capability,
  Collection,
  DecayConfig,
  MoveContext,
  PluginData,
  RingServices,
  TaintSource,
  TurnSummary,
} from "../../sdk/index.js";
import { decayedScore } from "../../sdk/kits/text.js";
import type { Embeddings } from "./embeddings.js";
import { closeness, diverse, fuse, newestFirst, wordOverlap } from "./fusion.js";
import { candidatesFor, searchWords } from "./memories.js";
import { cosine } from "./vector-index.js";

export type PassageRecord = {
  /** `<bout id>:<seq>`. */
  id: string;
  fighter_id: string;
  bout_id: string;
  origin: string;
  seq: number;
  role: "user" | "assistant";
  text: string;
  at: string;
  taint?: TaintSource;
};

export interface FoundPassage {
  bout_id: string;
  origin: string;
  at: string;
  role: string;
  text: string;
  /** The messages around it in its bout, in order (itself included). */
  context: { role: string; text: string; at: string }[];
}

/** The most characters of a passage a result shows (the rest: `fighter_history` or the API). */
export const SHOWN_CHARS = 2_000;
const WINDOW = 2;

const isSpoken = (role: string): role is "user" | "assistant" => role === "user" || role === "assistant";

/** A user's bouts are `user`; a channel chat's words come from whoever wrote in it. */
function originTaint(origin: string): TaintSource | undefined {
  if (origin.startsWith("channel:")) return { kind: "channel", detail: origin.slice("channel:".length) };
  if (origin.startsWith("fighter:")) return { kind: "fighter", detail: origin.slice("fighter:".length) };
  return undefined;
}

/** The passages of a finished turn: its spoken messages, each with the seq it has in the bout. */
export function turnPassages(turn: TurnSummary, at: string): PassageRecord[] {
  const out: PassageRecord[] = [];
  turn.new_messages.forEach((m, i) => {
    if (!isSpoken(m.role) || m.content.trim() === "") return;
    const seq = turn.first_seq + i;
    const taint =
      m.role === "user" ? originTaint(turn.origin) : (turn.taint?.[0] ?? originTaint(turn.origin));
    out.push({
      id: `${turn.bout_id}:${seq}`,
      fighter_id: turn.fighter.id,
      bout_id: turn.bout_id,
      origin: turn.origin,
      seq,
      role: m.role,
      text: m.content,
      at,
      ...(taint ? { taint } : {}),
    });
  });
  return out;
}

/** Whether a search from `context` may read a bout of `origin`: its own origin, or one every grant set's `memory` scope names. */
export function mayRead(
  context: Pick<MoveContext, "origin" | "grants" | "callers">,
  origin: string,
): boolean {
  if (origin === context.origin) return true;
  const sets = [context.grants, ...context.callers.map((c) => c.grants)];
  return sets.every((grants) => grants.some((g) => scopes(g).some((s) => s === "*" || matches(origin, s))));
}

const scopes = (grant: Capability): string[] =>
  grant.scope === undefined ? [] : Array.isArray(grant.scope) ? grant.scope : [grant.scope];
const matches = (origin: string, filter: string) => origin === filter || origin.startsWith(`${filter}:`);

export interface Passages {
  index(turn: TurnSummary): Promise<PassageRecord[]>;
  /** Copies the messages of every live fighter's bouts not copied yet; how many. */
  backfill(ring: Pick<RingServices, "fighters" | "bouts">): Promise<PassageRecord[]>;
  search(
    context: Pick<MoveContext, "fighter" | "origin" | "grants" | "callers">,
    query: string,
    options: { limit: number; since?: string },
  ): Promise<{
    results: FoundPassage[];
    weights: number[];
    by: "words" | "words+meaning";
    taint: TaintSource[];
  }>;
  rows(): AsyncIterable<{ id: string; fighter_id: string; text: string }[]>;
}

export function createPassages(
  data: PluginData,
  embeddings: () => Embeddings | undefined,
  decay: DecayConfig,
  now: () => number = Date.now,
): Passages {
  const passages = data.passages as Collection<PassageRecord>;
  const state = data.state as Collection<{ id: string; value: string }>;

  async function store(records: PassageRecord[]): Promise<PassageRecord[]> {
    const added: PassageRecord[] = [];
    for (const r of records) if (await passages.add(r)) added.push(r);
    for (const r of added) embeddings()?.enqueue("passage", r.fighter_id, r.id, r.text);
    return added;
  }

  return {
    index: (turn) => store(turnPassages(turn, new Date(now()).toISOString())),
    async backfill(ring) {
      if (await state.get("passages-backfilled")) return [];
      const added: PassageRecord[] = [];
      for (const fighter of await ring.fighters.list()) {
        for (const bout of await ring.fighters.bouts(fighter.id)) {
          const origin = bout.origin ?? "user";
          const records: PassageRecord[] = [];
          for (const m of await ring.bouts.messages(bout.id)) {
            if (!isSpoken(m.role) || m.content.trim() === "") continue;
            const taint = originTaint(origin);
            records.push({
              id: `${bout.id}:${m.seq}`,
              fighter_id: fighter.id,
              bout_id: bout.id,
              origin,
              seq: m.seq,
              role: m.role,
              text: m.content,
              at: m.created_at,
              ...(taint ? { taint } : {}),
            });
          }
          added.push(...(await store(records)));
        }
      }
      await state.put({ id: "passages-backfilled", value: new Date(now()).toISOString() });
      return added;
    },
    async search(context, query, { limit, since }) {
      const fighterId = context.fighter.id;
      const readable = (p: PassageRecord) => mayRead(context, p.origin) && (!since || p.at >= since);
      const [words, meaning] = await Promise.all([
        passages.rank(searchWords(query), {
          where: { fighter_id: fighterId, ...(since ? { at: { gte: since } } : {}) },
          limit: candidatesFor(limit) * 2,
        }),
        embeddings()?.search("passage", fighterId, query, candidatesFor(limit) * 2),
      ]);
      const known = new Map<string, PassageRecord>();
      for (const { doc } of words) if (readable(doc)) known.set(doc.id, doc);
      const wanted = (meaning ?? []).map((h) => h.id).filter((id) => !known.has(id));
      for (const p of await Promise.all(wanted.map((id) => passages.get(id)))) {
        if (p && p.fighter_id === fighterId && readable(p)) known.set(p.id, p);
      }
      const near = (meaning ?? []).filter((h) => known.has(h.id));
      const floor = embeddings()?.floor ?? 0;
      const fused = fuse([
        { ids: words.map((w) => w.doc.id).filter((id) => known.has(id)) },
        { ids: near.map((h) => h.id), weights: near.map((h) => closeness(h.score, floor)) },
      ]);
      const at = now();
      const ranked = [...fused].map(([id, rrf]) => {
        const p = known.get(id) as PassageRecord;
        // Recency counts, at half weight: fused scores lie close together, and the whole decay would
        // let any recent passage outrank the best old match (bench/recall).
        return { passage: p, score: rrf * (0.5 + 0.5 * decayedScore(1, p.at, at, decay.rate_per_day)) };
      });
      const vectors = new Map<string, Float32Array | undefined>();
      const vectorOf = (p: PassageRecord) => {
        if (!vectors.has(p.id)) vectors.set(p.id, embeddings()?.vectorOf("passage", fighterId, p.id));
        return vectors.get(p.id);
      };
      const similarity = (a: { passage: PassageRecord }, b: { passage: PassageRecord }) => {
        const [x, y] = [vectorOf(a.passage), vectorOf(b.passage)];
        return x && y ? cosine(x, y) : wordOverlap(a.passage.text, b.passage.text);
      };
      const picked = newestFirst(
        diverse(ranked, limit, (r) => r.score, similarity),
        (r) => r.passage.at,
        similarity,
      );
      const results = await Promise.all(
        picked.map(async ({ passage: p }): Promise<FoundPassage> => {
          const around = await passages.find({
            where: { bout_id: p.bout_id, seq: { gte: p.seq - WINDOW, lte: p.seq + WINDOW } },
            order: { by: ["seq"] },
          });
          return {
            bout_id: p.bout_id,
            origin: p.origin,
            at: p.at,
            role: p.role,
            text: shown(p.text),
            context: around.map((a) => ({ role: a.role, text: shown(a.text), at: a.at })),
          };
        }),
      );
      const taint: TaintSource[] = [];
      for (const { passage } of picked) if (passage.taint) taint.push(passage.taint);
      return { results, weights: picked.map((r) => r.score), by: meaning ? "words+meaning" : "words", taint };
    },
    async *rows() {
      let after: string | undefined;
      for (;;) {
        const page = await passages.find({ limit: 5_000, ...(after ? { after } : {}) });
        yield page.map((p) => ({ id: p.id, fighter_id: p.fighter_id, text: p.text }));
        if (page.length < 5_000) return;
        after = page[page.length - 1]?.id;
      }
    },
  };
}

const shown = (text: string) => (text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text);
