/**
 * Folds the Messages API's streamed events into one reply: text deltas as they come, tool_use blocks
 * from their `input_json_delta` pieces, usage from message_start and message_delta. Type-only SDK
 * imports, like wire.ts.
 */
import type {
  RawMessageStreamEvent,
  StopReason as WireStopReason,
} from "@anthropic-ai/sdk/resources/messages";
import type { LlmResponse, ToolCall } from "../../sdk/index.js";
import { parseToolCall, stopReason, usageOf, type WireUsage } from "./wire.js";

/** A reply the SDK accepted but the driver cannot use; its message is already fit for people. */
export class IncompleteReply extends Error {}

export async function foldStream(
  events: AsyncIterable<RawMessageStreamEvent>,
  onDelta: (text: string) => void,
  requested: { model: string; signal?: AbortSignal },
): Promise<LlmResponse> {
  let text = "";
  let model = requested.model;
  let stop: WireStopReason | null = null;
  let finished = false;
  // Folded as reported: message_start has every count, message_delta the running ones it repeats.
  let usage: WireUsage = {};
  // Keyed by block index: a tool_use block's id and name come at its start, its input in pieces.
  const open = new Map<number, { id: string; name: string; json: string }>();
  const calls = new Map<number, ToolCall>();
  for await (const event of events) {
    switch (event.type) {
      case "message_start":
        model = event.message.model || model;
        usage = { ...event.message.usage };
        break;
      case "content_block_start":
        if (event.content_block.type === "tool_use") {
          open.set(event.index, { id: event.content_block.id, name: event.content_block.name, json: "" });
        }
        break;
      case "content_block_delta":
        if (event.delta.type === "text_delta") {
          text += event.delta.text;
          onDelta(event.delta.text);
        } else if (event.delta.type === "input_json_delta") {
          const use = open.get(event.index);
          if (use) use.json += event.delta.partial_json;
        }
        break;
      case "content_block_stop": {
        const use = open.get(event.index);
        if (use) calls.set(event.index, parseToolCall(use.id, use.name, use.json));
        open.delete(event.index);
        break;
      }
      case "message_delta":
        stop = event.delta.stop_reason ?? stop;
        // Every count is cumulative; the input ones are only repeated here by some API versions.
        usage = { ...usage, ...definedCounts(event.usage) };
        break;
      case "message_stop":
        finished = true;
        break;
    }
  }
  // The SDK ends the iteration quietly on abort, and a server may close cleanly mid-reply: neither
  // may pass for a finished answer.
  if (requested.signal?.aborted) throw new IncompleteReply("Request was aborted.");
  if (!finished || stop === null) throw new IncompleteReply("the stream ended before the reply was complete");
  const ordered = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  return { text, tool_calls: ordered, usage: usageOf(usage), stop_reason: stopReason(stop), model };
}

/** The counts a message_delta gives (null or absent: not repeated). */
function definedCounts(counts: WireUsage): WireUsage {
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => typeof n === "number"));
}
