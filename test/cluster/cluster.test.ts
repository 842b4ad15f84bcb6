/**
 * Three daemons as one (issue 21): three real `spar start` processes on loopback ports, each with
 * its own data dir, sharing one PostgreSQL schema (`store-postgres`), one Redis namespace
 * (`bus-redis`, `scheduler-bullmq`) and one master secret. What one node does, the others see:
 * fighters, turn order, events, a user plugin's data (examples/plugins/moves-notes), an approval
 * asked on one node and answered on another (and a waiting turn taken up on another node after its
 * own was killed), quotas, gorilla fires, and a node's death.
 *
 * Needs SPAR_TEST_DATABASE_URL and SPAR_TEST_REDIS_URL (`.ci/run` starts both servers through
 * scripts/ci-services.sh); without them it is skipped, saying so. `npm run test:cluster` runs the
 * long version (the gorilla counted for a minute); `npm test` a short one (15 s). Each test prints
 * its figures.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { embed } from "../../bench/recall/concepts.mjs";
import { connectRedis } from "../../lib/redis.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { serviceUrl } from "../helpers/ci.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { gorillaToml, writeGorilla } from "../helpers/gorillas.js";
import { dropSchemas } from "../helpers/postgres.js";

const DATABASE_URL = serviceUrl("SPAR_TEST_DATABASE_URL");
const REDIS_URL = serviceUrl("SPAR_TEST_REDIS_URL");
const SKIP = !DATABASE_URL || !REDIS_URL;
const LONG = process.env.SPAR_CLUSTER === "long";
/** How long the gorilla is counted. */
const GORILLA_S = LONG ? 60 : 15;

const SCHEMA = `t_cluster_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const PREFIX = `c${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const MASTER_KEY = randomBytes(32).toString("hex");

const figure = (line: string) => console.log(`cluster: ${line}`);
const NOTES_PLUGIN = join(import.meta.dirname, "..", "..", "examples", "plugins", "moves-notes");

interface Node {
  daemon: TestDaemon;
  home: string;
  port: number;
}

describe.skipIf(SKIP)(
  `three daemons on one PostgreSQL and one Redis${SKIP ? " (skipped: SPAR_TEST_DATABASE_URL and SPAR_TEST_REDIS_URL are not both set; scripts/ci-services.sh starts the servers)" : ""}`,
  () => {
    let fake: FakeOpenAI;
    const nodes: Node[] = [];
    const env = {
      SPAR_DATABASE_URL: DATABASE_URL,
      SPAR_REDIS_URL: REDIS_URL,
      SPAR_MASTER_KEY: MASTER_KEY,
    };
    const node = (i: number) => nodes[i] as Node;

    async function startNode(home: string, port: number): Promise<TestDaemon> {
      return startDaemon(home, port, env);
    }

    beforeAll(async () => {
      // Embeddings answered with the recall bench's concept embedder: recall by meaning across nodes.
      fake = await startFakeOpenAI({ embed: (text) => embed(text, 256) });
      // A message marked [slow] keeps the model busy long enough to kill its node mid-turn.
      fake.setDefault((body) => {
        const last = body.messages.at(-1);
        const text = typeof last?.content === "string" ? last.content : "";
        return text.includes("[slow]") ? { text: "too late", delay_ms: 60_000 } : { text: `echo: ${text}` };
      });
      for (let i = 0; i < 3; i++) {
        const home = tempHome();
        const port = await freePort();
        writeConfig(
          home,
          port,
          fake.url,
          `\n[plugins]\nstore = "store-postgres"\nbus = "bus-redis"\nscheduler = "scheduler-bullmq"\n\n` +
            `[store.postgres]\nschema = "${SCHEMA}"\npool_max = 8\n\n[redis]\nprefix = "${PREFIX}"\n\n` +
            `[creed]\nreflect = false\n\n[gorillas]\ntimezone = "UTC"\n\n` +
            `[memory.embeddings]\nprovider = "openai"\nmodel = "fake-embed"\nbase_url = "${fake.url}"\napi_key_env = "OPENAI_API_KEY"\n\n` +
            "[quotas]\nrequests_per_minute = 100000\ntokens_per_minute = 100000000\n",
        );
        // Gorillas are files in each data dir: every node has the same one.
        writeGorilla(home, "tick", gorillaToml("tick", "every 1s", "timeout_s = 120"));
        // And so are user plugins: the example that keeps data of its own, on every node.
        cpSync(NOTES_PLUGIN, join(home, "plugins", "moves-notes"), { recursive: true });
        // One after another: the first creates the schema and the default fighter.
        nodes.push({ daemon: await startNode(home, port), home, port });
      }
    }, 120_000);

    afterAll(async () => {
      for (const n of nodes) await n.daemon.stop();
      for (const n of nodes) removeHome(n.home);
      await fake?.close();
      if (DATABASE_URL) await dropSchemas(DATABASE_URL, [SCHEMA]);
      if (REDIS_URL) {
        const redis = await connectRedis(process.env.SPAR_TEST_REDIS_URL as string, {
          plugin: "tests",
          purpose: "tests",
          maxRetriesPerRequest: 3,
        });
        const keys = await redis.keys(`${PREFIX}:*`);
        if (keys.length > 0) await redis.del(...keys);
        // BullMQ's own keys live under the prefix too (bull:<prefix>… is not used).
        redis.disconnect();
      }
    }, 60_000);

    async function spawn(
      on: Node,
      name: string,
      quota?: Record<string, number>,
      capabilities?: { type: string; pattern?: string }[],
    ) {
      const { status, body } = await on.daemon.request<{ id: string }>("POST", "/api/v1/fighters", {
        manifest: {
          name,
          description: `${name}, for the cluster test`,
          system_prompt: `You are ${name}.`,
          ...(quota ? { quota } : {}),
          ...(capabilities ? { capabilities } : {}),
        },
      });
      expect(status).toBe(201);
      return body.id;
    }

    const send = (on: Node, fighter: string, message: string) =>
      on.daemon.request<{ response?: string; bout_id?: string; error?: { code: string } }>(
        "POST",
        `/api/v1/fighters/${fighter}/message`,
        { message },
      );

    it("answers on every node for a fighter spawned on one", async () => {
      const id = await spawn(node(0), "relay");
      for (const n of [node(1), node(2)]) {
        const { status, body } = await send(n, id, `hello from ${n.port}`);
        expect(status).toBe(200);
        expect(body.response).toBe(`echo: hello from ${n.port}`);
      }
      // By name too, and listed everywhere once the spawn's announcement arrived.
      expect((await send(node(2), "relay", "by name")).status).toBe(200);
      for (const n of nodes) {
        await expect
          .poll(async () => {
            const { body } = await n.daemon.request<{ fighters: { name: string }[] }>(
              "GET",
              "/api/v1/fighters",
            );
            return body.fighters.map((f) => f.name);
          })
          .toContain("relay");
      }
    });

    it("runs 300 concurrent messages to one fighter over three nodes one at a time, none lost", async () => {
      const id = await spawn(node(0), "queue", {
        requests_per_minute: 10_000,
        tokens_per_minute: 100_000_000,
      });
      const texts = Array.from({ length: 300 }, (_, i) => `m${i}`);
      const started = Date.now();
      const answers = await Promise.all(texts.map((text, i) => send(node(i % 3), id, text)));
      const seconds = (Date.now() - started) / 1000;
      expect(answers.map((a) => a.status)).toEqual(texts.map(() => 200));
      answers.forEach((a, i) => {
        expect(a.body.response).toBe(`echo: ${texts[i]}`);
      });

      // One bout: each user message followed at once by its own reply, every message once.
      const bouts = await node(1).daemon.request<{ bouts: { id: string }[] }>(
        "GET",
        `/api/v1/fighters/${id}/bouts`,
      );
      expect(bouts.body.bouts).toHaveLength(1);
      const bout = bouts.body.bouts[0]?.id as string;
      const { body } = await node(2).daemon.request<{ messages: { role: string; content: string }[] }>(
        "GET",
        `/api/v1/bouts/${bout}/messages`,
      );
      expect(body.messages).toHaveLength(600);
      for (let i = 0; i < 600; i += 2) {
        const user = body.messages[i];
        expect(user?.role).toBe("user");
        expect(body.messages[i + 1]).toMatchObject({ role: "assistant", content: `echo: ${user?.content}` });
      }
      expect(new Set(body.messages.filter((m) => m.role === "user").map((m) => m.content)).size).toBe(300);
      // One at a time: each model call saw every earlier turn of the bout, never the same history twice.
      const sizes = fake.requests
        .filter(
          (r) =>
            r.body?.messages[0]?.content === "You are queue." ||
            JSON.stringify(r.body?.messages[0]).includes("You are queue."),
        )
        .map((r) => r.body?.messages.length ?? 0);
      expect(sizes).toHaveLength(300);
      expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
      expect(new Set(sizes).size).toBe(300);
      figure(
        `300 concurrent messages to one fighter over 3 nodes: 300 answered in ${seconds.toFixed(1)} s, one at a time (300 distinct histories), lost 0, duplicated 0`,
      );
    }, 180_000);

    it("streams node 1's events to a WebSocket on node 3 in order, and resumes after a reconnect", async () => {
      const id = await spawn(node(0), "watched");
      const completed: number[] = [];
      const open = (since?: number) =>
        new Promise<WebSocket>((done, fail) => {
          const ws = new WebSocket(`ws://127.0.0.1:${node(2).port}/api/v1/ws`);
          ws.on("message", (data) => {
            const frame = JSON.parse(String(data)) as { type: string; kind?: string; seq?: number };
            if (frame.type === "subscribed") done(ws);
            if (frame.type === "event" && frame.kind === "message.completed")
              completed.push(frame.seq as number);
          });
          ws.once("error", fail);
          ws.once("open", () =>
            ws.send(
              JSON.stringify({
                type: "subscribe",
                kinds: ["message.completed"],
                fighter_id: id,
                ...(since === undefined ? {} : { since }),
              }),
            ),
          );
        });
      const first = await open();
      for (let i = 0; i < 5; i++) expect((await send(node(0), id, `seen ${i}`)).status).toBe(200);
      await expect.poll(() => completed.length).toBe(5);
      first.close();
      const last = completed.at(-1) as number;
      for (let i = 0; i < 3; i++) expect((await send(node(0), id, `missed ${i}`)).status).toBe(200);
      const again = await open(last);
      await expect.poll(() => completed.length).toBe(8);
      again.close();
      expect(completed).toEqual([...completed].sort((a, b) => a - b));
      expect(new Set(completed).size).toBe(8);
      figure(
        "WebSocket on node 3: 5 of node 1's completions live, 3 more resumed after a reconnect, in seq order",
      );
    });

    it("finds through one node a note a user plugin stored through another, and streams its event to a third", async () => {
      const id = await spawn(node(0), "notary", undefined, [{ type: "notes" }]);
      const added: { note_id: string }[] = [];
      const ws = await new Promise<WebSocket>((done, fail) => {
        const socket = new WebSocket(`ws://127.0.0.1:${node(2).port}/api/v1/ws`);
        socket.on("message", (data) => {
          const frame = JSON.parse(String(data)) as { type: string; kind?: string; note_id?: string };
          if (frame.type === "subscribed") done(socket);
          if (frame.type === "event" && frame.kind === "note.added") added.push(frame as { note_id: string });
        });
        socket.once("error", fail);
        socket.once("open", () => socket.send(JSON.stringify({ type: "subscribe", kinds: ["note.added"] })));
      });
      fake.enqueue({
        tool_calls: [{ name: "note_add", arguments: { text: "the vault code is under the third stair" } }],
      });
      const stored = await send(node(0), id, "note the vault code");
      expect(stored.status).toBe(200);

      const listed = await node(1).daemon.request<{ notes: { id: string; text: string }[] }>(
        "GET",
        "/api/v1/notes?fighter=notary&q=vault",
      );
      expect(listed.status).toBe(200);
      expect(listed.body.notes.map((n) => n.text)).toEqual(["the vault code is under the third stair"]);
      fake.enqueue({ tool_calls: [{ name: "note_find", arguments: { words: "stair" } }] });
      expect((await send(node(2), id, "where is the vault code?")).status).toBe(200);
      const found = fake.requests.at(-1)?.body?.messages.at(-1);
      expect(found?.role).toBe("tool");
      expect(String(found?.content)).toContain(listed.body.notes[0]?.id);
      await expect.poll(() => added.map((e) => e.note_id)).toEqual([listed.body.notes[0]?.id]);
      ws.close();
      figure(
        "a user plugin's note: stored through node 1, listed through node 2, found by a move and its event seen on node 3",
      );
    });

    it("recalls on node 2 by meaning a memory stored through node 1, and node 3 searches node 1's conversation", async () => {
      const id = await spawn(node(0), "rememberer", undefined, [{ type: "memory" }]);
      fake.enqueue(
        {
          tool_calls: [
            {
              name: "memory_store",
              arguments: { key: "sister", value: "My sister Ada moved to Lisbon last spring" },
            },
          ],
        },
        { text: "noted" },
      );
      expect((await send(node(0), id, "My sister Ada moved to Lisbon last spring.")).status).toBe(200);
      await expect
        .poll(() => fake.embedCalls.some((c) => c.inputs.some((t) => t.includes("sister: My sister Ada"))), {
          timeout: 10_000,
        })
        .toBe(true);
      // Node 2 loads the fighter's vectors from PostgreSQL; the question shares no word with the fact.
      let recalled: { memories: { key: string }[]; by: string } = { memories: [], by: "" };
      for (let i = 0; i < 40 && recalled.memories.length === 0; i++) {
        fake.enqueue({
          tool_calls: [
            { name: "memory_recall", arguments: { query: "In which city does my sibling reside?" } },
          ],
        });
        await send(node(1), id, "what do you remember?");
        recalled = JSON.parse(String(fake.requests.at(-1)?.body?.messages.at(-1)?.content));
        if (recalled.memories.length === 0) await new Promise((r) => setTimeout(r, 100));
      }
      expect(recalled).toMatchObject({ by: "words+meaning", memories: [{ key: "sister" }] });
      fake.enqueue({ tool_calls: [{ name: "conversation_search", arguments: { query: "Ada Lisbon" } }] });
      expect((await send(node(2), id, "when did I say that?")).status).toBe(200);
      const searched = JSON.parse(String(fake.requests.at(-1)?.body?.messages.at(-1)?.content)) as {
        results: { text: string }[];
      };
      expect(searched.results.map((r) => r.text)).toContain("My sister Ada moved to Lisbon last spring.");
      figure(
        "a memory stored through node 1, recalled by meaning on node 2; its conversation searched on node 3",
      );
    });

    it("answers on node 3 an approval a turn on node 1 waits for, announced on node 2's WebSocket", async () => {
      const id = await spawn(node(0), "asker", undefined, [{ type: "shell_exec", pattern: "*" }]);
      const seen: { kind: string; request_id: string; status?: string }[] = [];
      const ws = await new Promise<WebSocket>((done, fail) => {
        const socket = new WebSocket(`ws://127.0.0.1:${node(1).port}/api/v1/ws`);
        socket.on("message", (data) => {
          const frame = JSON.parse(String(data)) as { type: string; kind: string; request_id: string };
          if (frame.type === "subscribed") done(socket);
          if (frame.type === "event") seen.push(frame);
        });
        socket.once("error", fail);
        socket.once("open", () =>
          socket.send(
            JSON.stringify({ type: "subscribe", kinds: ["approval.requested", "approval.answered"] }),
          ),
        );
      });
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: { argv: ["true"] } }] });
      const reply = send(node(0), id, "run true");
      let request: { id: string; status: string } | undefined;
      await expect
        .poll(
          async () => {
            const { body } = await node(2).daemon.request<{ approvals: { id: string; status: string }[] }>(
              "GET",
              "/api/v1/approvals?status=pending",
            );
            request = body.approvals[0];
            return request?.status;
          },
          { timeout: 20_000 },
        )
        .toBe("pending");
      const answered = Date.now();
      const approved = await node(2).daemon.cli(["approvals", "approve", request?.id as string]);
      expect(approved.code, approved.stderr).toBe(0);
      const done = await reply;
      const waited = (Date.now() - answered) / 1000;
      expect(done.status).toBe(200);
      expect((done.body as { tool_calls?: unknown }).tool_calls).toEqual([{ name: "shell_exec", ok: true }]);
      // Answered once: a second answer, through the third node, is a conflict.
      const again = await node(1).daemon.request("POST", `/api/v1/approvals/${request?.id}/deny`, {});
      expect(again.status).toBe(409);
      await expect
        .poll(() => seen.map((e) => `${e.kind} ${e.request_id}`))
        .toEqual([`approval.requested ${request?.id}`, `approval.answered ${request?.id}`]);
      ws.close();
      figure(
        `an approval asked on node 1, seen on node 2's WebSocket, answered through node 3: the turn went on ${waited.toFixed(2)} s after the answer`,
      );
    });

    it("admits exactly a 60/min quota of 1000 concurrent messages spread over the nodes", async () => {
      const id = await spawn(node(0), "limited", { requests_per_minute: 60, tokens_per_minute: 100_000_000 });
      const answers = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => send(node(i % 3), id, `q${i}`)),
      );
      const admitted = answers.filter((a) => a.status === 200);
      const limited = answers.filter((a) => a.status === 429);
      expect(admitted).toHaveLength(60);
      expect(limited).toHaveLength(940);
      for (const a of limited) expect(a.body.error?.code).toBe("RATE_LIMITED");
      expect(limited.every((a) => Number(a.headers.get("retry-after")) >= 1)).toBe(true);
      figure(
        "quota 60/min over 3 nodes: 1000 concurrent, admitted 60, RATE_LIMITED 940 with Retry-After, 5xx 0",
      );
    }, 120_000);

    it(
      `fires a one-second gorilla exactly once per second across the cluster (${GORILLA_S} s)`,
      async () => {
        const unleashed = await node(1).daemon.cli(["gorilla", "unleash", "tick"]);
        expect(unleashed.code, unleashed.stderr).toBe(0);
        await new Promise((r) => setTimeout(r, GORILLA_S * 1000));
        // Caged from another node than the one that unleashed it.
        const caged = await node(2).daemon.cli(["gorilla", "cage", "tick"]);
        expect(caged.code, caged.stderr).toBe(0);
        const { body } = await node(0).daemon.request<{
          runs: { started_at: string; outcome: string; trigger: string }[];
        }>("GET", "/api/v1/gorillas/tick/runs?limit=500");
        const fired = body.runs.filter((r) => r.trigger === "schedule" && r.outcome !== "skipped");
        // A fire's cycle starts a few ms after its whole second: the second it started in is its fire time.
        const seconds = fired.map((r) => Math.floor(Date.parse(r.started_at) / 1000)).sort((a, b) => a - b);
        // Each fire once: no second twice, and none missed between the first and the last.
        expect(new Set(seconds).size).toBe(seconds.length);
        expect(seconds.length).toBeGreaterThanOrEqual(GORILLA_S - 2);
        expect((seconds.at(-1) ?? 0) - (seconds[0] ?? 0)).toBe(seconds.length - 1);
        const outcomes: Record<string, number> = {};
        for (const r of fired) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
        figure(
          `gorilla "every 1s" on 3 nodes for ${GORILLA_S} s: ${seconds.length} fires, each second once, none missed, none twice (${JSON.stringify(outcomes)})`,
        );
      },
      (GORILLA_S + 60) * 1000,
    );

    it("leaves a fighter usable from the other nodes when the node running its turn is killed", async () => {
      const id = await spawn(node(0), "survivor");
      const victim = node(1);
      const slow = send(victim, id, "[slow] hold on").catch(() => undefined);
      await expect
        .poll(() =>
          fake.requests.some((r) => JSON.stringify(r.body?.messages ?? []).includes("[slow] hold on")),
        )
        .toBe(true);
      victim.daemon.process.kill("SIGKILL");
      await slow;

      const after = await send(node(0), id, "are you there?");
      expect(after.status).toBe(200);
      expect(after.body.response).toBe("echo: are you there?");
      const { body } = await node(2).daemon.request<{
        turns: { status: string; error?: { code: string } }[];
      }>("GET", `/api/v1/bouts/${after.body.bout_id}/turns`);
      expect(body.turns.map((t) => [t.status, t.error?.code])).toEqual([
        ["failed", "INTERRUPTED"],
        ["completed", undefined],
      ]);
      // The killed node comes back and works with the others.
      victim.daemon = await startNode(victim.home, victim.port);
      expect((await send(victim, id, "back")).status).toBe(200);
      figure(
        "kill -9 of the node mid-turn: the turn failed INTERRUPTED, the fighter answered on another node after the lease lapsed",
      );
    }, 120_000);

    it("takes up on another node a turn whose node was killed while it waited for an approval: run once, no model call repeated", async () => {
      const id = await spawn(node(0), "waiter", undefined, [{ type: "shell_exec", pattern: "*" }]);
      const victim = node(1);
      const asked = "run true, then die";
      const calls = () => fake.requests.filter((r) => JSON.stringify(r.body?.messages ?? []).includes(asked));
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: { argv: ["true"] } }] });
      const reply = send(victim, id, asked).catch(() => undefined);
      let request: { id: string; bout_id: string; turn_id: string } | undefined;
      await expect
        .poll(
          async () => {
            const { body } = await node(2).daemon.request<{
              approvals: { id: string; fighter: string; bout_id: string; turn_id: string }[];
            }>("GET", "/api/v1/approvals?status=pending");
            request = body.approvals.find((a) => a.fighter === "waiter");
            return request?.id;
          },
          { timeout: 20_000 },
        )
        .toEqual(expect.any(String));
      const turn = async () =>
        (
          await node(2).daemon.request<{ turns: { id: string; status: string }[] }>(
            "GET",
            `/api/v1/bouts/${request?.bout_id}/turns`,
          )
        ).body.turns.find((t) => t.id === request?.turn_id)?.status;
      await expect.poll(turn).toBe("awaiting_approval");
      victim.daemon.process.kill("SIGKILL");
      await reply;
      expect(calls()).toHaveLength(1);
      // Still waiting with its node gone; answered on another node, a live node takes it up.
      expect(await turn()).toBe("awaiting_approval");
      const answered = Date.now();
      const approved = await node(2).daemon.cli(["approvals", "approve", request?.id as string]);
      expect(approved.code, approved.stderr).toBe(0);
      await expect.poll(turn, { timeout: 60_000 }).toBe("completed");
      const took = (Date.now() - answered) / 1000;
      const { body } = await node(0).daemon.request<{ messages: { role: string; content: string }[] }>(
        "GET",
        `/api/v1/bouts/${request?.bout_id}/messages`,
      );
      const results = body.messages.filter((m) => m.role === "tool");
      expect(results).toHaveLength(1);
      expect(JSON.parse(results[0]?.content ?? "{}")).toMatchObject({ exit_code: 0 });
      // One model call after the result: the one that asked was not repeated.
      expect(calls()).toHaveLength(2);
      const shown = await node(0).daemon.request<{ released_at?: string }>(
        "GET",
        `/api/v1/approvals/${request?.id}`,
      );
      expect(shown.body.released_at).toEqual(expect.any(String));
      victim.daemon = await startNode(victim.home, victim.port);
      figure(
        `kill -9 of the node whose turn waited for an approval: answered on another node, taken up there ${took.toFixed(2)} s later, the command run once, no model call repeated`,
      );
    }, 120_000);
  },
);
