/**
 * Quotas under load, through the real daemon: 1,000 concurrent messages to a fighter whose manifest
 * allows 60 requests a minute. Exactly 60 are admitted and answered, the other 940 are 429
 * `RATE_LIMITED` with a `Retry-After` header, nothing answers 5xx, every admitted message is in its
 * bout exactly once and no refused one is stored. The API's own per-key limit is raised so only the
 * fighter's quota refuses. The same size in short and long mode (it is cheap).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FighterMessageResult, StoredMessage } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { call, figure, pool } from "./lib.js";

const QUOTA = 60;
const MESSAGES = 1000;
const SOCKETS = 200;

type Reply = FighterMessageResult & { error?: { code: string; message: string; retry_after_s?: number } };

describe("quotas under load", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      "\n[creed]\nreflect = false\n\n[api]\nrate_limit_per_minute = 1000000\n",
    );
    daemon = await startDaemon(home, port);
    const spawned = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "quota-burst",
        description: "takes 60 messages a minute",
        system_prompt: "You are quota-burst.",
        // Tokens are left generous: this test is about the request quota alone.
        quota: { requests_per_minute: QUOTA, tokens_per_minute: 100_000_000 },
      },
    });
    expect(spawned.status, JSON.stringify(spawned.body)).toBe(201);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
  });

  it(`admits exactly ${QUOTA} of ${MESSAGES} concurrent messages and refuses the rest with Retry-After`, async () => {
    const texts = Array.from({ length: MESSAGES }, (_, i) => `burst message ${i}`);
    const answers = await pool(texts, SOCKETS, (message) =>
      call<Reply>(`${daemon.url}/api/v1/fighters/quota-burst/message`, "POST", { message }),
    );
    const admitted = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    const serverErrors = answers.filter((a) => a.status >= 500).length;
    const unanswered = answers.filter((a) => a.status === 0).length;
    const other = MESSAGES - admitted.length - refused.length;
    const withRetryAfter = refused.filter(
      (a) => a.body.error?.code === "RATE_LIMITED" && Number(a.headers?.get("retry-after")) > 0,
    ).length;

    // Every admitted message once in its bout, every refused one nowhere.
    const bouts = new Set(admitted.map((a) => a.body.bout_id));
    const stored = new Map<string, number>();
    for (const bout of bouts) {
      const listed = await daemon.request<{ messages: StoredMessage[] }>(
        "GET",
        `/api/v1/bouts/${bout}/messages`,
      );
      for (const m of listed.body.messages.filter((m) => m.role === "user")) {
        stored.set(m.content, (stored.get(m.content) ?? 0) + 1);
      }
    }
    const admittedTexts = answers.flatMap((a, i) => (a.status === 200 ? [texts[i] as string] : []));
    const lost = admittedTexts.filter((t) => !stored.has(t)).length;
    const duplicated = [...stored.values()].filter((n) => n > 1).length;
    const storedRefused = answers.filter((a, i) => a.status === 429 && stored.has(texts[i] as string)).length;

    figure(
      `quota under load: ${MESSAGES} concurrent messages over a ${QUOTA}/min quota, admitted ${admitted.length}, ` +
        `RATE_LIMITED ${refused.length} (with Retry-After ${withRetryAfter}), other ${other}, 5xx ${serverErrors}, ` +
        `lost ${lost}, duplicated ${duplicated}`,
    );
    expect({ unanswered, serverErrors, other }).toEqual({ unanswered: 0, serverErrors: 0, other: 0 });
    expect(admitted).toHaveLength(QUOTA);
    expect(refused).toHaveLength(MESSAGES - QUOTA);
    expect(withRetryAfter).toBe(MESSAGES - QUOTA);
    expect({ lost, duplicated, storedRefused }).toEqual({ lost: 0, duplicated: 0, storedRefused: 0 });
    // Each admitted message got its own answer.
    expect(answers.every((a, i) => a.status !== 200 || a.body.response === `echo: ${texts[i]}`)).toBe(true);
    // One model call per admitted message, none for a refused one.
    expect(fake.calls()).toHaveLength(QUOTA);
  }, 60_000);
});
