// How each failure reaches the kernel: always PROVIDER_ERROR, with the status and retry-after the
// kernel's one retry policy (kernel/provider-call.ts) decides on. The driver itself never retries.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LlmRequest, ModelSettings } from "../../sdk/index.js";
import type { FakeAnthropic } from "../../test/fakes/anthropic-server.js";
import { startFakeAnthropic } from "../../test/fakes/anthropic-server.js";
import { chatRequest, failure } from "../../test/helpers/provider.js";
import { createAnthropicDriver } from "./driver.js";

const KEY_ENV = "SPAR_TEST_ANTHROPIC_KEY";
const KEY = "sk-ant-test-0123456789abcdef";

let fake: FakeAnthropic;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  settings = { provider: "anthropic", model: "claude-test", base_url: fake.url, api_key_env: KEY_ENV };
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

function driver(env: NodeJS.ProcessEnv = { [KEY_ENV]: KEY }, home?: string) {
  return createAnthropicDriver(settings, env, { home });
}

function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return chatRequest(settings, { system: "", ...overrides });
}

describe("anthropic driver failures", () => {
  it("names the variable and the .env file when the key is missing, before any request", async () => {
    const err = await failure(driver({}, "/srv/spar").complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe(`anthropic: no API key: set ${KEY_ENV} in the environment or in /srv/spar/.env`);
    expect(err.extra).toEqual({ provider: "anthropic", retryable: false });
    expect(fake.requests).toHaveLength(0);
  });

  it("maps a 500 to a retryable PROVIDER_ERROR with the API's message and status, without retrying", async () => {
    fake.enqueue({ status: 500, error_message: "Internal server error" });
    const err = await failure(driver().complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe("anthropic: 500 Internal server error");
    expect(err.extra).toEqual({ provider: "anthropic", provider_status: 500, retryable: true });
    expect(fake.requests).toHaveLength(1);
  });

  it("reports a 429's retry-after for the kernel to honour", async () => {
    fake.enqueue({ status: 429, error_message: "slow down", headers: { "retry-after": "3" } });
    const err = await failure(driver().complete(request({ onDelta: () => {} })));
    expect(err.extra).toEqual({
      provider: "anthropic",
      provider_status: 429,
      retryable: true,
      retry_after_s: 3,
    });
  });

  it("marks a 400 as not worth retrying", async () => {
    fake.enqueue({ status: 400, error_message: "messages: roles must alternate" });
    const err = await failure(driver().complete(request()));
    expect(err.message).toBe("anthropic: 400 messages: roles must alternate");
    expect(err.extra.retryable).toBe(false);
  });

  it("never repeats the key in an error message", async () => {
    fake.enqueue({ status: 401, error_message: `invalid x-api-key: ${KEY}` });
    const err = await failure(driver().complete(request()));
    expect(err.extra.provider_status).toBe(401);
    expect(err.message).not.toContain(KEY);
  });

  it("maps a truncated stream to PROVIDER_ERROR, after some deltas", async () => {
    fake.enqueue({ text: "this reply will be cut off somewhere in the middle", truncate_stream: true });
    const deltas: string[] = [];
    const err = await failure(driver().complete(request({ onDelta: (d) => deltas.push(d) })));
    expect(err.code).toBe("PROVIDER_ERROR");
    // undici's wording (its cause, "other side closed", is left unchecked across Node versions).
    expect(err.message).toMatch(/^anthropic: the connection broke mid-reply: terminated/);
    expect(err.extra.retryable).toBe(true);
    expect(deltas.length).toBeGreaterThan(0);
  });

  it.each([
    ["non-streamed", undefined],
    ["streamed", () => {}],
  ])("maps a malformed %s reply to PROVIDER_ERROR", async (_mode, onDelta) => {
    fake.enqueue({ malformed: true });
    // The streamed case also prints "Could not parse message into JSON" to stderr: the SDK logs the
    // event through a console binding it caches on first use, which a spy cannot reach.
    const err = await failure(driver().complete(request({ onDelta })));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toMatch(/^anthropic: the reply was not valid JSON: /);
  });

  it("maps an abort to PROVIDER_ERROR", async () => {
    fake.enqueue({ text: "never seen", delay_ms: 5_000 });
    const err = await failure(driver().complete(request({ signal: AbortSignal.timeout(50) })));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe("anthropic: Request was aborted.");
  });

  it("maps an abort mid-stream to PROVIDER_ERROR, not a short reply", async () => {
    fake.enqueue({ text: "one two three four five six seven eight" });
    const controller = new AbortController();
    const reply = driver().complete(
      request({ signal: controller.signal, onDelta: () => controller.abort() }),
    );
    const err = await failure(reply);
    expect(err.message).toBe("anthropic: Request was aborted.");
  });

  it("maps a refused connection to a retryable PROVIDER_ERROR", async () => {
    const gone = await startFakeAnthropic();
    await gone.close();
    const closed = createAnthropicDriver({ ...settings, base_url: gone.url }, { [KEY_ENV]: KEY });
    const err = await failure(closed.complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toMatch(/^anthropic: Connection error\. \(connect ECONNREFUSED /);
    expect(err.extra).toEqual({ provider: "anthropic", retryable: true });
  });
});
