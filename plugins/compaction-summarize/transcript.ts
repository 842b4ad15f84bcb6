import type { StoredMessage } from "../../sdk/index.js";

/** Long messages are clipped in the transcript: a summary needs their gist, not every byte. */
const CLIP = 2000;

function clip(text: string): string {
  return text.length > CLIP ? `${text.slice(0, CLIP)} […]` : text;
}

function line(m: StoredMessage): string {
  if (m.role === "user") return `User: ${clip(m.content)}`;
  if (m.role === "tool") return `Result of ${m.name}${m.is_error ? " (error)" : ""}: ${clip(m.content)}`;
  const calls = (m.tool_calls ?? []).map((c) => `${c.name}(${JSON.stringify(c.arguments)})`);
  const said = m.content ? `Assistant: ${clip(m.content)}` : "";
  const called = calls.length > 0 ? `Assistant called: ${calls.join(", ")}` : "";
  return [said, called].filter(Boolean).join("\n");
}

/** The summary so far and the messages to fold into it, as plain text for the summarizing model. */
export function transcript(previous: string, messages: readonly StoredMessage[]): string {
  const head = previous ? `Summary so far:\n${previous}\n\n` : "";
  return `${head}New messages:\n${messages.map(line).join("\n")}`;
}
