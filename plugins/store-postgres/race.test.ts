/**
 * Two daemons sharing one schema, played by two stores with their own pools: a signature nonce and
 * an Idempotency-Key are each won by exactly one of them, however the calls interleave.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SparError } from "../../sdk/errors.js";
import type { Store } from "../../sdk/index.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { openPostgresStore } from "./store.js";

const URL_ = TEST_DATABASE_URL ?? "";
let home: string;
let schema: string;
let stores: [Store, Store];

describe.skipIf(!TEST_DATABASE_URL)(
  `store-postgres shared by two daemons${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    beforeAll(async () => {
      home = mkdtempSync(join(tmpdir(), "spar-pg-race-"));
      schema = schemaForHome(home);
      const open = () =>
        openPostgresStore(
          { home, masterSecret: Buffer.from("d4".repeat(32)) },
          { url: URL_, schema, poolMax: 4 },
        );
      stores = [await open(), await open()];
    });
    afterAll(async () => {
      await Promise.all(stores?.map((s) => s.close()) ?? []);
      rmSync(home, { recursive: true, force: true });
      await dropSchemas(URL_, [schema]);
    });

    it("lets exactly one of them claim each nonce", async () => {
      const nonces = Array.from({ length: 20 }, () => randomUUID());
      const claims = await Promise.all(
        nonces.flatMap((nonce) => stores.map((store) => store.nonces.claim("shared-key", nonce, 9e9, 1))),
      );
      for (let i = 0; i < nonces.length; i += 1) {
        expect([claims[2 * i], claims[2 * i + 1]].filter(Boolean)).toHaveLength(1);
      }
    });

    it("lets exactly one of them start a turn for each Idempotency-Key; the other gets CONFLICT", async () => {
      const fighter = {
        id: randomUUID(),
        name: `racer-${randomUUID().slice(0, 8)}`,
        created_at: new Date().toISOString(),
      };
      await stores[0].fighters.insert({
        ...fighter,
        manifest: { name: fighter.name, description: "d", system_prompt: "s", skills: [] },
      });
      for (let round = 0; round < 10; round += 1) {
        const key = randomUUID();
        const outcomes = await Promise.allSettled(
          stores.map((store, i) =>
            store.turns.begin({
              fighter_id: fighter.id,
              user: { role: "user", content: `from ${i}` },
              idempotency: { key, request_hash: "h" },
            }),
          ),
        );
        const won = outcomes.filter((o) => o.status === "fulfilled");
        const lost = outcomes.filter((o) => o.status === "rejected");
        expect(won).toHaveLength(1);
        expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(SparError);
        expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({ code: "CONFLICT" });
        const record = await stores[1].idempotency.get(key);
        expect(record?.turn_id).toBe(
          (won[0] as PromiseFulfilledResult<{ turn: { id: string } }>).value.turn.id,
        );
      }
      // The losers started nothing: one bout per round.
      expect(await stores[0].bouts.list(fighter.id)).toHaveLength(10);
    });

    it("gives concurrent appends to one bout from both stores distinct, gapless seqs", async () => {
      const fighter = {
        id: randomUUID(),
        name: `seq-${randomUUID().slice(0, 8)}`,
        created_at: new Date().toISOString(),
      };
      await stores[0].fighters.insert({
        ...fighter,
        manifest: { name: fighter.name, description: "d", system_prompt: "s", skills: [] },
      });
      const first = await stores[0].turns.begin({
        fighter_id: fighter.id,
        user: { role: "user", content: "a" },
      });
      await stores[0].turns.finish(first.turn.id, {
        status: "completed",
        messages: [],
        usage: { input_tokens: 0, output_tokens: 0 },
        iterations: 1,
      });
      const turns = await Promise.all(
        [0, 1, 0, 1].map((i) =>
          stores[i as 0 | 1].turns.begin({
            fighter_id: fighter.id,
            bout_id: first.bout.id,
            user: { role: "user", content: `t${i}` },
          }),
        ),
      );
      await Promise.all(
        turns.map((t, i) =>
          stores[(i % 2) as 0 | 1].turns.append(t.turn.id, [{ role: "assistant", content: "x" }]),
        ),
      );
      const seqs = (await stores[1].messages.list(first.bout.id)).map((m) => m.seq);
      expect(seqs).toEqual(Array.from({ length: 9 }, (_, i) => i + 1));
      expect((await stores[1].bouts.get(first.bout.id))?.message_count).toBe(9);
    });
  },
);
