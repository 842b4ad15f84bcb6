/**
 * The real daemon on the PostgreSQL store: `[plugins] store = "store-postgres"`, the URL in
 * SPAR_DATABASE_URL, a schema of its own. A fighter's conversation, a memory it stored and a move's
 * result survive a restart, and a dump of the schema holds none of them in plaintext. Skipped, with
 * the reason in its name, when SPAR_TEST_DATABASE_URL is not set.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StoredMessage } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { dropSchemas, SKIP_REASON, TEST_DATABASE_URL } from "../helpers/postgres.js";

const URL_ = TEST_DATABASE_URL ?? "";
const CANARY = `canary-${randomUUID()}`;
const SCHEMA = `t_e2e_${randomUUID().replaceAll("-", "").slice(0, 16)}`;

/** Every row of every table in the schema, as JSON text (bytea as \x hex). */
async function dump(): Promise<string> {
  const client = new pg.Client({ connectionString: URL_ });
  await client.connect();
  try {
    const tables = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
      [SCHEMA],
    );
    const rows: string[] = [];
    for (const { table_name } of tables.rows) {
      const out = await client.query<{ row: string }>(
        // An alias no table has as a column name (row_to_json(t) would take a column named t over a table aliased t).
        `SELECT row_to_json(dumped)::text AS row FROM "${SCHEMA}"."${table_name}" dumped`,
      );
      rows.push(`-- ${table_name}`, ...out.rows.map((r) => r.row));
    }
    return rows.join("\n");
  } finally {
    await client.end();
  }
}

describe.skipIf(!TEST_DATABASE_URL)(
  `the daemon on store-postgres${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    let fake: FakeOpenAI;
    let home: string;
    let port: number;
    let daemon: TestDaemon | undefined;
    const env = () => ({ SPAR_DATABASE_URL: URL_ });
    const send = (fighter: string, message: string) =>
      daemon?.request<{ reply?: string }>("POST", `/api/v1/fighters/${fighter}/message`, { message });
    const boutOf = async (fighter: string) =>
      (await daemon?.request<{ bouts: { id: string }[] }>("GET", `/api/v1/fighters/${fighter}/bouts`))?.body
        .bouts[0]?.id as string;
    const messagesOf = async (bout: string) =>
      (await daemon?.request<{ messages: StoredMessage[] }>("GET", `/api/v1/bouts/${bout}/messages`))?.body
        .messages ?? [];

    beforeAll(async () => {
      fake = await startFakeOpenAI();
      home = tempHome();
      port = await freePort();
      writeConfig(
        home,
        port,
        fake.url,
        `\n[plugins]\nstore = "store-postgres"\n\n[store.postgres]\nschema = "${SCHEMA}"\npool_max = 4\n\n[creed]\nreflect = false\n`,
      );
    });

    afterAll(async () => {
      await daemon?.stop();
      await fake?.close();
      removeHome(home);
      await dropSchemas(URL_, [SCHEMA]);
    });

    it("refuses to start without the URL, naming the variable", async () => {
      const err = await startDaemon(home, port).then(
        (started) => started.stop().then(() => new Error("started")),
        (e: Error) => e,
      );
      expect(err.message).toContain("SPAR_DATABASE_URL");
      expect(err.message).toContain("CONFIG_INVALID");
    });

    it("keeps a fighter's conversation, memory and move results across a restart", async () => {
      daemon = await startDaemon(home, port, env());
      const spawned = await daemon.request("POST", "/api/v1/fighters", {
        manifest: {
          name: "keeper",
          description: "keeps",
          system_prompt: "You keep things.",
          capabilities: [{ type: "memory" }],
        },
      });
      expect(spawned.status).toBe(201);
      fake.enqueue(
        { tool_calls: [{ name: "memory_store", arguments: { key: "secret", value: CANARY } }] },
        { text: `Stored ${CANARY}.` },
      );
      expect((await send("keeper", `please remember ${CANARY}`))?.status).toBe(200);
      expect((await send("keeper", "and say hi"))?.status).toBe(200);
      const bout = await boutOf("keeper");
      const before = await messagesOf(bout);
      expect(before.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
      ]);
      expect(before[0]?.content).toBe(`please remember ${CANARY}`);

      expect(await daemon.stop()).toBe(0);
      daemon = await startDaemon(home, port, env());
      expect(await messagesOf(await boutOf("keeper"))).toEqual(before);
      const fighters = await daemon.request<{ fighters: { name: string }[] }>("GET", "/api/v1/fighters");
      expect(fighters.body.fighters.map((f) => f.name)).toContain("keeper");
      // The memory is there too: recalled into the next prompt.
      fake.enqueue(
        { tool_calls: [{ name: "memory_recall", arguments: { query: "secret" } }] },
        { text: "found it" },
      );
      expect((await send("keeper", "what was the secret?"))?.status).toBe(200);
      expect(fake.calls().at(-1)?.tool_results.join("\n")).toContain(CANARY);
    });

    it("leaves no plaintext of the conversation in a dump of its schema", async () => {
      const text = await dump();
      expect(text).toContain("-- messages");
      expect(text).not.toContain(CANARY);
      expect(text.toLowerCase()).not.toContain(Buffer.from(CANARY).toString("hex"));
      // And nothing went to a SQLite file on the side.
      expect(existsSync(join(home, "spar.db"))).toBe(false);
    });

    it("stores no fighter name and no Idempotency-Key in plaintext; lookups by name and replays still work", async () => {
      const key = `idem-${randomUUID()}`;
      const post = () =>
        fetch(`${daemon?.url}/api/v1/fighters/keeper/message`, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify({ message: "once only" }),
        }).then(async (r) => ({
          status: r.status,
          body: (await r.json()) as { response: string; bout_id: string },
        }));
      const first = await post();
      expect(first.status).toBe(200);
      const calls = fake.calls().length;
      const replay = await post();
      expect(replay).toEqual(first);
      expect(fake.calls().length).toBe(calls);

      const text = await dump();
      expect(text).toContain("-- idempotency");
      for (const plain of ["keeper", key]) {
        expect(text).not.toContain(plain);
        expect(text.toLowerCase()).not.toContain(Buffer.from(plain).toString("hex"));
      }
      const found = await daemon?.request<{ name: string }>("GET", "/api/v1/fighters/keeper");
      expect(found?.status).toBe(200);
      expect(found?.body.name).toBe("keeper");
      // A name is still unique among live fighters.
      const again = await daemon?.request<{ error: { code: string } }>("POST", "/api/v1/fighters", {
        manifest: { name: "keeper", description: "twin", system_prompt: "You are a twin." },
      });
      expect(again?.status).toBe(409);
    });

    it("answers spar backup, spar restore and the backup route with BACKUP_UNSUPPORTED and the pg_dump command", async () => {
      const file = join(home, "spar.dump");
      const dumpCommand = `pg_dump --format=custom --schema=${SCHEMA} --file=${file} "$SPAR_DATABASE_URL"`;
      const route = await daemon?.request<{ error: { code: string; message: string } }>(
        "POST",
        "/api/v1/store/backup",
        { path: file },
      );
      expect(route?.status).toBe(501);
      expect(route?.body.error.code).toBe("BACKUP_UNSUPPORTED");
      expect(route?.body.error.message).toContain(dumpCommand);

      const error = (stdout = "") =>
        (JSON.parse(stdout) as { error: { code: string; message: string } }).error;
      const backup = await daemon?.cli(["backup", file, "--json"]);
      expect(backup?.code).toBe(1);
      expect(error(backup?.stdout)).toMatchObject({ code: "BACKUP_UNSUPPORTED" });
      expect(error(backup?.stdout).message).toContain(dumpCommand);
      expect(error(backup?.stdout).message).not.toContain("no database in");

      const restore = await daemon?.cli(["restore", file, "--yes"]);
      expect(restore?.code).toBe(1);
      expect(restore?.stderr).toContain(
        `pg_restore --clean --if-exists --dbname="$SPAR_DATABASE_URL" ${file}`,
      );
      expect(restore?.stderr).toMatch(/\(BACKUP_UNSUPPORTED\)\n$/);
      expect(existsSync(file) || existsSync(`${file}.manifest.json`)).toBe(false);
    });
  },
);
