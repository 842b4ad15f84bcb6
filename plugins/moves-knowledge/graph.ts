/**
 * A fighter's knowledge graph, in this plugin's collections (plugin.json): entities identified by
 * name and type in any ASCII case (their folded forms carry the identity the unique index
 * enforces), and typed relations between them, each holding its endpoints' names as first spelled
 * (an entity is never renamed), so the graph reads back without joins.
 */
import { randomUUID } from "node:crypto";
import type { Collection, PluginData, RingServices, TxCollection } from "../../sdk/index.js";
import { isSparError, MAX_RANK_ROWS } from "../../sdk/index.js";
import { fuse } from "../../sdk/kits/recall.js";

export type KgEntity = {
  name: string;
  type: string;
};

export type KgRelation = {
  from: string;
  to: string;
  type: string;
};

export interface AddCounts {
  entities_added: number;
  entities_merged: number;
  relations_added: number;
}

/** An entity as stored in `entities` (types, not interfaces, so that they are Docs). */
export type EntityDoc = KgEntity & {
  id: string;
  fighter_id: string;
  name_folded: string;
  type_folded: string;
  created_at: string;
};

/** A relation as stored in `relations`: `from` and `to` are its endpoints' names. */
export type RelationDoc = KgRelation & {
  id: string;
  fighter_id: string;
  from_id: string;
  to_id: string;
  type_folded: string;
  created_at: string;
};

/** The type given to an entity that first appears as a relation's endpoint. */
export const IMPLIED_ENTITY_TYPE = "thing";
/** How many of a fighter's entities a query reads at most: the newest ones. */
export const MAX_SCANNED = 10_000;
/** Tries of an add that met another node's add of the same entity or relation (CONFLICT). */
const TRIES = 3;

export interface KnowledgeGraph {
  /**
   * Adds entities and relations; an entity with the same name and type (any case) is merged.
   * `made` is told the entities it stored, once they are.
   */
  add(
    fighterId: string,
    entities: KgEntity[],
    relations: KgRelation[],
    made?: (entities: EntityDoc[]) => void,
  ): Promise<AddCounts>;
  /**
   * Entities whose name or type holds any of `words` (a word, a word it begins, a form of it), best
   * first, each with every relation it takes part in; no words: the newest entities. With `meaning`
   * (the ids of the entities nearest the query by meaning, best first, each with its weight), the
   * two rankings are fused.
   */
  query(
    fighterId: string,
    words: readonly string[],
    limit: number,
    meaning?: { ids: string[]; weights: number[] },
  ): Promise<(KgEntity & { relations: KgRelation[] })[]>;
}

/**
 * ASCII-only lowercase, as the stores' entity identity always was (SQLite's lower()): "Café" and
 * "CAFÉ" stay two entities.
 */
export function asciiFold(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * The graph over the plugin's data; `fighters.get` refuses (FIGHTER_NOT_FOUND) a fighter that is not live.
 *
 * @example
 * const graph = createKnowledgeGraph(api.data, api.ring.fighters);
 * await graph.add(fighter.id, [{ name: "Ada", type: "person" }], []);
 */
export function createKnowledgeGraph(
  data: PluginData,
  fighters: Pick<RingServices["fighters"], "get">,
  now: () => number = Date.now,
): KnowledgeGraph {
  const entities = data.entities as Collection<EntityDoc>;
  const relations = data.relations as Collection<RelationDoc>;
  // Strictly increasing within the daemon, so "oldest" and "newest" never tie on one millisecond.
  let last = 0;
  const stamp = () => {
    last = Math.max(now(), last + 1);
    return new Date(last).toISOString();
  };

  function addOnce(
    fighterId: string,
    wanted: KgEntity[],
    links: KgRelation[],
  ): Promise<AddCounts & { added: EntityDoc[] }> {
    return data.transaction(async (tx) => {
      const held = {
        entities: tx.entities as TxCollection<EntityDoc>,
        relations: tx.relations as TxCollection<RelationDoc>,
      };
      const counts: AddCounts = { entities_added: 0, entities_merged: 0, relations_added: 0 };
      // What this transaction writes, oldest first: its reads do not see it.
      const made: EntityDoc[] = [];
      const insert = (name: string, type: string): EntityDoc => {
        const doc: EntityDoc = {
          id: randomUUID(),
          fighter_id: fighterId,
          name,
          type,
          name_folded: asciiFold(name),
          type_folded: asciiFold(type),
          created_at: stamp(),
        };
        held.entities.insert(doc);
        made.push(doc);
        return doc;
      };
      for (const { name, type } of wanted) {
        const [name_folded, type_folded] = [asciiFold(name), asciiFold(type)];
        const known =
          made.some((e) => e.name_folded === name_folded && e.type_folded === type_folded) ||
          (await held.entities.count({ fighter_id: fighterId, name_folded, type_folded })) > 0;
        if (known) counts.entities_merged += 1;
        else {
          insert(name, type);
          counts.entities_added += 1;
        }
      }
      // An endpoint is a name of any type; with several, the oldest entity of that name is meant.
      const resolve = async (name: string): Promise<EntityDoc> => {
        const name_folded = asciiFold(name);
        const [stored] = await held.entities.find({
          where: { fighter_id: fighterId, name_folded },
          order: { by: ["created_at"] },
          limit: 1,
        });
        const found = stored ?? made.find((e) => e.name_folded === name_folded);
        if (found) return found;
        counts.entities_added += 1;
        return insert(name, IMPLIED_ENTITY_TYPE);
      };
      const linked = new Set<string>();
      for (const link of links) {
        const from = await resolve(link.from);
        const to = await resolve(link.to);
        const type_folded = asciiFold(link.type);
        const identity = `${from.id}\0${to.id}\0${type_folded}`;
        if (linked.has(identity)) continue;
        linked.add(identity);
        const taken = await held.relations.count({ from_id: from.id, to_id: to.id, type_folded });
        if (taken > 0) continue;
        held.relations.insert({
          id: randomUUID(),
          fighter_id: fighterId,
          from_id: from.id,
          to_id: to.id,
          from: from.name,
          to: to.name,
          type: link.type,
          type_folded,
          created_at: stamp(),
        });
        counts.relations_added += 1;
      }
      return { ...counts, added: made };
    });
  }

  /** Both directions, in the order they were added. */
  async function relationsOf(id: string): Promise<KgRelation[]> {
    const order = { by: ["created_at"] };
    const [out, into] = await Promise.all([
      relations.find({ where: { from_id: id }, order }),
      relations.find({ where: { to_id: id }, order }),
    ]);
    const all = new Map([...out, ...into].map((r) => [r.id, r]));
    return [...all.values()]
      .sort((a, b) => compare(a.created_at, b.created_at))
      .map(({ from, to, type }) => ({ from, to, type }));
  }

  return {
    async add(fighterId, wanted, links, made) {
      await fighters.get(fighterId);
      // Another node adding the same new entity or relation at once makes this CONFLICT: again, it finds theirs.
      for (let attempt = 1; ; attempt++) {
        try {
          const { added, ...counts } = await addOnce(fighterId, wanted, links);
          made?.(added);
          return counts;
        } catch (err) {
          if (attempt >= TRIES || !isSparError(err) || err.code !== "CONFLICT") throw err;
        }
      }
    },
    async query(fighterId, words, limit, meaning) {
      const max = Math.min(Math.floor(limit), MAX_SCANNED);
      if (!Number.isSafeInteger(max) || max < 1) return [];
      const where = { fighter_id: fighterId };
      // The word index ranks (Collection.rank); rows that score alike keep the order by name, then the oldest.
      const byWords =
        words.length === 0
          ? []
          : (await entities.rank(words.join(" "), { where, limit: Math.min(max, MAX_RANK_ROWS) }))
              .map((hit, i) => ({ ...hit, i }))
              .sort(
                (a, b) =>
                  b.score - a.score ||
                  compare(a.doc.name.toLowerCase(), b.doc.name.toLowerCase()) ||
                  compare(a.doc.name, b.doc.name) ||
                  a.i - b.i,
              )
              .map((hit) => hit.doc);
      let chosen = byWords;
      if (meaning && meaning.ids.length > 0) {
        const known = new Map(byWords.map((e) => [e.id, e]));
        for (const id of meaning.ids.filter((id) => !known.has(id))) {
          const doc = await entities.get(id);
          if (doc?.fighter_id === fighterId) known.set(id, doc);
        }
        const fused = fuse([
          { ids: byWords.map((e) => e.id) },
          { ids: meaning.ids, weights: meaning.weights },
        ]);
        chosen = [...fused]
          .filter(([id]) => known.has(id))
          .sort((a, b) => b[1] - a[1])
          .slice(0, max)
          .map(([id]) => known.get(id) as EntityDoc);
      }
      if (words.length === 0 && chosen.length === 0) {
        chosen = await entities.find({ where, order: { by: ["created_at"], desc: true }, limit: max });
      }
      return Promise.all(
        chosen.map(async (e) => ({ name: e.name, type: e.type, relations: await relationsOf(e.id) })),
      );
    },
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
