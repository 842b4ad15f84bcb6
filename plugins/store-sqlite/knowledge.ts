/**
 * A fighter's knowledge graph: entities identified by name and type (any case), and typed relations
 * between them. Relations name their endpoints, so the graph reads back without ids.
 */
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3-multiple-ciphers";
import type { KgEntity, KgRelation } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";
import { FOLD, matchCountSql, matchWords, statementsByWordCount } from "./word-match.js";

/** The type given to an entity that first appears as a relation's endpoint. */
export const IMPLIED_ENTITY_TYPE = "thing";

interface EntityDbRow {
  id: string;
  name: string;
  type: string;
}

type Knowledge = StoreData["knowledge"];
type AddCounts = ReturnType<Knowledge["add"]>;

export function createKnowledge(
  db: Database.Database,
  now: () => string,
  requireLiveFighter: (fighterId: string) => void,
): Knowledge {
  const s = {
    // The conflict target is the unique index on lower(name), lower(type): the first spelling stays.
    insertEntity: db.prepare<[string, string, string, string, string], void>(
      `INSERT INTO kg_entities (id, fighter_id, name, type, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (fighter_id, lower(name), lower(type)) DO NOTHING`,
    ),
    // The same lower() as the merge. Left to itself the planner walks all the fighter's entities in
    // kg_entities_recent to save sorting the one or two rows a name has.
    entityByName: db
      .prepare<[string, string], string>(
        `SELECT id FROM kg_entities INDEXED BY kg_entities_identity
         WHERE fighter_id = ? AND lower(name) = lower(?) ORDER BY created_at, rowid LIMIT 1`,
      )
      .pluck(),
    insertRelation: db.prepare<[string, string, string, string, string], void>(
      `INSERT INTO kg_relations (fighter_id, from_id, to_id, type, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (from_id, to_id, lower(type)) DO NOTHING`,
    ),
    relationsOf: db.prepare<[{ id: string }], KgRelation>(
      `SELECT f.name AS "from", t.name AS "to", r.type FROM kg_relations r
       JOIN kg_entities f ON f.id = r.from_id JOIN kg_entities t ON t.id = r.to_id
       WHERE r.from_id = @id OR r.to_id = @id ORDER BY r.created_at, r.rowid`,
    ),
  };
  const entitiesFor = statementsByWordCount<EntityDbRow>(db, entitiesSql);

  const add = db.transaction((fighterId: string, entities: KgEntity[], relations: KgRelation[]) => {
    requireLiveFighter(fighterId);
    const counts: AddCounts = { entities_added: 0, entities_merged: 0, relations_added: 0 };
    const insert = (id: string, name: string, type: string): boolean =>
      s.insertEntity.run(id, fighterId, name, type, now()).changes > 0;
    for (const { name, type } of entities) {
      if (insert(randomUUID(), name, type)) counts.entities_added += 1;
      else counts.entities_merged += 1;
    }
    // An endpoint is a name of any type; with several, the oldest entity of that name is meant.
    const resolve = (name: string): string => {
      const found = s.entityByName.get(fighterId, name);
      if (found !== undefined) return found;
      const id = randomUUID();
      insert(id, name, IMPLIED_ENTITY_TYPE);
      counts.entities_added += 1;
      return id;
    };
    for (const relation of relations) {
      const from = resolve(relation.from);
      const to = resolve(relation.to);
      counts.relations_added += s.insertRelation.run(fighterId, from, to, relation.type, now()).changes;
    }
    return counts;
  });

  // One read transaction, so the entities and their relations come from the same snapshot.
  const query = db.transaction((fighterId: string, words: string[], limit: number) => {
    const bound = matchWords(words);
    return entitiesFor(bound.length)
      .all(fighterId, ...bound, limit)
      .map(({ id, name, type }) => ({ name, type, relations: s.relationsOf.all({ id }) }));
  });

  return {
    add: (fighterId, entities, relations) => add.immediate(fighterId, entities, relations),
    query(fighterId, words, limit) {
      const max = Math.floor(limit);
      return Number.isSafeInteger(max) && max >= 1 ? query(fighterId, words, max) : [];
    },
  };
}

/** Most words matched first, then by name (folded like the words, see word-match.ts). */
function entitiesSql(wordCount: number): string {
  if (wordCount === 0) {
    return `SELECT id, name, type FROM kg_entities WHERE fighter_id = ?
      ORDER BY created_at DESC, rowid DESC LIMIT ?`;
  }
  return `WITH folded AS MATERIALIZED (
  SELECT id, name, type, rowid AS rid, ${FOLD}(name || char(10) || type) AS hay
  FROM kg_entities WHERE fighter_id = ?
), counted AS (
  SELECT id, name, type, rid, ${matchCountSql(wordCount, "hay")} AS matches FROM folded
)
SELECT id, name, type FROM counted WHERE matches > 0 ORDER BY matches DESC, ${FOLD}(name), name, rid LIMIT ?`;
}
