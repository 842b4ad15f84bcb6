/**
 * A fighter's knowledge graph: entities identified by name and type (any ASCII case), and typed
 * relations between them. Names and types are sealed; HMACs of their folded forms (cipher.ts) carry
 * the identity the unique indexes enforce. A query decrypts the fighter's MAX_SCANNED newest
 * entities and matches them here.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { KgEntity, KgRelation } from "../../sdk/index.js";
import { asciiFold } from "./cipher.js";
import { inTransaction } from "./connection.js";
import { requireLiveFighter, type StoreContext, type StoreData } from "./context.js";
import { countMatches, matchWords } from "./word-match.js";

/** The type given to an entity that first appears as a relation's endpoint. */
export const IMPLIED_ENTITY_TYPE = "thing";
/** How many of a fighter's entities a query decrypts at most: the newest ones. */
export const MAX_SCANNED = 10_000;

interface EntityDbRow {
  seq: number;
  id: string;
  name: Buffer;
  type: Buffer;
}

interface RelationDbRow {
  from_name: Buffer;
  to_name: Buffer;
  type: Buffer;
}

type Knowledge = StoreData["knowledge"];
type AddCounts = Awaited<ReturnType<Knowledge["add"]>>;

export function createKnowledge(ctx: StoreContext): Knowledge {
  const { pool, cipher, now } = ctx;
  const nameMac = (fighterId: string, name: string) =>
    cipher.mac("kg.name", `${fighterId}\0${asciiFold(name)}`);

  async function insertEntity(
    client: pg.PoolClient,
    fighterId: string,
    id: string,
    name: string,
    type: string,
  ) {
    const inserted = await client.query(
      `INSERT INTO kg_entities (id, fighter_id, name, type, identity_mac, name_mac, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (fighter_id, identity_mac) DO NOTHING`,
      [
        id,
        fighterId,
        cipher.seal("kg_entities.name", name),
        cipher.seal("kg_entities.type", type),
        cipher.mac("kg.identity", `${fighterId}\0${asciiFold(name)}\0${asciiFold(type)}`),
        nameMac(fighterId, name),
        now(),
      ],
    );
    return (inserted.rowCount ?? 0) > 0;
  }

  const relationsOf = async (db: pg.PoolClient, id: string): Promise<KgRelation[]> =>
    (
      await db.query<RelationDbRow>(
        `SELECT f.name AS from_name, t.name AS to_name, r.type FROM kg_relations r
         JOIN kg_entities f ON f.id = r.from_id JOIN kg_entities t ON t.id = r.to_id
         WHERE r.from_id = $1 OR r.to_id = $1 ORDER BY r.created_at, r.seq`,
        [id],
      )
    ).rows.map((row) => ({
      from: cipher.open("kg_entities.name", row.from_name),
      to: cipher.open("kg_entities.name", row.to_name),
      type: cipher.open("kg_relations.type", row.type),
    }));

  return {
    add: (fighterId, entities, relations) =>
      inTransaction(pool, async (client) => {
        await requireLiveFighter(client, fighterId);
        // Concurrent adds for one fighter take turns, so "resolve or create" below cannot race.
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:kg:${fighterId}`]);
        const counts: AddCounts = { entities_added: 0, entities_merged: 0, relations_added: 0 };
        for (const { name, type } of entities) {
          if (await insertEntity(client, fighterId, randomUUID(), name, type)) counts.entities_added += 1;
          else counts.entities_merged += 1;
        }
        // An endpoint is a name of any type; with several, the oldest entity of that name is meant.
        const resolve = async (name: string): Promise<string> => {
          const found = await client.query<{ id: string }>(
            "SELECT id FROM kg_entities WHERE fighter_id = $1 AND name_mac = $2 ORDER BY created_at, seq LIMIT 1",
            [fighterId, nameMac(fighterId, name)],
          );
          if (found.rows[0]) return found.rows[0].id;
          const id = randomUUID();
          await insertEntity(client, fighterId, id, name, IMPLIED_ENTITY_TYPE);
          counts.entities_added += 1;
          return id;
        };
        for (const relation of relations) {
          const from = await resolve(relation.from);
          const to = await resolve(relation.to);
          const added = await client.query(
            `INSERT INTO kg_relations (fighter_id, from_id, to_id, type, type_mac, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (from_id, to_id, type_mac) DO NOTHING`,
            [
              fighterId,
              from,
              to,
              cipher.seal("kg_relations.type", relation.type),
              cipher.mac("kg.relation", `${fighterId}\0${asciiFold(relation.type)}`),
              now(),
            ],
          );
          counts.relations_added += added.rowCount ?? 0;
        }
        return counts;
      }),
    async query(fighterId, words, limit) {
      const max = Math.floor(limit);
      if (!Number.isSafeInteger(max) || max < 1) return [];
      const bound = matchWords(words);
      // REPEATABLE READ: the entities and their relations come from the same snapshot.
      return inTransaction(
        pool,
        async (client) => {
          const rows = (
            await client.query<EntityDbRow>(
              "SELECT seq, id, name, type FROM kg_entities WHERE fighter_id = $1 ORDER BY created_at DESC, seq DESC LIMIT $2",
              [fighterId, MAX_SCANNED],
            )
          ).rows;
          const entities = rows.map((row) => ({
            seq: row.seq,
            id: row.id,
            name: cipher.open("kg_entities.name", row.name),
            type: cipher.open("kg_entities.type", row.type),
          }));
          const chosen =
            bound.length === 0
              ? entities.slice(0, max)
              : entities
                  .map((e) => ({ ...e, matches: countMatches(bound, e.name, e.type) }))
                  .filter((e) => e.matches > 0)
                  // Most words matched first, then by name (folded, then as written), then oldest.
                  .sort(
                    (a, b) =>
                      b.matches - a.matches ||
                      compare(a.name.toLowerCase(), b.name.toLowerCase()) ||
                      compare(a.name, b.name) ||
                      a.seq - b.seq,
                  )
                  .slice(0, max);
          const found: (KgEntity & { relations: KgRelation[] })[] = [];
          for (const e of chosen)
            found.push({ name: e.name, type: e.type, relations: await relationsOf(client, e.id) });
          return found;
        },
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
      );
    },
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
