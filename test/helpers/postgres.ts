/**
 * For tests only: a PostgreSQL schema per test home, and dropping them afterwards. Tests run
 * against a real server named by SPAR_TEST_DATABASE_URL, and are skipped (saying so) without it.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { serviceUrl } from "./ci.js";

/** The test server's URL, or undefined when the PostgreSQL tests are to be skipped (never under CI). */
export const TEST_DATABASE_URL: string | undefined = serviceUrl("SPAR_TEST_DATABASE_URL");

/** Why the PostgreSQL tests were skipped, for a suite's name. */
export const SKIP_REASON =
  "skipped: SPAR_TEST_DATABASE_URL is not set (point it at a PostgreSQL 15+ database)";

/** The schema a test home's store lives in: `t_` and a sha256 prefix of the path. */
export function schemaForHome(home: string): string {
  return `t_${createHash("sha256").update(home).digest("hex").slice(0, 20)}`;
}

/** Drops `schemas` with everything in them (a schema that does not exist is fine). */
export async function dropSchemas(url: string, schemas: Iterable<string>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const schema of schemas) {
      if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`not a schema name: ${schema}`);
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  } finally {
    await client.end();
  }
}
