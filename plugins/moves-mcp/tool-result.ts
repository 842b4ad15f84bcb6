import { isDeepStrictEqual } from "node:util";

/** A `tools/call` result as the MCP spec shapes it (only what is read here). */
export interface ToolResult {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  /** The result shape of protocol version 2024-10-07, which some old servers still send. */
  toolResult?: unknown;
}

type Block = { type?: unknown; [key: string]: unknown };

/**
 * What the model gets from a tool result: its text blocks in order, one line each for what text
 * cannot carry (images, audio, binary resources, links: their kind, type and size, never the bytes),
 * and the structured content as JSON when the result has some that no text block already holds
 * (servers are asked to repeat it as text, so it is not sent twice).
 *
 * @example
 * resultText({ content: [{ type: "text", text: "3 events" }], structuredContent: { count: 3 } })
 * // '3 events\n{"count":3}'
 */
export function resultText(result: ToolResult): string {
  if (result.content === undefined && result.toolResult !== undefined)
    return JSON.stringify(result.toolResult);
  const blocks = (result.content ?? []).filter((b): b is Block => typeof b === "object" && b !== null);
  const parts = blocks.map(blockText);
  const structured = result.structuredContent;
  if (structured !== undefined && structured !== null) {
    const repeated = blocks.some(
      (b) => b.type === "text" && typeof b.text === "string" && sameJson(b.text, structured),
    );
    if (!repeated) parts.push(JSON.stringify(structured));
  }
  const text = parts.join("\n");
  return text === "" ? "(the tool returned no content)" : text;
}

function blockText(block: Block): string {
  const mime = typeof block.mimeType === "string" ? block.mimeType : "unknown type";
  switch (block.type) {
    case "text":
      return typeof block.text === "string" ? block.text : "";
    case "image":
    case "audio":
      return `[${block.type} (${mime}), ${base64Bytes(block.data)} bytes, not shown]`;
    case "resource": {
      const resource = (block.resource ?? {}) as Block;
      const uri = typeof resource.uri === "string" ? resource.uri : "?";
      if (typeof resource.text === "string") return `[resource ${uri}]\n${resource.text}`;
      const type = typeof resource.mimeType === "string" ? resource.mimeType : "unknown type";
      return `[resource ${uri} (${type}), ${base64Bytes(resource.blob)} bytes, not shown]`;
    }
    case "resource_link": {
      const name = typeof block.name === "string" ? `${block.name} ` : "";
      return `[resource link: ${name}${String(block.uri ?? "?")}]`;
    }
    default:
      return `[${String(block.type ?? "unknown")} content, not shown]`;
  }
}

function base64Bytes(data: unknown): number {
  if (typeof data !== "string") return 0;
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - padding;
}

function sameJson(text: string, value: unknown): boolean {
  try {
    return isDeepStrictEqual(JSON.parse(text), value);
  } catch {
    return false;
  }
}
