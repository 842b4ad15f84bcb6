/**
 * Budgets across three cluster nodes (issue 31 item 2): three real daemons on one PostgreSQL schema
 * and one Redis namespace hold one set of budget counters. A fighter's $0.01 daily budget is
 * refused at the fifth call whichever node takes it; 60 concurrent messages spread over the nodes
 * pass a global budget by at most one call's reserved worst case; and what was spent is kept when
 * Redis loses the period's counters (re-seeded from PostgreSQL's usage ledger) and across a node's
 * kill -9. Needs SPAR_TEST_DATABASE_URL and SPAR_TEST_REDIS_URL (scripts/ci-services.sh); skipped
 * without them, saying so.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import { dropSchemas } from "../helpers/postgres.js";

const DATABASE_URL = serviceUrl("SPAR_TEST_DATABASE_URL");
const REDIS_URL = serviceUrl("SPAR_TEST_REDIS_URL");
const SKIP = !DATABASE_URL || !REDIS_URL;

const SCHEMA = `t_cbudget_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const PREFIX = `b${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const MASTER_KEY = randomBytes(32).toString("hex");

// 1 and 2 USD per million tokens: a token costs 1 and 2 micro-dollars.
const PRICING = `[[pricing]]\nprovider = "openai"\nmodel = "fake-model"\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n`;
/** Each call of the fighter under a money budget: 2,000 × 1 + 500 × 2 = 3,000 micro-dollars, 2,500 tokens. */
const CALL = { prompt_tokens: 2000, completion_tokens: 500 };
/** The global token budget: the money test's four calls (10,000 tokens) and the concurrent ones. */
const GLOBAL_TOKENS = 20_000;
const MAX_TOKENS = 1000;

const figure = (line: string) => console.log(`cluster budgets: ${line}`);

interface Node {
  daemon: TestDaemon;
  home: string;
  port: number;
}
interface BudgetRow {
  budget: string;
  spent: number;
  reserved: number;
  limit: number;
}
interface Reply {
  response?: string;
  error?: { code: string; budget: string; spent: number; limit: number };
}

describe.skipIf(SKIP)(
  `budgets on three daemons on one PostgreSQL and one Redis${SKIP ? " (skipped: SPAR_TEST_DATABASE_URL and SPAR_TEST_REDIS_URL are not both set; scripts/ci-services.sh starts the servers)" : ""}`,
  () => {
    let fake: FakeOpenAI;
    const nodes: Node[] = [];
    const env = { SPAR_DATABASE_URL: DATABASE_URL, SPAR_REDIS_URL: REDIS_URL, SPAR_MASTER_KEY: MASTER_KEY };
    const node = (i: number) => nodes[i % 3] as Node;

    const send = (on: Node, fighter: string, message: string) =>
      on.daemon.request<Reply>("POST", `/api/v1/fighters/${fighter}/message`, { message });
    const rows = async (on: Node) =>
      (await on.daemon.request<{ budgets: BudgetRow[] }>("GET", "/api/v1/budgets")).body.budgets;
    const row = async (on: Node, name: string) => (await rows(on)).find((b) => b.budget === name);
    const spawn = async (name: string, extra: object) => {
      const { status } = await node(0).daemon.request("POST", "/api/v1/fighters", {
        manifest: { name, description: name, system_prompt: `You are ${name}.`, ...extra },
      });
      expect(status).toBe(201);
    };
    async function redis() {
      return connectRedis(REDIS_URL as string, {
        plugin: "tests",
        purpose: "tests",
        maxRetriesPerRequest: 3,
      });
    }

    beforeAll(async () => {
      fake = await startFakeOpenAI();
      for (let i = 0; i < 3; i++) {
        const home = tempHome();
        const port = await freePort();
        writeConfig(
          home,
          port,
          fake.url,
          `\n[plugins]\nstore = "store-postgres"\nbus = "bus-redis"\nscheduler = "scheduler-bullmq"\n\n` +
            `[store.postgres]\nschema = "${SCHEMA}"\npool_max = 8\n\n[redis]\nprefix = "${PREFIX}"\n\n` +
            `[creed]\nreflect = false\n\n${PRICING}\n[budgets]\ntime_zone = "UTC"\n\n` +
            `[budgets.global]\ndaily_tokens = ${GLOBAL_TOKENS}\n`,
        );
        nodes.push({ daemon: await startDaemon(home, port, env), home, port });
      }
    }, 120_000);

    afterAll(async () => {
      for (const n of nodes) await n.daemon.stop();
      for (const n of nodes) removeHome(n.home);
      await fake?.close();
      if (DATABASE_URL) await dropSchemas(DATABASE_URL, [SCHEMA]);
      if (REDIS_URL) {
        const client = await redis();
        const keys = await client.keys(`${PREFIX}:*`);
        if (keys.length > 0) await client.del(...keys);
        client.disconnect();
      }
    }, 60_000);

    it("refuses a fighter's $0.01 daily budget at the fifth call, whichever node takes it", async () => {
      await spawn("thrifty", { budget: { daily: 0.01 } });
      fake.reset();
      fake.setDefault(() => ({ text: "ok", usage: CALL }));
      // Calls 1–4 start with 0, 3,000, 6,000 and 9,000 of 10,000 micro-dollars spent, each on the next node.
      for (let n = 0; n < 4; n++) {
        const reply = await send(node(n), "thrifty", `message ${n + 1}`);
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      }
      for (let n = 4; n < 7; n++) {
        const refused = await send(node(n), "thrifty", `message ${n + 1}`);
        expect(refused.status).toBe(402);
        expect(refused.body.error).toMatchObject({
          code: "BUDGET_EXCEEDED",
          budget: "fighter:thrifty:daily",
          limit: 0.01,
          spent: 0.012,
        });
      }
      expect(fake.calls()).toHaveLength(4);
      for (const n of nodes) {
        expect(await row(n, "fighter:thrifty:daily")).toMatchObject({ spent: 0.012, reserved: 0 });
        expect(await row(n, "global:daily_tokens")).toMatchObject({ spent: 10_000, reserved: 0 });
      }
      figure(
        "$0.01 daily, calls round-robin over 3 nodes: 4 sent, the 5th, 6th and 7th refused 402 on each node",
      );
    });

    it("passes a global budget by at most one call's reserved worst case under 60 concurrent messages over the nodes", async () => {
      for (let i = 0; i < 20; i++) {
        await spawn(`c${i}`, {
          model: { provider: "openai", model: "fake-model", base_url: fake.url, max_tokens: MAX_TOKENS },
        });
      }
      fake.reset();
      // Each call reports 1,000 tokens, within its worst case (its prompt's estimate + max_tokens).
      fake.setDefault(() => ({
        text: "ok",
        usage: { prompt_tokens: 600, completion_tokens: 400 },
        delay_ms: 200,
      }));
      const replies = await Promise.all(
        Array.from({ length: 60 }, (_, i) => send(node(i), `c${i % 20}`, `go ${i}`)),
      );
      const ok = replies.filter((r) => r.status === 200).length;
      const refused = replies.filter((r) => r.status === 402);
      expect(ok + refused.length).toBe(60);
      expect(refused.length).toBeGreaterThan(0);
      for (const r of refused) expect(r.body.error?.budget).toBe("global:daily_tokens");
      expect(fake.calls()).toHaveLength(ok);
      const sent = fake.requests.map((r) => r.body as { messages: { content: string }[] });
      const worst = Math.max(
        ...sent.map(
          (b) => MAX_TOKENS + b.messages.reduce((n, m) => n + 4 + Math.ceil(String(m.content).length / 4), 0),
        ),
      );
      const spent = 10_000 + ok * 1000;
      for (const n of nodes) {
        expect(await row(n, "global:daily_tokens")).toMatchObject({
          spent,
          reserved: 0,
          limit: GLOBAL_TOKENS,
        });
      }
      // The refusals start where the budget is reached: every call admitted started under the limit.
      expect(spent).toBeGreaterThanOrEqual(GLOBAL_TOKENS);
      expect(spent).toBeLessThanOrEqual(GLOBAL_TOKENS + worst);
      figure(
        `global daily_tokens ${GLOBAL_TOKENS}, 60 concurrent over 3 nodes: ${ok} sent, ${refused.length} refused, spent ${spent} (bound ${GLOBAL_TOKENS + worst})`,
      );
    }, 120_000);

    it("keeps what was spent when Redis loses the period's counters, and across a node's kill -9", async () => {
      const before = await rows(node(0));
      const client = await redis();
      const keys = await client.keys(`${PREFIX}:budget:*`);
      expect(keys.length).toBeGreaterThan(0);
      await client.del(...keys);
      client.disconnect();
      // Re-seeded from PostgreSQL's usage ledger, on whichever node reads first.
      for (const n of [node(2), node(1), node(0)]) {
        for (const name of ["fighter:thrifty:daily", "global:daily_tokens"]) {
          expect(await row(n, name)).toMatchObject({
            spent: before.find((b) => b.budget === name)?.spent,
            reserved: 0,
          });
        }
      }
      fake.reset();
      fake.setDefault(() => ({ text: "ok", usage: CALL }));
      expect((await send(node(1), "thrifty", "after the flush")).status).toBe(402);

      const victim = node(1);
      const exited = new Promise((done) => victim.daemon.process.once("exit", done));
      victim.daemon.process.kill("SIGKILL");
      await exited;
      victim.daemon = await startDaemon(victim.home, victim.port, env);
      expect(await row(victim, "fighter:thrifty:daily")).toMatchObject({ spent: 0.012, reserved: 0 });
      const refused = await send(victim, "thrifty", "after the restart");
      expect(refused.status).toBe(402);
      // Both of its budgets are used up now; the global one is checked first.
      expect(refused.body.error).toMatchObject({
        code: "BUDGET_EXCEEDED",
        budget: "global:daily_tokens",
        spent: 20_000,
      });
      expect(fake.calls()).toHaveLength(0);
      figure(
        "Redis's counters deleted: re-seeded from PostgreSQL's ledger, spent kept; kill -9 of a node: kept",
      );
    }, 120_000);
  },
);
