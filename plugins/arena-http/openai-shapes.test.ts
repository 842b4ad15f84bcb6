import { describe, expect, it } from "vitest";
import { type FighterMessageResult, isSparError } from "../../sdk/index.js";
import type { ChatMessageInput } from "./openai-schema.js";
import {
  chunkOf,
  completionOf,
  finishReason,
  headOf,
  lastUserText,
  modelOf,
  streamTail,
  usageChunkOf,
} from "./openai-shapes.js";

function refusal(messages: ChatMessageInput[]): { message: string; path: unknown } {
  try {
    lastUserText(messages);
  } catch (err) {
    if (isSparError(err, "VALIDATION_FAILED")) return { message: err.message, path: err.extra.path };
    throw err;
  }
  throw new Error("accepted");
}

const result = (over: Partial<FighterMessageResult> = {}): FighterMessageResult => ({
  bout_id: "b0000000-0000-4000-8000-000000000000",
  turn_id: "t0000000-0000-4000-8000-000000000000",
  response: "hello there",
  usage: { input_tokens: 30, output_tokens: 4 },
  iterations: 1,
  tool_calls: [],
  model: "fake-model",
  stop_reason: "end",
  ...over,
});

const head = headOf("t0000000-0000-4000-8000-000000000000", 1_700_000_000, { name: "spar" });

describe("lastUserText", () => {
  it("takes the last user message, not the client's copy of the history before it", () => {
    expect(
      lastUserText([
        { role: "system", content: "be brief" },
        { role: "user", content: "first" },
        { role: "assistant", content: "answer" },
        { role: "user", content: "second" },
      ]),
    ).toBe("second");
  });

  it("joins text parts with newlines", () => {
    expect(
      lastUserText([
        {
          role: "user",
          content: [
            { type: "text", text: "line one" },
            { type: "text", text: "line two" },
          ],
        },
      ]),
    ).toBe("line one\nline two");
  });

  it("refuses a request without a user message, naming messages", () => {
    expect(refusal([{ role: "system", content: "be brief" }])).toEqual({
      message: "messages has no user message: the last user message is what the fighter answers",
      path: "/body/messages",
    });
  });

  it("refuses a part the fighter cannot read instead of dropping it", () => {
    expect(
      refusal([
        { role: "user", content: "earlier" },
        {
          role: "user",
          content: [{ type: "text", text: "what is this?" }, { type: "image_url" }],
        },
      ]),
    ).toEqual({
      message:
        'messages[1].content[1] is a "image_url" part; fighters read text only: send the message as text parts',
      path: "/body/messages/1/content/1",
    });
  });

  it("refuses a last user message without text", () => {
    expect(refusal([{ role: "user", content: "  " }])).toEqual({
      message: "messages[0], the last user message, has no text",
      path: "/body/messages/0/content",
    });
    expect(refusal([{ role: "user", content: null }]).path).toBe("/body/messages/0/content");
    expect(refusal([{ role: "user", content: [{ type: "text" }] }]).path).toBe(
      "/body/messages/0/content/0/text",
    );
  });
});

describe("a reply as OpenAI's objects", () => {
  it("is a chat.completion, its id the turn's", () => {
    expect(completionOf(head, result())).toEqual({
      id: "chatcmpl-t0000000-0000-4000-8000-000000000000",
      object: "chat.completion",
      created: 1_700_000_000,
      model: "spar",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "hello there", refusal: null },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 },
    });
  });

  it("finishes with length when the turn ran out of iterations", () => {
    expect(finishReason("max_iterations")).toBe("length");
    expect(finishReason("loop_guard")).toBe("stop");
    expect(finishReason("end")).toBe("stop");
    expect(completionOf(head, result({ stop_reason: "max_iterations" })).choices[0]?.finish_reason).toBe(
      "length",
    );
  });

  it("streams chunks with one choice, carrying usage: null only when usage was asked for", () => {
    expect(chunkOf(head, { content: "hel" }, null, false)).toEqual({
      id: head.id,
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "spar",
      choices: [{ index: 0, delta: { content: "hel" }, logprobs: null, finish_reason: null }],
    });
    expect(chunkOf(head, {}, "stop", true)).toEqual({
      id: head.id,
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "spar",
      choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }],
      usage: null,
    });
    expect(usageChunkOf(head, { input_tokens: 30, output_tokens: 4 })).toEqual({
      id: head.id,
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "spar",
      choices: [],
      usage: { prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 },
    });
  });

  it("owes the whole reply when nothing streamed, and the kernel's stop note after the model's words", () => {
    expect(streamTail(false, result())).toBe("hello there");
    expect(streamTail(true, result())).toBe("");
    const stopped = result({ stop_reason: "loop_guard", response: "Stopped: the model called f 3 times" });
    expect(streamTail(true, stopped)).toBe("\n\nStopped: the model called f 3 times");
  });

  it("lists a fighter as a model under its name", () => {
    expect(
      modelOf({
        id: "f0000000-0000-4000-8000-000000000000",
        name: "Zoë the 🐉",
        description: "d",
        status: "idle",
        weight_class: "middleweight",
        model: { provider: "openai", model: "fake-model" },
        capabilities: [],
        skills: [],
        created_at: "2026-01-02T03:04:05.678Z",
      }),
    ).toEqual({ id: "Zoë the 🐉", object: "model", created: 1_767_323_045, owned_by: "spar" });
  });
});
