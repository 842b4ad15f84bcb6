/**
 * Memories and the knowledge graph as this store kept them before their plugins owned them (issue
 * 29): the `memories`, `kg_entities` and `kg_relations` tables of migration 1, sealed. SQL alone
 * cannot move them (it has no key), so at open, once the key is known, their rows are opened and
 * handed to the plugins' collections (moves-memory's `memories`, moves-knowledge's `entities` and
 * `relations`) in the order they were written, and the tables dropped (legacy.ts).
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { asciiFold, type Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import type { Db } from "./connection.js";
import { moveLegacy } from "./legacy.js";

interface MemoryRow {
  id: string;
  fighter_id: string;
  key: Buffer;
  value: Buffer;
  score0: number;
  scored_at: string;
  created_at: string;
}

interface EntityRow {
  id: string;
  fighter_id: string;
  name: Buffer;
  type: Buffer;
  created_at: string;
}

interface RelationRow {
  fighter_id: string;
  from_id: string;
  to_id: string;
  type: Buffer;
  created_at: string;
}

const TABLES = ["memories", "kg_entities", "kg_relations"] as const;

/** Moves the legacy memory and knowledge rows into the plugins' collections; how many rows it moved. */
export function moveLegacyMemory(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  return moveLegacy(pool, schema, TABLES, async (client, tables) => {
    let moved = 0;
    if (tables.has("memories")) moved += await moveMemories(client, cipher);
    if (tables.has("kg_entities")) moved += await moveGraph(client, cipher, tables.has("kg_relations"));
    return moved;
  });
}

async function moveMemories(client: Db, cipher: Cipher): Promise<number> {
  const rows = (
    await client.query<MemoryRow>(
      "SELECT id, fighter_id, key, value, score0, scored_at, created_at FROM memories ORDER BY seq",
    )
  ).rows;
  await importDocs(
    client,
    cipher,
    "moves-memory",
    "memories",
    rows.map((r) => ({
      key: r.id,
      doc: {
        id: r.id,
        fighter_id: r.fighter_id,
        key: cipher.open("memories.key", r.key),
        value: cipher.open("memories.value", r.value),
        score0: r.score0,
        scored_at: r.scored_at,
        created_at: r.created_at,
      },
    })),
  );
  await client.query("DROP TABLE memories");
  return rows.length;
}

/** Entities keep their ids; relations get keys of their own and hold their endpoints' names. */
async function moveGraph(client: Db, cipher: Cipher, withRelations: boolean): Promise<number> {
  const entities = (
    await client.query<EntityRow>(
      "SELECT id, fighter_id, name, type, created_at FROM kg_entities ORDER BY seq",
    )
  ).rows.map((r) => {
    const name = cipher.open("kg_entities.name", r.name);
    const type = cipher.open("kg_entities.type", r.type);
    return {
      id: r.id,
      fighter_id: r.fighter_id,
      name,
      type,
      name_folded: asciiFold(name),
      type_folded: asciiFold(type),
      created_at: r.created_at,
    };
  });
  await importDocs(
    client,
    cipher,
    "moves-knowledge",
    "entities",
    entities.map((doc) => ({ key: doc.id, doc })),
  );
  let relations: RelationRow[] = [];
  if (withRelations) {
    relations = (
      await client.query<RelationRow>(
        "SELECT fighter_id, from_id, to_id, type, created_at FROM kg_relations ORDER BY seq",
      )
    ).rows;
    const names = new Map(entities.map((e) => [e.id, e.name]));
    await importDocs(
      client,
      cipher,
      "moves-knowledge",
      "relations",
      relations.map((r) => {
        const type = cipher.open("kg_relations.type", r.type);
        const id = randomUUID();
        return {
          key: id,
          doc: {
            id,
            fighter_id: r.fighter_id,
            from_id: r.from_id,
            to_id: r.to_id,
            from: names.get(r.from_id) ?? "",
            to: names.get(r.to_id) ?? "",
            type,
            type_folded: asciiFold(type),
            created_at: r.created_at,
          },
        };
      }),
    );
    await client.query("DROP TABLE kg_relations");
  }
  await client.query("DROP TABLE kg_entities");
  return entities.length + relations.length;
}
