import { describe, expect, it } from "vitest";
import { SparError, validatorFor } from "../../sdk/index.js";
import { errorType, paramOf, toOpenAiError } from "./openai-errors.js";
import { chatBody } from "./openai-schema.js";

/** The error fastify raises when a body fails the route's schema. */
function schemaRefusal(body: unknown): Error {
  const validate = validatorFor(chatBody);
  expect(validate(body)).toBe(false);
  return Object.assign(new Error("body is invalid"), {
    validation: validate.errors,
    validationContext: "body",
  });
}

describe("errorType", () => {
  it("is OpenAI's type for each status class", () => {
    expect(errorType(400)).toBe("invalid_request_error");
    expect(errorType(404)).toBe("invalid_request_error");
    expect(errorType(413)).toBe("invalid_request_error");
    expect(errorType(401)).toBe("authentication_error");
    expect(errorType(403)).toBe("permission_error");
    expect(errorType(429)).toBe("rate_limit_error");
    expect(errorType(500)).toBe("api_error");
    expect(errorType(502)).toBe("api_error");
    expect(errorType(504)).toBe("api_error");
  });
});

describe("paramOf", () => {
  it("writes a body path in OpenAI's notation, and nothing for other places", () => {
    expect(paramOf("/body/messages/2/content")).toBe("messages[2].content");
    expect(paramOf("/body/messages/0/content/1/text")).toBe("messages[0].content[1].text");
    expect(paramOf("/body/n")).toBe("n");
    expect(paramOf("/headers/x-spar-bout")).toBeNull();
    expect(paramOf(undefined)).toBeNull();
  });
});

describe("toOpenAiError", () => {
  it("answers a quota refusal with 429, rate_limit_error and Retry-After in whole seconds", () => {
    const answer = toOpenAiError(
      new SparError("RATE_LIMITED", "fighter is resting", { retry_after_s: 12.3, fighter: "busy" }),
    );
    expect(answer).toEqual({
      status: 429,
      headers: { "retry-after": "13" },
      body: {
        error: { message: "fighter is resting", type: "rate_limit_error", param: null, code: "RATE_LIMITED" },
      },
    });
  });

  it("calls an unknown fighter model_not_found", () => {
    const answer = toOpenAiError(new SparError("FIGHTER_NOT_FOUND", 'no fighter "gpt-4o"'));
    expect(answer.status).toBe(404);
    expect(answer.body.error).toEqual({
      message: 'no fighter "gpt-4o"',
      type: "invalid_request_error",
      param: null,
      code: "model_not_found",
    });
  });

  it("maps the catalog's statuses: authentication, size, provider failures", () => {
    const of = (code: ConstructorParameters<typeof SparError>[0]) => {
      const { status, body } = toOpenAiError(new SparError(code, "m"));
      return [status, body.error.type, body.error.code];
    };
    expect(of("UNAUTHORIZED")).toEqual([401, "authentication_error", "UNAUTHORIZED"]);
    expect(of("VALIDATION_FAILED")).toEqual([400, "invalid_request_error", "VALIDATION_FAILED"]);
    expect(of("PAYLOAD_TOO_LARGE")).toEqual([413, "invalid_request_error", "PAYLOAD_TOO_LARGE"]);
    expect(of("BOUT_NOT_FOUND")).toEqual([404, "invalid_request_error", "BOUT_NOT_FOUND"]);
    expect(of("PROVIDER_ERROR")).toEqual([502, "api_error", "PROVIDER_ERROR"]);
    expect(of("PROVIDER_TIMEOUT")).toEqual([504, "api_error", "PROVIDER_TIMEOUT"]);
  });

  it("says nothing of an unexpected error but that it happened", () => {
    const answer = toOpenAiError(new Error("secret path /home/x/.spar/spar.db"));
    expect(answer.status).toBe(500);
    expect(answer.body.error).toEqual({
      message: "internal error",
      type: "api_error",
      param: null,
      code: "INTERNAL",
    });
  });

  it("names the refused field of a body in the client's terms", () => {
    const role = toOpenAiError(schemaRefusal({ messages: [{ role: "robot", content: "hi" }] }));
    expect(role.status).toBe(400);
    expect(role.body.error).toEqual({
      message: '"messages[0].role" must be one of: system, developer, user, assistant, tool, function',
      type: "invalid_request_error",
      param: "messages[0].role",
      code: "VALIDATION_FAILED",
    });
    const unknown = toOpenAiError(schemaRefusal({ messages: [{ role: "user", content: "hi" }], tempo: 1 }));
    expect(unknown.body.error).toMatchObject({ message: 'unknown key "tempo"', param: null });
    const missing = toOpenAiError(schemaRefusal({ model: "spar" }));
    expect(missing.body.error.message).toBe('missing required key "messages"');
  });
});

describe("chatBody", () => {
  it("accepts what OpenAI clients send, optional fields and nulls included", () => {
    const validate = validatorFor(chatBody);
    const body = {
      model: "spar",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "assistant", content: null, tool_calls: [], refusal: null },
        { role: "tool", content: "42", tool_call_id: "call_1" },
        { role: "user", content: "and now?", name: "ada" },
      ],
      stream: true,
      stream_options: { include_usage: true },
      user: "ada",
      temperature: 0.2,
      top_p: null,
      max_tokens: 100,
      max_completion_tokens: null,
      n: 1,
      stop: ["\n"],
      seed: 7,
      tools: [{ type: "function", function: { name: "f", parameters: {} } }],
      tool_choice: "auto",
      parallel_tool_calls: true,
      response_format: { type: "text" },
      metadata: { run: "1" },
      reasoning_effort: "low",
      logprobs: false,
      presence_penalty: 0,
      frequency_penalty: 0,
      store: false,
    };
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
  });
});
