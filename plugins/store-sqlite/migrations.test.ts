/**
 * store-sqlite's migrations: a new database is made from the baseline, and has the schema a database
 * of the previous release (the upgrade fixture) upgrades to; an applied history is checked (checksums
 * pinned; a changed or unknown migration, a newer database and one older than the previous release
 * refused); pending migrations apply all or nothing. What the migrations move into plugins'
 * collections is tested for every store in test/contract/store-upgrade.test.ts.
 */
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { queryRows } from "../../test/helpers/db.js";
import { cleanUp, tempHome } from "../../test/helpers/plugin-data.js";
import { UPGRADE_FIXTURES } from "../../test/helpers/previous-release.js";
import { deriveKey, rawKeyLiteral } from "./key.js";
import { BASELINE_VERSION, checksum, MIGRATIONS, type Migration, migrate, RETIRED } from "./migrations.js";
import { openRetained } from "./retain.js";
import { DB_FILE, openSqliteStore, SALT_FILE } from "./store.js";

const SECRET = "migrations";
const HISTORY = [
  ...RETIRED,
  ...MIGRATIONS.map((m) => ({ version: m.version, name: m.name, checksum: checksum(m.sql) })),
];
const NEWEST = Math.max(...HISTORY.map((m) => m.version));

afterAll(cleanUp);

const open = (home: string, secret = Buffer.from(SECRET)) => openSqliteStore({ home, masterSecret: secret });

/** A new database, made by the store and closed. */
async function newHome(): Promise<string> {
  const home = tempHome();
  await (await open(home)).close();
  return home;
}

/** Runs `sql` on the database behind the store's back, as someone editing it by hand would. */
async function edit(home: string, sql: string): Promise<void> {
  const db = openRetained(join(home, DB_FILE), {});
  try {
    db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
    db.key(rawKeyLiteral(await deriveKey(Buffer.from(SECRET), readFileSync(join(home, SALT_FILE)))));
    db.exec(sql);
  } finally {
    db.close();
  }
}

/** Every table and index (its SQL, spacing aside: ALTER TABLE writes its own) and the recorded history. */
async function schemaOf(home: string, secret: Buffer) {
  const objects = (await queryRows(
    home,
    "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name",
    secret,
  )) as { type: string; name: string; sql: string | null }[];
  const history = "SELECT version, name, checksum FROM schema_migrations ORDER BY version";
  return {
    objects: objects.map((o) => ({ ...o, sql: o.sql?.replace(/\s+/g, " ").replace(/ ?([(),]) ?/g, "$1") })),
    history: await queryRows(home, history, secret),
  };
}

describe("migrate", () => {
  const plainDb = () => openRetained(":memory:", {});

  it("makes a new database from the baseline, recorded as every version, and applies nothing twice", () => {
    const db = plainDb();
    expect(BASELINE_VERSION).toBe(NEWEST);
    expect(migrate(db, "mem")).toEqual(HISTORY.map((m) => m.version));
    expect(migrate(db, "mem")).toEqual([]);
    expect(
      db.prepare("SELECT version, name, checksum FROM schema_migrations ORDER BY version").all(),
    ).toEqual(HISTORY);
    db.close();
  });

  it("keeps released migrations byte for byte: their checksums are in users' databases", () => {
    expect(HISTORY.map((m) => [m.version, m.checksum])).toEqual([
      [1, "1df85f0b0acb104b6f6b4ed95cef078b267b109903cc769618e0dc8d5a943c55"],
      [2, "1ae3eaa352f8bf4d862e9913d14269d37c2cbcbb89afc964f0788936801098fd"],
      [3, "7053011e25e8422cac2f8f7baea623986ff09df073cd00499200d767736ea825"],
      [4, "9fd716acb463c2b8235e1e7c516672aede75d735576c53f1946ab4ac18c11f09"],
      [5, "9df41fe93f1e5387e66c2f6689e2236df496f867356d8d992f1123e3b6817e32"],
      [6, "f99877f43d88ce3b4a57469d321d2fa86a13b667eb6587a362f8884b6bde8d13"],
      [7, "c6c5554331498ec5103344658507ecd159d619037810a5705adddd29677f36db"],
      [8, "29da9473587ccbad234f005005aac7a0594eb15e11546efe18a8160609faa283"],
      [9, "5dbcd30167287b1abe22d6ddaac30bce896ac7a76a5fc67765f620db608ad3bb"],
      [10, "5c3af4fe6d7772b0bd7247e19d490f65267be5373bba16b41ea55751a33048d0"],
      [11, "ec9b703b576539a7e1491bf59148efe776cdb103cb1493823d5ddac5b02c49d6"],
      [12, "8d9a38ad1cf2e35b907f43d5e863ca56eb429956582e7c9822fa591ddbf48a6d"],
      [13, "1c8c394fb70c7ea241ed5d1d0dfcb9ef4c4a930e9d754804674ab709af0f3233"],
      [14, "75ab8a7818a539998b8b0d24ddbd4c9b958d172b6831c25f44479a54218a103a"],
      [15, "988eb93c982ef6d90561e588e0945f0a9acdd34bc63b172b3214da6814b2111b"],
      [16, "decaeb409eb068467de47ce91ba4888d75bb9733208af413846f28b92d8fee18"],
      [17, "859f4df201ddbea2e68d8eab5a33093cff6937698643ea1dcdecf715da289fed"],
      [18, "5113d0c59e4b3ecc49b57cc285749b81b37cda34656d0f1598c4eb1a5e5adb73"],
      [19, "969223b6fcb5c0a5d5829af154bf2cf1301c73d0cb6fb8406c08f15827533109"],
      [20, "b13b887344b00027a36fa3eb8cd9e9993a3b0a9b08fca05a34ae8ef83fbaf8ff"],
      [21, "c1d9a1e443fb2f3c8afa5e838784d048b6da4fea6f567075c24c14e946e3f7bc"],
      [22, "5af42dfba1e273e94c58f8cc679aac2403640474600225dc7e40cf1ba3425391"],
      [23, "8524956c0b41f8522d2f80555500db893a8b60fdd19cde53d9ca0aae6a8462f3"],
    ]);
  });

  it("gives a new database the schema a database of the previous release is upgraded to", async () => {
    const upgraded = tempHome();
    cpSync(join(UPGRADE_FIXTURES, "sqlite"), upgraded, { recursive: true });
    const fixtureSecret = readFileSync(join(upgraded, "master.key"));
    await (await open(upgraded, Buffer.from(fixtureSecret))).close();
    const baseline = await schemaOf(await newHome(), Buffer.from(SECRET));
    expect(baseline).toEqual(await schemaOf(upgraded, fixtureSecret));
    // The Ring's records and the plugins' collections; none of the tables that moved into collections.
    expect(baseline.objects.filter((o) => o.type === "table").map((o) => o.name)).toEqual([
      "bout_summaries",
      "bouts",
      "collection_rows",
      "collection_schemas",
      "collection_search",
      // (The word indexes, one FTS5 table per collection that searches, are made on first use.)
      "fighters",
      "idempotency",
      "messages",
      "nonces",
      "schema_migrations",
      "turns",
      "usage",
    ]);
  });

  // Each edit of a new database's history, and how opening it is refused.
  const REFUSALS: { what: string; edit: string; code: string; message: RegExp; extra?: object }[] = [
    {
      what: "a released migration whose checksum changed",
      edit: "UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1",
      code: "STORE_FAILED",
      message: /migration 1 \(fighters-bouts-messages-memories\) .*the recorded checksum does not match/,
    },
    {
      what: "a migration of the upgrade window whose checksum changed",
      edit: "UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 14",
      code: "STORE_FAILED",
      message: /migration 14 \(memories and knowledge to their plugins' collections\) .*checksum/,
    },
    {
      what: "a migration unknown here",
      edit: "INSERT INTO schema_migrations VALUES (0, 'mystery', 'x', '2026-01-01T00:00:00.000Z')",
      code: "STORE_FAILED",
      message: /records migration 0 \(mystery\), unknown here/,
    },
    {
      what: "a database written by a newer Spar",
      edit: `INSERT INTO schema_migrations VALUES (${NEWEST + 1}, 'future', 'x', '2026-01-01T00:00:00.000Z')`,
      code: "STORE_FAILED",
      message: new RegExp(
        `written by a newer Spar \\(schema version ${NEWEST + 1}, this one knows up to ${NEWEST}\\)`,
      ),
    },
    {
      what: "a database older than the previous release",
      edit: "DELETE FROM schema_migrations WHERE version >= 12",
      code: "STORE_TOO_OLD",
      message:
        /has schema version 11, older than this Spar upgrades \(version 12 and later\)\. Open it once with an earlier Spar/,
      extra: { schema_version: 11, oldest_upgraded: 12 },
    },
  ];
  it.each(REFUSALS)(
    "refuses $what ($code), changing nothing",
    async ({ edit: sql, code, message, extra }) => {
      const home = await newHome();
      await edit(home, sql);
      const before = await schemaOf(home, Buffer.from(SECRET));
      await expect(open(home)).rejects.toMatchObject({
        code,
        message: expect.stringMatching(message),
        ...(extra ? { extra } : {}),
      });
      expect(await schemaOf(home, Buffer.from(SECRET))).toEqual(before);
    },
  );

  it("applies pending migrations all or nothing", () => {
    const db = plainDb();
    const broken: Migration[] = [
      ...MIGRATIONS,
      { version: NEWEST + 1, name: "broken", sql: "CREATE TABLE nope (" },
    ];
    expect(() => migrate(db, "mem", broken)).toThrow();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'fighters'").get()).toBeUndefined();
    db.close();
  });
});
