/**
 * Past conversations as memory: what the user and a fighter holding `memory` said in each turn (not
 * tool results), copied after the turn into the plugin's `passages` collection, where the store's full-text index
 * and the embeddings find it. `conversation_search` reads only the fighter's own bouts, and of those
 * only its current bout's origin unless a `memory` grant's `scope` names more.
 */
import type {
  Capability,
  Collection,
  DecayConfig,
  FighterRow,
  MoveContext,
  PluginData,
  RingServices,
  TaintSource,
  TurnSummary,
  TxCollection,
} from "../../sdk/index.js";
import type { Embeddings } from "../../sdk/kits/recall.js";
import { closeness, fuse, pick } from "../../sdk/kits/recall.js";
import { decayedScore } from "../../sdk/kits/text.js";
import { candidatesFor, searchWords } from "./memories.js";

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
/** `state` records: the first start's copy done; the newest passage copied. */
const BACKFILLED = "passages-backfilled";
const THROUGH = "passages-through";
/** How far before the newest copied passage a start looks again for messages a crash left uncopied. */
const CATCH_UP_MARGIN_MS = 60_000;
/** Messages copied per write when a start copies a bout. */
const COPY_BATCH = 500;

const isSpoken = (role: string): role is "user" | "assistant" => role === "user" || role === "assistant";

/** A user's bouts are `user`; a channel chat's words come from whoever wrote in it. */
function originTaint(origin: string): TaintSource | undefined {
  if (origin.startsWith("channel:")) return { kind: "channel", detail: origin.slice("channel:".length) };
  if (origin.startsWith("fighter:")) return { kind: "fighter", detail: origin.slice("fighter:".length) };
  return undefined;
}

/** Whether a fighter's conversations are copied: it holds `memory` (or `full_access`), so it can search them. */
export function remembers(fighter: Pick<FighterRow, "manifest">): boolean {
  return (fighter.manifest.capabilities ?? []).some((c) => c.type === "memory" || c.type === "full_access");
}

/** The passages of a finished turn: its spoken messages, each with the seq it has in the bout. */
export function turnPassages(turn: TurnSummary, at: string): PassageRecord[] {
  const out: PassageRecord[] = [];
  if (!remembers(turn.fighter)) return out;
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
  /**
   * Copies a finished turn's words. Turns that end together are written in one transaction, on the
   * next turn of the event loop: the caller need not wait (a turn.after tap does not, so the
   * fighter's next turn never queues behind this write); the promise says when they are stored.
   */
  index(turn: TurnSummary): Promise<PassageRecord[]>;
  /**
   * Copies the messages not copied yet: every live fighter's bouts at the first start, then those
   * written since a minute before the newest copied (what a crash may have left uncopied).
   */
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

  /** Writes the records not written yet, and the newest time copied, in one transaction. */
  async function store(records: PassageRecord[]): Promise<PassageRecord[]> {
    if (records.length === 0) return [];
    const added = await data.transaction(async (tx) => {
      const held = tx.passages as TxCollection<PassageRecord>;
      const found = await Promise.all(records.map((r) => held.get(r.id)));
      const seen = new Set<string>();
      const fresh = records.filter((r, i) => !found[i] && !seen.has(r.id) && seen.add(r.id));
      for (const r of fresh) held.put(r);
      const newest = records.reduce((m, r) => (r.at > m ? r.at : m), "");
      const mark = (await tx.state?.get(THROUGH)) as { value: string } | undefined;
      if (!mark || newest > mark.value) tx.state?.put({ id: THROUGH, value: newest });
      return fresh;
    });
    for (const r of added) embeddings()?.enqueue("passage", r.fighter_id, r.id, r.text);
    return added;
  }

  let pending: PassageRecord[] = [];
  let batch: Promise<PassageRecord[]> | undefined;

  /** A fighter's messages in its bouts updated since `since` (all when absent), as passages. */
  async function copy(
    ring: Pick<RingServices, "fighters" | "bouts">,
    since?: string,
  ): Promise<PassageRecord[]> {
    const added: PassageRecord[] = [];
    for (const fighter of await ring.fighters.list()) {
      if (!remembers({ manifest: await ring.fighters.manifest(fighter.id) })) continue;
      for (const bout of await ring.fighters.bouts(fighter.id)) {
        if (since && bout.updated_at < since) continue;
        const origin = bout.origin ?? "user";
        const records: PassageRecord[] = [];
        for (const m of await ring.bouts.messages(bout.id)) {
          if (!isSpoken(m.role) || m.content.trim() === "" || (since && m.created_at < since)) continue;
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
        // A long bout in several writes: each transaction stays well within its time limit.
        for (let i = 0; i < records.length; i += COPY_BATCH)
          added.push(...(await store(records.slice(i, i + COPY_BATCH))));
      }
    }
    return added;
  }

  return {
    index(turn) {
      pending.push(...turnPassages(turn, new Date(now()).toISOString()));
      batch ??= new Promise<void>((done) => setImmediate(done)).then(() => {
        const records = pending;
        pending = [];
        batch = undefined;
        return store(records);
      });
      const mine = new Set(turnPassages(turn, "").map((p) => p.id));
      return batch.then((added) => added.filter((p) => mine.has(p.id)));
    },
    async backfill(ring) {
      if (!(await state.get(BACKFILLED))) {
        const added = await copy(ring);
        await state.put({ id: BACKFILLED, value: new Date(now()).toISOString() });
        return added;
      }
      const through = (await state.get(THROUGH))?.value;
      if (!through) return [];
      return copy(ring, new Date(Date.parse(through) - CATCH_UP_MARGIN_MS).toISOString());
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
      const picked = pick(ranked, limit, {
        score: (r) => r.score,
        id: (r) => r.passage.id,
        vector: (id) => embeddings()?.vectorOf("passage", fighterId, id),
        text: (r) => r.passage.text,
        writtenAt: (r) => r.passage.at,
      });
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
