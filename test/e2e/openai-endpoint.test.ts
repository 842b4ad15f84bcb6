/**
 * The OpenAI-compatible API end to end, with the official `openai` SDK as the client: the real
 * daemon, the fake LLM behind it. Chat streamed and not, bouts chosen by `user` and `X-Spar-Bout`,
 * a fighter's tools run server-side, models listed, refusals raised as the SDK's own exceptions
 * (404, 429 with Retry-After, 400, 401), an abort mid-stream cancelling the turn, and the arena
 * README's examples run word for word, unsigned from loopback and signed through a custom fetch.
 */
import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import OpenAI, { APIError } from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FighterRecord, StoredMessage, TurnRecord } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

type OpenAiErrorBody = { error: { message: string; type: string; param: string | null; code: string } };

const ROOT = resolve(import.meta.dirname, "..", "..");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The arena README's example from this machine, word for word (the daemon's address aside). */
const LOOPBACK_EXAMPLE = `import OpenAI from "openai";

const client = new OpenAI({ baseURL: "http://127.0.0.1:6660/v1", apiKey: "unused" });

const reply = await client.chat.completions.create({
  model: "spar",
  messages: [{ role: "user", content: "hello" }],
  user: "ada",
});
console.log(reply.choices[0].message.content);

const stream = await client.chat.completions.create({
  model: "spar",
  messages: [{ role: "user", content: "and again" }],
  user: "ada",
  stream: true,
});
for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta.content ?? "");
process.stdout.write("\\n");
`;

/** The arena README's example for a client that signs, word for word (the daemon's address aside). */
const SIGNED_EXAMPLE = `import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { signedHeaders } from "spar/sign";

const privateKey = readFileSync("laptop.key");
const client = new OpenAI({
  baseURL: "http://127.0.0.1:6660/v1",
  apiKey: "unused",
  // Every request signed with the key authorized as "laptop"; the body exactly as sent.
  fetch(url, init) {
    const body = typeof init.body === "string" ? init.body : undefined;
    const signed = signedHeaders({ method: init.method, url: String(url), body, keyId: "laptop", privateKey });
    const headers = new Headers(init.headers);
    for (const [name, value] of Object.entries(signed)) headers.set(name, value);
    return fetch(url, { ...init, headers });
  },
});

const reply = await client.chat.completions.create({
  model: "spar",
  messages: [{ role: "user", content: "hello" }],
});
console.log(reply.choices[0].message.content);
`;

/** The error an SDK call was refused with. */
async function refusal(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof APIError) return err;
    throw err;
  }
  throw new Error("the call was not refused");
}

/** A folder like a user's project: `openai` and `spar` in its node_modules. */
function project(): string {
  const work = mkdtempSync(join(tmpdir(), "spar-openai-"));
  mkdirSync(join(work, "node_modules"));
  symlinkSync(join(ROOT, "node_modules", "openai"), join(work, "node_modules", "openai"), "dir");
  symlinkSync(ROOT, join(work, "node_modules", "spar"), "dir");
  return work;
}

function runExample(work: string, source: string): Promise<{ code: number; stdout: string; stderr: string }> {
  writeFileSync(join(work, "example.mjs"), source);
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["example.mjs"],
      { cwd: work, env: { PATH: process.env.PATH }, timeout: 60_000 },
      (err, stdout, stderr) => done({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const arenaReadme = readFileSync(join(ROOT, "plugins", "arena-http", "README.md"), "utf8");
const mainReadme = readFileSync(join(ROOT, "README.md"), "utf8");

describe("the OpenAI-compatible API, through the openai SDK", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let client: OpenAI;
  let work: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url);
    daemon = await startDaemon(home, port);
    client = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
    work = project();
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
    if (work) removeHome(work);
  });

  beforeEach(() => fake.reset());

  const spawn = async (name: string, extra: Record<string, unknown> = {}) => {
    const made = await daemon.request<FighterRecord>("POST", "/api/v1/fighters", {
      manifest: { name, description: `the ${name} fighter`, system_prompt: `You are ${name}.`, ...extra },
    });
    expect(made.status).toBe(201);
    return made.body;
  };
  const turnsOf = async (bout: string) =>
    (await daemon.request<{ turns: TurnRecord[] }>("GET", `/api/v1/bouts/${bout}/turns`)).body.turns;
  const messagesOf = async (bout: string) =>
    (await daemon.request<{ messages: StoredMessage[] }>("GET", `/api/v1/bouts/${bout}/messages`)).body
      .messages;
  const status = async (fighter: string) =>
    (await daemon.request<FighterRecord>("GET", `/api/v1/fighters/${fighter}`)).body.status;
  /** The texts of the messages the fake LLM was sent in its `index`th request. */
  const sent = (index: number) =>
    (fake.requests[index]?.body?.messages ?? []).map((m) => (typeof m.content === "string" ? m.content : ""));

  it("answers a chat.completion: the last user message is the fighter's, its usage filled in", async () => {
    fake.enqueue({ text: "hello, Ada", usage: { prompt_tokens: 21, completion_tokens: 3 } });
    const { data, response } = await client.chat.completions
      .create({
        model: "spar",
        messages: [
          { role: "system", content: "the client's own system prompt" },
          { role: "user", content: "an old question" },
          { role: "assistant", content: "an old answer" },
          { role: "user", content: "hello" },
        ],
        temperature: 0.2,
        max_tokens: 64,
      })
      .withResponse();
    const bout = response.headers.get("x-spar-bout") ?? "";
    expect(bout).toMatch(UUID);
    const [turn] = await turnsOf(bout);
    expect(data).toEqual({
      id: `chatcmpl-${turn?.id}`,
      object: "chat.completion",
      created: expect.any(Number),
      model: "spar",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "hello, Ada", refusal: null },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: 21, completion_tokens: 3, total_tokens: 24 },
    });
    expect(Math.abs(data.created - Date.now() / 1000)).toBeLessThan(120);
    // The fighter has its own prompt and history: the client's copy is not sent on.
    const [call] = fake.calls();
    expect(call?.last_user_text).toBe("hello");
    expect(call?.system).not.toContain("the client's own system prompt");
    expect(call?.context).not.toContain("the client's own system prompt");
    expect(sent(0)).not.toContain("an old question");
    expect(turn).toMatchObject({ status: "completed", usage: { input_tokens: 21, output_tokens: 3 } });
  });

  it("streams chunks in OpenAI's shape, with a usage chunk when asked, and [DONE]", async () => {
    await spawn("streamer");
    fake.enqueue({ text: "one two three four", usage: { prompt_tokens: 12, completion_tokens: 4 } });
    const stream = await client.chat.completions.create({
      model: "streamer",
      messages: [{ role: "user", content: "count" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    const first = chunks[0];
    expect(first?.id).toMatch(/^chatcmpl-/);
    expect(chunks.every((c) => c.id === first?.id && c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks.every((c) => c.model === "streamer" && c.created === first?.created)).toBe(true);
    expect(first?.choices).toEqual([
      { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null },
    ]);
    const content = chunks.slice(1, -2).map((c) => c.choices[0]?.delta.content);
    expect(content.length).toBeGreaterThanOrEqual(3);
    expect(content.join("")).toBe("one two three four");
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-2)?.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]);
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 },
    });

    // On the wire: an event stream whose every event is one data line, ending with [DONE].
    const raw = await fetch(`${daemon.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "streamer",
        messages: [{ role: "user", content: "again" }],
        stream: true,
      }),
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(raw.headers.get("x-spar-bout")).toMatch(UUID);
    const events = (await raw.text()).split("\n\n");
    expect(events.pop()).toBe("");
    expect(events.at(-1)).toBe("data: [DONE]");
    expect(events.every((e) => /^data: [^\n]+$/.test(e))).toBe(true);
    const deltas = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    expect(deltas.map((d) => d.choices[0].delta.content ?? "").join("")).toBe("echo: again");
    expect(deltas.some((d) => "usage" in d)).toBe(false);
  });

  it("keeps one bout per user, each user continuing their own conversation", async () => {
    await spawn("shared");
    const say = (user: string, content: string) =>
      client.chat.completions
        .create({ model: "shared", user, messages: [{ role: "user", content }] })
        .withResponse();
    const boutOf = ({ response }: { response: Response }) => response.headers.get("x-spar-bout");

    const alice1 = await say("alice", "my name is Alice");
    const bob1 = await say("bob", "my name is Bob");
    const alice2 = await say("alice", "what is my name?");
    const bob2 = await say("bob", "what is mine?");
    expect(boutOf(alice2)).toBe(boutOf(alice1));
    expect(boutOf(bob2)).toBe(boutOf(bob1));
    expect(boutOf(bob1)).not.toBe(boutOf(alice1));
    expect(alice2.data.choices[0]?.message.content).toBe("echo: what is my name?");

    // What the model was sent: each user's own history, never the other's.
    expect(sent(2)).toEqual(expect.arrayContaining(["my name is Alice", "echo: my name is Alice"]));
    expect(sent(2).join(" ")).not.toContain("Bob");
    expect(sent(3)).toEqual(expect.arrayContaining(["my name is Bob", "echo: my name is Bob"]));
    expect(sent(3).join(" ")).not.toContain("Alice");

    // X-Spar-Bout: new with a user starts that user's next conversation.
    const fresh = await client.chat.completions
      .create(
        { model: "shared", user: "alice", messages: [{ role: "user", content: "start over" }] },
        { headers: { "X-Spar-Bout": "new" } },
      )
      .withResponse();
    expect(boutOf(fresh)).not.toBe(boutOf(alice1));
    const after = await say("alice", "still there?");
    expect(boutOf(after)).toBe(boutOf(fresh));
    expect(sent(5)).toContain("start over");
    expect(sent(5).join(" ")).not.toContain("my name is Alice");

    // A new user's first two messages at once share one bout, even while both wait for the
    // fighter, busy with someone else's turn.
    fake.enqueue({ text: "slowly", delay_ms: 1000 });
    const busy = say("dave", "take your time");
    await expect.poll(() => fake.requests.length).toBe(7);
    const both = await Promise.all([say("carol", "one"), say("carol", "two")]);
    expect(boutOf(both[1])).toBe(boutOf(both[0]));
    expect(boutOf(both[0])).not.toBe(boutOf(await busy));
  });

  it("starts a bout on X-Spar-Bout: new and continues the one it names", async () => {
    await spawn("bouter");
    const ask = (content: string, bout?: string) =>
      client.chat.completions
        .create(
          { model: "bouter", messages: [{ role: "user", content }] },
          bout ? { headers: { "X-Spar-Bout": bout } } : {},
        )
        .withResponse();
    const first = (await ask("first topic")).response.headers.get("x-spar-bout") ?? "";
    const second = (await ask("second topic", "new")).response.headers.get("x-spar-bout") ?? "";
    expect(second).toMatch(UUID);
    expect(second).not.toBe(first);
    expect(sent(1)).not.toContain("first topic");

    const back = await ask("back to the first", first);
    expect(back.response.headers.get("x-spar-bout")).toBe(first);
    expect(sent(2)).toContain("first topic");
    expect(sent(2)).not.toContain("second topic");
    // Without either, the fighter's latest bout, as on the message route.
    const latest = await ask("and now?");
    expect(latest.response.headers.get("x-spar-bout")).toBe(first);

    const unknown = await refusal(ask("lost", "00000000-0000-4000-8000-000000000000"));
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown.error).toMatchObject({ type: "invalid_request_error", code: "BOUT_NOT_FOUND" });
    const bad = await refusal(ask("lost", "yesterday"));
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad.message).toContain('"headers.x-spar-bout" must be a bout id (a UUID) or "new"');
  });

  it("runs the fighter's tools server-side and answers with the final reply only", async () => {
    await spawn("keeper");
    fake.enqueue({ tool_calls: [{ name: "memory_store", arguments: { key: "colour", value: "blue" } }] });
    const { data, response } = await client.chat.completions
      .create({ model: "keeper", messages: [{ role: "user", content: "remember: blue" }] })
      .withResponse();
    const [, second] = fake.calls();
    expect(second?.tool_results).toHaveLength(1);
    const message = data.choices[0]?.message;
    expect(message?.content).toBe(`done: ${second?.tool_results[0]}`);
    expect(message?.tool_calls).toBeUndefined();
    expect(data.choices[0]?.finish_reason).toBe("stop");
    const stored = await messagesOf(response.headers.get("x-spar-bout") ?? "");
    expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(stored[2]).toMatchObject({ name: "memory_store" });

    // Streamed: the client sees the final answer's text, nothing of the tool round.
    fake.enqueue({ tool_calls: [{ name: "memory_store", arguments: { key: "size", value: "large" } }] });
    const stream = await client.chat.completions.create({
      model: "keeper",
      messages: [{ role: "user", content: "remember: large" }],
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe(`done: ${fake.calls()[3]?.tool_results.at(-1)}`);
  });

  it("lists fighters as models, and refuses an unknown model with NotFoundError", async () => {
    const keeper = await daemon.request<FighterRecord>("GET", "/api/v1/fighters/keeper");
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models.map((m) => m.id)).toEqual(expect.arrayContaining(["spar", "streamer", "keeper"]));
    expect(models.find((m) => m.id === "keeper")).toEqual({
      id: "keeper",
      object: "model",
      created: Math.floor(Date.parse(keeper.body.created_at) / 1000),
      owned_by: "spar",
    });
    expect((await client.models.retrieve(keeper.body.id)).id).toBe("keeper");

    const missing = await refusal(
      client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }),
    );
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.status).toBe(404);
    expect(missing.error).toEqual({
      message: 'no fighter "gpt-4o": model is a fighter\'s name or id (GET /v1/models lists them)',
      type: "invalid_request_error",
      param: null,
      code: "model_not_found",
    });
    expect(await refusal(client.models.retrieve("gpt-4o"))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(fake.calls()).toHaveLength(0);
  });

  it("refuses a malformed request with OpenAI's envelope, naming the field", async () => {
    const noUser = await refusal(
      client.chat.completions.create({ model: "spar", messages: [{ role: "system", content: "hi" }] }),
    );
    expect(noUser).toBeInstanceOf(OpenAI.BadRequestError);
    expect(noUser.error).toMatchObject({ type: "invalid_request_error", param: "messages" });
    const badRole = await refusal(
      client.chat.completions.create({
        model: "spar",
        messages: [{ role: "robot", content: "hi" }],
      } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming),
    );
    expect(badRole.error).toMatchObject({ param: "messages[0].role", code: "VALIDATION_FAILED" });

    const post = async (path: string, body?: string, type = "application/json") => {
      const headers: Record<string, string> = body === undefined ? {} : { "content-type": type };
      const response = await fetch(`${daemon.url}${path}`, { method: "POST", headers, body });
      return { status: response.status, error: ((await response.json()) as OpenAiErrorBody).error };
    };
    expect(await post("/v1/chat/completions", "{bad")).toMatchObject({
      status: 400,
      error: { type: "invalid_request_error", param: null, code: "VALIDATION_FAILED" },
    });
    expect(await post("/v1/chat/completions", "hello", "text/plain")).toMatchObject({
      status: 415,
      error: { type: "invalid_request_error", code: "UNSUPPORTED_MEDIA_TYPE" },
    });
    for (const path of ["/v1/embeddings", "/v1"]) {
      expect(await post(path)).toMatchObject({
        status: 404,
        error: { type: "invalid_request_error", code: "NOT_FOUND" },
      });
    }
    expect(fake.calls()).toHaveLength(0);
  });

  it("raises RateLimitError with Retry-After once a fighter's quota is spent", async () => {
    await spawn("limited", { quota: { requests_per_minute: 1 } });
    const ask = (stream: boolean) =>
      client.chat.completions.create({
        model: "limited",
        messages: [{ role: "user", content: "hi" }],
        stream,
      });
    await ask(false);
    const limited = await refusal(ask(false));
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers?.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(limited.error).toMatchObject({ type: "rate_limit_error", code: "RATE_LIMITED", param: null });
    // Streamed too: the refusal comes before the stream, as an HTTP 429.
    expect(await refusal(ask(true))).toBeInstanceOf(OpenAI.RateLimitError);
    expect(fake.calls()).toHaveLength(1);
  });

  it("answers a provider failure with 502 api_error, before the stream and inside it", async () => {
    await spawn("failing");
    fake.enqueue({ status: 400, error_message: "the model refused the request" });
    const failed = await refusal(
      client.chat.completions
        .create({ model: "failing", messages: [{ role: "user", content: "try" }] })
        .withResponse(),
    );
    expect(failed).toBeInstanceOf(OpenAI.InternalServerError);
    expect(failed.status).toBe(502);
    expect(failed.error).toMatchObject({ type: "api_error", code: "PROVIDER_ERROR", param: null });
    // The turn had started: the answer names the bout that holds it, failed.
    const bout = failed.headers?.get("x-spar-bout") ?? "";
    expect((await turnsOf(bout))[0]).toMatchObject({ status: "failed", error: { code: "PROVIDER_ERROR" } });

    // After the first token the status is sent: the failure is an error chunk, and the stream ends.
    fake.enqueue(
      { text: "Noting it.", tool_calls: [{ name: "memory_store", arguments: { key: "k", value: "v" } }] },
      { status: 400, error_message: "the model gave up" },
    );
    const stream = await client.chat.completions.create({
      model: "failing",
      messages: [{ role: "user", content: "try again" }],
      stream: true,
    });
    let text = "";
    const midway = await refusal(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      })(),
    );
    expect(text).toBe("Noting it.");
    expect(midway.status).toBeUndefined();
    expect(midway.error).toMatchObject({ type: "api_error", code: "PROVIDER_ERROR", param: null });
    expect(midway.message).toContain("the model gave up");
    await expect.poll(() => status("failing")).toBe("idle");
  });

  it("cancels the turn when the client aborts mid-stream, and the fighter ends idle", async () => {
    await spawn("quitter");
    fake.enqueue(
      {
        text: "Let me write that down first.",
        tool_calls: [{ name: "memory_store", arguments: { key: "a", value: "b" } }],
      },
      { text: "never heard", delay_ms: 10_000 },
    );
    const { data: stream, response } = await client.chat.completions
      .create({ model: "quitter", messages: [{ role: "user", content: "note and answer" }], stream: true })
      .withResponse();
    const bout = response.headers.get("x-spar-bout") ?? "";
    let first: string | undefined;
    for await (const chunk of stream) {
      first = chunk.choices[0]?.delta.content || undefined;
      if (first === undefined) continue;
      stream.controller.abort();
      break;
    }
    expect(first).toBe("Let ");
    await expect.poll(async () => (await turnsOf(bout))[0]?.status).toBe("cancelled");
    const [turn] = await turnsOf(bout);
    expect(turn?.error).toMatchObject({
      code: "CANCELLED",
      message: expect.stringMatching(/client disconnected/),
    });
    await expect.poll(() => status("quitter")).toBe("idle");
    expect(fake.calls().length).toBeLessThanOrEqual(2);
  });

  it("runs the README's example from this machine: unsigned, a user's bout kept across calls", async () => {
    expect(arenaReadme).toContain(LOOPBACK_EXAMPLE);
    const example = LOOPBACK_EXAMPLE.replaceAll("127.0.0.1:6660", `127.0.0.1:${daemon.port}`);
    const result = await runExample(work, example);
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("echo: hello\necho: and again\n");
    expect(sent(1)).toEqual(expect.arrayContaining(["hello", "echo: hello", "and again"]));
  });

  it("is in the README, word for word", () => {
    expect(mainReadme).toContain(LOOPBACK_EXAMPLE);
  });
});

/** The same endpoint on a daemon that takes signed requests only: the API's authentication holds. */
describe("the OpenAI-compatible API when unsigned loopback is off", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let work: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, "\n[auth]\nallow_unsigned_loopback = false\n");
    daemon = await startDaemon(home, port);
    work = project();
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    writeFileSync(join(work, "laptop.key"), privateKey.export({ type: "pkcs8", format: "pem" }));
    writeFileSync(join(work, "laptop.pub"), publicKey.export({ type: "spki", format: "pem" }));
    const added = await daemon.cli(["key", "add", "laptop", join(work, "laptop.pub")]);
    expect(added.code, added.stderr).toBe(0);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
    if (work) removeHome(work);
  });

  it("refuses an unsigned OpenAI client with AuthenticationError; a Bearer key is not Spar's", async () => {
    const client = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "sk-anything", maxRetries: 0 });
    const refused = await refusal(
      client.chat.completions.create({ model: "spar", messages: [{ role: "user", content: "hi" }] }),
    );
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(refused.error).toMatchObject({ type: "authentication_error", code: "UNAUTHORIZED" });
    expect(refused.message).toContain("this daemon accepts signed requests only");
    expect(await refusal(client.models.list())).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(fake.calls()).toHaveLength(0);
  });

  it("runs the README's signed example: the SDK's fetch signs each request", async () => {
    expect(arenaReadme).toContain(SIGNED_EXAMPLE);
    const example = SIGNED_EXAMPLE.replaceAll("127.0.0.1:6660", `127.0.0.1:${daemon.port}`);
    const result = await runExample(work, example);
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("echo: hello\n");
  });
});
