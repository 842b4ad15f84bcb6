// How the ollama driver fails: every failure is a PROVIDER_ERROR the kernel can decide to retry, and
// the driver itself never retries (kernel/provider-call.ts owns retries and the deadline).
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { LlmRequest, ModelSettings } from "../../sdk/index.js";
import type { FakeOllama } from "../../test/fakes/ollama-server.js";
import { startFakeOllama } from "../../test/fakes/ollama-server.js";
import { chatRequest, failure } from "../../test/helpers/provider.js";
import { createOllamaDriver } from "./driver.js";

let fake: FakeOllama;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeOllama();
  settings = { provider: "ollama", model: "llama-test", base_url: fake.url };
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return chatRequest(settings, { system: "", ...overrides });
}

describe.each([
  ["non-streamed", undefined],
  ["streamed", () => {}],
])("HTTP errors, %s", (_mode, onDelta) => {
  it("maps a 500 to a retryable PROVIDER_ERROR with the runner's message and status, asked once", async () => {
    fake.enqueue({ status: 500, error_message: "llama runner process has terminated" });
    const err = await failure(createOllamaDriver(settings).complete(request({ onDelta })));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe("ollama: 500 llama runner process has terminated");
    expect(err.extra).toEqual({ provider: "ollama", provider_status: 500, retryable: true });
    expect(fake.requests).toHaveLength(1);
  });

  it("says a 404 model is not installed and how to pull it, not worth retrying", async () => {
    fake.enqueue({ status: 404 });
    const err = await failure(createOllamaDriver(settings).complete(request({ onDelta })));
    expect(err.message).toBe(
      `ollama: model "llama-test" not found at ${fake.url} ` +
        '(404 model "llama-test" not found, try pulling it first): run `ollama pull llama-test` first',
    );
    expect(err.extra).toEqual({ provider: "ollama", provider_status: 404, retryable: false });
  });

  it("reports a 429's retry-after (kept by the driver's fetch: the client's error drops headers)", async () => {
    fake.enqueue({ status: 429, error_message: "too many requests", headers: { "retry-after": "3" } });
    const err = await failure(createOllamaDriver(settings).complete(request({ onDelta })));
    expect(err.extra).toEqual({
      provider: "ollama",
      provider_status: 429,
      retryable: true,
      retry_after_s: 3,
    });
  });
});

it("never repeats the key in an error message", async () => {
  const key = "olk-secret-0123456789";
  fake.enqueue({ status: 401, error_message: `unauthorized key ${key}` });
  const keyed = createOllamaDriver({ ...settings, api_key_env: "K" }, { env: { K: key } });
  const err = await failure(keyed.complete(request()));
  expect(err.message).toBe("ollama: 401 unauthorized key ***");
  expect(err.extra.retryable).toBe(false);
});

describe("broken replies", () => {
  it("maps a truncated stream to PROVIDER_ERROR after the deltas that did arrive", async () => {
    fake.enqueue({ text: "this reply will be cut off somewhere in the middle", truncate_stream: true });
    const deltas: string[] = [];
    const err = await failure(
      createOllamaDriver(settings).complete(request({ onDelta: (d) => deltas.push(d) })),
    );
    expect(err.code).toBe("PROVIDER_ERROR");
    // undici's wording, "terminated" and its cause; the cause's text is left unchecked across Node versions.
    expect(err.message).toMatch(/^ollama: the connection broke mid-reply: terminated/);
    expect(err.extra.retryable).toBe(true);
    expect(deltas.length).toBeGreaterThan(0);
  });

  it("maps a malformed unstreamed body to PROVIDER_ERROR", async () => {
    fake.enqueue({ malformed: true });
    const err = await failure(createOllamaDriver(settings).complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toMatch(/^ollama: the reply was not valid JSON: /);
  });

  it("maps a malformed stream to PROVIDER_ERROR (the client skips the bad line, then misses `done`)", async () => {
    // ollama-js warns about each unparsable line on the console instead of failing on it.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      fake.enqueue({ malformed: true });
      const err = await failure(createOllamaDriver(settings).complete(request({ onDelta: () => {} })));
      expect(err.message).toBe("ollama: the stream ended before the reply was complete");
      expect(warn).toHaveBeenCalledOnce();
    } finally {
      warn.mockRestore();
    }
  });
});

describe("cancellation", () => {
  it.each([
    ["non-streamed", undefined],
    ["streamed", () => {}],
  ])(
    "rejects promptly when the signal fires while waiting, %s, and the runner sees the hang-up",
    async (_mode, onDelta) => {
      fake.enqueue({ text: "never seen", delay_ms: 10_000 });
      const started = Date.now();
      const err = await failure(
        createOllamaDriver(settings).complete(request({ onDelta, signal: AbortSignal.timeout(50) })),
      );
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(err.message).toBe("ollama: the request was aborted");
      expect(err.extra.retryable).toBe(false);
      await vi.waitFor(() => expect(fake.abandoned()).toBe(1));
    },
  );

  it("rejects mid-stream, not with a short reply", async () => {
    fake.enqueue({ text: "one two three four five six seven eight" });
    const controller = new AbortController();
    const deltas: string[] = [];
    const reply = createOllamaDriver(settings).complete(
      request({
        signal: controller.signal,
        onDelta: (d) => {
          deltas.push(d);
          controller.abort();
        },
      }),
    );
    const err = await failure(reply);
    expect(err.message).toBe("ollama: the request was aborted");
    expect(deltas).toEqual(["one "]);
    await vi.waitFor(() => expect(fake.abandoned()).toBe(1));
  });

  it("cancels the probe too", async () => {
    const err = await failure(createOllamaDriver(settings).probe(AbortSignal.abort()));
    expect(err.message).toBe("ollama: the request was aborted");
  });
});

describe("an unreachable runner", () => {
  it.each([
    ["complete", (d: ReturnType<typeof createOllamaDriver>) => d.complete(request())],
    ["probe", (d: ReturnType<typeof createOllamaDriver>) => d.probe(AbortSignal.timeout(5_000))],
  ])("maps a refused connection to a retryable PROVIDER_ERROR with a hint, %s", async (_name, run) => {
    const gone = await startFakeOllama();
    await gone.close();
    const err = await failure(run(createOllamaDriver({ ...settings, base_url: gone.url })));
    expect(err.message).toMatch(
      new RegExp(
        `^ollama: cannot reach the local runner at ${gone.url} — is \`ollama serve\` running\\? ` +
          "\\(fetch failed \\(connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+\\)\\)$",
      ),
    );
    expect(err.extra).toEqual({ provider: "ollama", retryable: true });
  });
});

it("rejects a base_url that is not a URL as a PROVIDER_ERROR not worth retrying", async () => {
  const err = await failure(
    createOllamaDriver({ ...settings, base_url: "http://no such host" }).complete(request()),
  );
  expect(err.message).toMatch(/^ollama: base_url "http:\/\/no such host" is not a URL: /);
  expect(err.extra.retryable).toBe(false);
});

it("maps an error line sent mid-stream to PROVIDER_ERROR with the runner's message", async () => {
  // The fake scripts no such line, so a stand-in fetch answers 200 with one text piece and the error.
  const lines = [
    '{"model":"m","message":{"role":"assistant","content":"par"},"done":false}',
    '{"error":"out of memory"}',
  ];
  const erroring: typeof fetch = async () =>
    new Response(`${lines.join("\n")}\n`, { headers: { "content-type": "application/x-ndjson" } });
  const deltas: string[] = [];
  const err = await failure(
    createOllamaDriver(settings, { fetch: erroring }).complete(request({ onDelta: (d) => deltas.push(d) })),
  );
  expect(err.message).toBe("ollama: out of memory");
  expect(err.extra).toEqual({ provider: "ollama", retryable: true });
  expect(deltas).toEqual(["par"]);
});
