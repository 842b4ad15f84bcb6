/**
 * A third party's persisted feature (issue 29): the example plugin `examples/plugins/moves-notes`,
 * copied into `<data dir>/plugins/` as a user installs it, keeps fighters' notes through nothing but
 * `api.data`. The same scenario runs on store-sqlite and on store-postgres (skipped, saying so,
 * without SPAR_TEST_DATABASE_URL): moves a scripted model calls, the plugin's route, its event on
 * the WebSocket, a restart, and a disable and re-enable that leave the notes as they were. A
 * manifest declaring a malformed collection, or another plugin's namespace, is refused at start.
 */
import { randomUUID } from "node:crypto";
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { FighterMessageResult } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { dropSchemas, SKIP_REASON, TEST_DATABASE_URL } from "../helpers/postgres.js";

const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "plugins", "moves-notes");

interface Note {
  id: string;
  fighter_id: string;
  text: string;
  tags?: string[];
  created_at: string;
}

interface StoreCase {
  id: "store-sqlite" | "store-postgres";
  skip: string | undefined;
  toml: string;
  env: NodeJS.ProcessEnv;
  /** Every byte the store keeps, as text: what "encrypted at rest" is checked against. */
  atRest(home: string): Promise<string>;
  /** What that text shows when it is the store's data (not an empty read). */
  looked: RegExp;
  cleanup(): Promise<void>;
}

const SCHEMA = `t_notes_${randomUUID().replaceAll("-", "").slice(0, 16)}`;

const STORES: StoreCase[] = [
  {
    id: "store-sqlite",
    skip: undefined,
    toml: "",
    env: {},
    async atRest(home) {
      return ["spar.db", "spar.db-wal"]
        .map((f) => join(home, f))
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f).toString("latin1"))
        .join("\n");
    },
    // A file of SQLCipher's: not SQLite's plaintext header, and more than a page.
    looked: /^(?!SQLite format 3)[\s\S]{4096}/,
    async cleanup() {},
  },
  {
    id: "store-postgres",
    skip: TEST_DATABASE_URL ? undefined : SKIP_REASON,
    toml: `\n[store.postgres]\nschema = "${SCHEMA}"\npool_max = 4\n`,
    env: { SPAR_DATABASE_URL: TEST_DATABASE_URL },
    async atRest() {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      try {
        const tables = await client.query<{ table_name: string }>(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
          [SCHEMA],
        );
        const rows: string[] = [];
        for (const { table_name } of tables.rows) {
          const out = await client.query<{ row: string }>(
            `SELECT row_to_json(dumped)::text AS row FROM "${SCHEMA}"."${table_name}" dumped`,
          );
          rows.push(`-- ${table_name}`, ...out.rows.map((r) => r.row));
        }
        return rows.join("\n");
      } finally {
        await client.end();
      }
    },
    looked: /^-- collection_rows\n\{.*"namespace":"moves-notes"/m,
    async cleanup() {
      if (TEST_DATABASE_URL) await dropSchemas(TEST_DATABASE_URL, [SCHEMA]);
    },
  },
];

for (const store of STORES) {
  describe.skipIf(store.skip)(
    `a third-party plugin's own data on ${store.id}${store.skip ? ` (${store.skip})` : ""}`,
    () => {
      const canary = `canary-${randomUUID()}`;
      let fake: FakeOpenAI;
      let home: string;
      let port: number;
      let daemon: TestDaemon | undefined;

      /** (Re)starts the daemon on this store, with the plugins `[plugins] disable` lists off. */
      async function start(disable: string[] = []): Promise<TestDaemon> {
        const plugins = `\n[plugins]\nstore = "${store.id}"\ndisable = ${JSON.stringify(disable)}\n`;
        writeConfig(home, port, fake.url, `${plugins}${store.toml}\n[creed]\nreflect = false\n`);
        daemon = await startDaemon(home, port, store.env);
        return daemon;
      }
      const ask = (fighter: string, message: string) =>
        (daemon as TestDaemon).request<FighterMessageResult>("POST", `/api/v1/fighters/${fighter}/message`, {
          message,
        });
      const listed = async (query = "fighter=scribe") =>
        (await (daemon as TestDaemon).request<{ notes: Note[] }>("GET", `/api/v1/notes?${query}`)).body.notes;

      beforeAll(async () => {
        fake = await startFakeOpenAI();
        home = tempHome();
        port = await freePort();
        cpSync(EXAMPLE, join(home, "plugins", "moves-notes"), { recursive: true });
        await start();
        for (const name of ["scribe", "other"]) {
          const spawned = await (daemon as TestDaemon).request("POST", "/api/v1/fighters", {
            manifest: {
              name,
              description: "keeps notes",
              system_prompt: "You note.",
              capabilities: [{ type: "notes" }],
            },
          });
          expect(spawned.status).toBe(201);
        }
      }, 60_000);

      afterAll(async () => {
        await daemon?.stop();
        await fake?.close();
        removeHome(home);
        await store.cleanup();
      });

      it("keeps a fighter's notes through its moves, finds them by words and announces each on the WebSocket", async () => {
        const ws = new WebSocket(`${(daemon as TestDaemon).url.replace("http", "ws")}/api/v1/ws`);
        const added: { kind: string; fighter_id: string; note_id: string; tags: string[] }[] = [];
        ws.on("message", (d) => {
          const frame = JSON.parse(String(d));
          if (frame.kind === "note.added") added.push(frame);
        });
        await new Promise((r) => ws.once("open", r));
        ws.send(JSON.stringify({ type: "subscribe", kinds: ["note.added"] }));
        await new Promise((r) => setTimeout(r, 50));

        fake.reset();
        fake.enqueue(
          {
            tool_calls: [
              {
                name: "note_add",
                arguments: { text: `The dragon sleeps under the north bridge ${canary}`, tags: ["dragon"] },
              },
            ],
          },
          { text: "noted" },
          { tool_calls: [{ name: "note_add", arguments: { text: "Buy rope before the bridge" } }] },
          { text: "noted" },
          { tool_calls: [{ name: "note_find", arguments: { words: "DRAGON cave" } }] },
          { text: "found" },
        );
        expect((await ask("scribe", "remember the dragon")).body.tool_calls).toEqual([
          { name: "note_add", ok: true },
        ]);
        expect((await ask("scribe", "and the rope")).body.tool_calls).toEqual([
          { name: "note_add", ok: true },
        ]);
        expect((await ask("scribe", "where is the dragon?")).body.tool_calls).toEqual([
          { name: "note_find", ok: true },
        ]);
        expect(fake.calls()[0]?.tools).toEqual(
          expect.arrayContaining(["note_add", "note_find", "note_delete"]),
        );
        const found = JSON.parse(fake.calls().at(-1)?.tool_results.at(-1) ?? "{}") as { notes: Note[] };
        expect(found.notes.map((n) => n.text)).toEqual([
          `The dragon sleeps under the north bridge ${canary}`,
        ]);
        expect(found.notes[0]?.tags).toEqual(["dragon"]);

        // The route: newest first, by name or id, by words; bad input has its stable codes.
        const notes = await listed();
        expect(notes.map((n) => n.text)).toEqual([
          "Buy rope before the bridge",
          `The dragon sleeps under the north bridge ${canary}`,
        ]);
        expect((notes[0]?.created_at ?? "") >= (notes[1]?.created_at ?? "")).toBe(true);
        expect(await listed(`fighter=${notes[0]?.fighter_id}`)).toEqual(notes);
        expect((await listed("fighter=scribe&q=rope")).map((n) => n.text)).toEqual([
          "Buy rope before the bridge",
        ]);
        expect(await listed(`fighter=scribe&limit=1&after=${notes[0]?.id}`)).toEqual([notes[1]]);
        expect(await listed("fighter=other")).toEqual([]);
        const api = daemon as TestDaemon;
        const refusals = await Promise.all(
          ["", "?fighter=nobody", "?fighter=scribe&limit=0", `?fighter=scribe&after=${randomUUID()}`].map(
            async (q) => {
              const r = await api.request<{ error: { code: string } }>("GET", `/api/v1/notes${q}`);
              return [r.status, r.body.error.code];
            },
          ),
        );
        expect(refusals).toEqual([
          [400, "VALIDATION_FAILED"],
          [404, "FIGHTER_NOT_FOUND"],
          [400, "VALIDATION_FAILED"],
          [404, "NOT_FOUND"],
        ]);

        await expect.poll(() => added.length).toBe(2);
        expect(added.map((e) => [e.fighter_id, e.note_id, e.tags])).toEqual([
          [notes[1]?.fighter_id, notes[1]?.id, ["dragon"]],
          [notes[0]?.fighter_id, notes[0]?.id, []],
        ]);
        ws.close();
      });

      it("lets a fighter delete only its own notes", async () => {
        const [rope] = await listed();
        fake.reset();
        fake.enqueue(
          { tool_calls: [{ name: "note_delete", arguments: { id: rope?.id } }] },
          { text: "not mine" },
          { tool_calls: [{ name: "note_add", arguments: { text: "scratch" } }] },
          { text: "noted" },
        );
        expect((await ask("other", "delete that")).body.tool_calls).toEqual([
          { name: "note_delete", ok: false },
        ]);
        expect((await ask("scribe", "jot")).body.tool_calls).toEqual([{ name: "note_add", ok: true }]);
        const scratch = (await listed())[0] as Note;
        expect(scratch.text).toBe("scratch");
        fake.enqueue(
          { tool_calls: [{ name: "note_delete", arguments: { id: scratch.id } }] },
          { text: "gone" },
        );
        expect((await ask("scribe", "drop the scratch")).body.tool_calls).toEqual([
          { name: "note_delete", ok: true },
        ]);
        expect((await listed()).map((n) => n.id)).not.toContain(scratch.id);
        expect(await listed()).toHaveLength(2);
      });

      it("keeps the notes across a restart, encrypted at rest", async () => {
        const before = await listed();
        expect(await daemon?.stop()).toBe(0);
        const stored = await store.atRest(home);
        expect(stored).toMatch(store.looked);
        expect(stored).not.toContain(canary);
        await start();
        expect(await listed()).toEqual(before);
      });

      it("leaves a disabled plugin's notes untouched, and finds them when it is enabled again", async () => {
        const before = await listed();
        await daemon?.stop();
        await start(["moves-notes"]);
        const api = daemon as TestDaemon;
        expect((await api.request("GET", "/api/v1/notes?fighter=scribe")).status).toBe(404);
        const moves = await api.request<{ moves: { name: string }[] }>("GET", "/api/v1/moves");
        expect(moves.body.moves.map((m) => m.name)).not.toContain("note_add");
        // The daemon and the fighter work on without it.
        expect((await ask("scribe", "hello")).status).toBe(200);
        await daemon?.stop();
        await start();
        expect(await listed()).toEqual(before);
        fake.reset();
        fake.enqueue(
          { tool_calls: [{ name: "note_find", arguments: { words: "dragon" } }] },
          { text: "found" },
        );
        expect((await ask("scribe", "the dragon?")).body.tool_calls).toEqual([
          { name: "note_find", ok: true },
        ]);
        expect(fake.calls().at(-1)?.tool_results.at(-1)).toContain(canary);
      });

      it("refuses a declaration changed under the same version, and takes it once the version is bumped", async () => {
        const before = await listed();
        const file = join(home, "plugins", "moves-notes", "plugin.json");
        const manifest = JSON.parse(readFileSync(file, "utf8"));
        manifest.data.collections.notes.indexes.push(["created_at"]);
        writeFileSync(file, JSON.stringify(manifest));
        await daemon?.stop();
        await start();
        const refused = await (daemon as TestDaemon).request<{ error: { code: string; message: string } }>(
          "GET",
          "/api/v1/notes?fighter=scribe",
        );
        expect(refused.status).toBe(500);
        expect(refused.body.error.code).toBe("PLUGIN_INVALID");
        expect(refused.body.error.message).toMatch(
          /moves-notes\/notes: its declaration changed under version 1/,
        );
        manifest.data.collections.notes.version = 2;
        writeFileSync(file, JSON.stringify(manifest));
        await daemon?.stop();
        await start();
        expect(await listed()).toEqual(before);
      });
    },
  );
}

/** The example's manifest with `change` applied, installed under `id` in a fresh data dir. */
function installVariant(home: string, id: string, change: (manifest: Record<string, unknown>) => void): void {
  const dir = join(home, "plugins", id);
  cpSync(EXAMPLE, dir, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(dir, "plugin.json"), "utf8")) as Record<string, unknown>;
  manifest.id = id;
  change(manifest);
  writeFileSync(join(dir, "plugin.json"), JSON.stringify(manifest, null, 2));
}

type Collections = Record<string, { fields: Record<string, Record<string, unknown>>; indexes?: string[][] }>;
const collectionsOf = (manifest: Record<string, unknown>) =>
  (manifest.data as { collections: Collections }).collections;

describe("a user plugin whose data declaration is wrong", () => {
  const cases: { name: string; change: (m: Record<string, unknown>) => void; says: string }[] = [
    {
      name: "an index on a free-text field",
      change: (m) => {
        const notes = collectionsOf(m).notes;
        if (notes) notes.indexes = [["fighter_id", "text"]];
      },
      says: 'plugin moves-badnotes: data.collections.notes.indexes: "text" cannot be indexed (it holds free text)',
    },
    {
      name: "a field of an unknown type",
      change: (m) => {
        const notes = collectionsOf(m).notes;
        if (notes) notes.fields.created_at = { type: "date" };
      },
      says: 'plugins/moves-badnotes/plugin.json: "data.collections.notes.fields.created_at.type" must be one of: string, integer, number, boolean, time, json',
    },
    {
      name: "another plugin's namespace",
      change: (m) => {
        (m.data as { namespace?: string }).namespace = "gorillas";
      },
      says: 'plugin moves-badnotes: data.namespace: "gorillas" is not this plugin\'s id: only bundled plugins share a namespace',
    },
  ];

  for (const c of cases) {
    it(`refuses to start, naming the plugin, collection and field: ${c.name}`, async () => {
      const home = tempHome();
      try {
        installVariant(home, "moves-badnotes", c.change);
        writeConfig(home, await freePort(), "http://127.0.0.1:9");
        const started = await runCli(home, ["start"]);
        expect(started.code).toBe(1);
        expect(started.stderr).toContain("PLUGIN_INVALID");
        expect(started.stderr).toContain(c.says);
        const doctor = await runCli(home, ["doctor"]);
        expect(doctor.code).toBe(1);
        expect(doctor.stdout).toMatch(/^ {2}FAIL (plugins|config): /m);
        expect(doctor.stdout).toContain(c.says);
      } finally {
        removeHome(home);
      }
    });
  }
});
