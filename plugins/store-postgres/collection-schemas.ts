/**
 * Each collection's record (`collection_schemas`: the declaration's version and checksum, and the
 * slot layout its rows follow) and what `ensure` makes of a declaration: its partial expression
 * indexes, `WHERE namespace = … AND collection = …`, over the slots of its fields.
 */
import type pg from "pg";
import type { CollectionRef } from "../../sdk/index.js";
import { SparError, searchedFields } from "../../sdk/index.js";
import type { Cipher } from "./cipher.js";
import { indexPrefix, type Layout, layoutOf, scopeSql, slotRows, slotSql } from "./collection-rows.js";
import { type Db, inTransaction, isUniqueViolation } from "./connection.js";

interface SchemaRow {
  version: number;
  checksum: string;
  layout: string;
  reslot: boolean;
  /** The fields the rows' `words` were made from (JSON), NULL for none (collection-words.ts). */
  search: string | null;
}

async function read(db: Db, ref: CollectionRef): Promise<SchemaRow | undefined> {
  const { rows } = await db.query<SchemaRow>(
    "SELECT version, checksum, layout, reslot, search FROM collection_schemas WHERE namespace = $1 AND collection = $2",
    [ref.namespace, ref.name],
  );
  return rows[0];
}

/**
 * Makes the collection's storage, or brings it up to date, under a lock per collection (daemons
 * sharing the database make it once): refuses a declaration changed under its recorded version or
 * older than it (PLUGIN_INVALID), and on a new version drops the old indexes, slots the rows anew and
 * makes the declared ones.
 */
export async function ensureCollection(
  pool: pg.Pool,
  cipher: Cipher,
  ref: CollectionRef,
  checksum: string,
  now: string,
): Promise<void> {
  const scope = scopeSql(ref);
  const { namespace, name, declaration } = ref;
  const fields = searchedFields(declaration);
  const search = fields.length === 0 ? null : JSON.stringify(fields);
  const settled = (r: SchemaRow | undefined) =>
    r !== undefined &&
    r.version === declaration.version &&
    r.checksum === checksum &&
    !r.reslot &&
    r.search === search;
  if (settled(await read(pool, ref))) return;
  const layout = layoutOf(declaration);
  try {
    await inTransaction(pool, async (client) => {
      // Daemons sharing the database make a collection once: the others wait, then find it made.
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
        `spar:collection:${namespace}/${name}`,
      ]);
      const recorded = await read(client, ref);
      refuseChanged(ref, checksum, recorded);
      if (settled(recorded)) return;
      const changed = recorded?.version !== declaration.version;
      const prefix = indexPrefix(ref);
      if (changed) {
        const { rows } = await client.query<{ indexname: string }>(
          "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND left(indexname, length($1)) = $1",
          [prefix],
        );
        for (const { indexname } of rows) await client.query(`DROP INDEX "${indexname}"`);
      }
      if (recorded && recorded.layout === JSON.stringify(layout)) {
        // The same slots: rows slotted under the recorded version need nothing but the new number.
        await client.query(`UPDATE collection_rows SET layout = $1 WHERE ${scope} AND layout = $2`, [
          declaration.version,
          recorded.version,
        ]);
      }
      // Searched fields not the recorded ones (or a schema from before words): every row made again.
      if (recorded && recorded.search !== search) {
        await client.query(`UPDATE collection_rows SET layout = 0 WHERE ${scope}`);
      }
      await slotRows(client, cipher, ref, layout);
      if (changed) await createIndexes(client, ref, layout, scope, prefix);
      await client.query(
        `INSERT INTO collection_schemas (namespace, collection, version, checksum, layout, reslot, updated_at, search)
         VALUES ($1, $2, $3, $4, $5, false, $6, $7)
         ON CONFLICT (namespace, collection) DO UPDATE SET version = excluded.version, checksum = excluded.checksum,
           layout = excluded.layout, reslot = false, updated_at = excluded.updated_at, search = excluded.search`,
        [namespace, name, declaration.version, checksum, JSON.stringify(layout), now, search],
      );
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      const fields = uniqueFields(ref, err);
      throw new SparError(
        "PLUGIN_INVALID",
        `collection ${namespace}/${name}: rows already share ${fields ? fields.join(", ") : "a unique field"}, so they cannot be made unique`,
        { plugin: namespace },
      );
    }
    throw err;
  }
}

/** PLUGIN_INVALID for a declaration older than the recorded one, or changed under the same version. */
function refuseChanged(ref: CollectionRef, checksum: string, recorded: SchemaRow | undefined): void {
  const { namespace, name, declaration } = ref;
  if (!recorded) return;
  if (recorded.version > declaration.version) {
    throw new SparError(
      "PLUGIN_INVALID",
      `collection ${namespace}/${name}: the database holds version ${recorded.version}, newer than the plugin's ${declaration.version}; run the Spar that wrote it`,
      { plugin: namespace },
    );
  }
  if (recorded.version === declaration.version && recorded.checksum !== checksum) {
    throw new SparError(
      "PLUGIN_INVALID",
      `collection ${namespace}/${name}: its declaration changed under version ${declaration.version} (checksum ${recorded.checksum.slice(0, 12)}… recorded, ${checksum.slice(0, 12)}… now); bump its version`,
      { plugin: namespace },
    );
  }
}

async function createIndexes(
  client: Db,
  ref: CollectionRef,
  layout: Layout,
  scope: string,
  prefix: string,
): Promise<void> {
  const lists: [boolean, string[]][] = [
    ...(ref.declaration.indexes ?? []).map((l): [boolean, string[]] => [false, l]),
    ...(ref.declaration.unique ?? []).map((l): [boolean, string[]] => [true, l]),
  ];
  for (const [i, [unique, fields]] of lists.entries()) {
    const columns = [...fields.map((f) => `(${slotSql(layout[f] ?? "")})`), ...(unique ? [] : ["seq"])];
    await client.query(
      `CREATE ${unique ? "UNIQUE " : ""}INDEX "${prefix}${i}" ON collection_rows (${columns.join(", ")}) WHERE ${scope}`,
    );
  }
}

export function uniqueFields(ref: CollectionRef, err: unknown): string[] | undefined {
  const constraint = String((err as { constraint?: unknown } | undefined)?.constraint ?? "");
  const prefix = indexPrefix(ref);
  if (!constraint.startsWith(prefix)) return undefined;
  return [...(ref.declaration.indexes ?? []), ...(ref.declaration.unique ?? [])][
    Number(constraint.slice(prefix.length))
  ];
}
