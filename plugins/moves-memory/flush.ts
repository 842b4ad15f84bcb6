/**
 * Nothing lost at compaction (`compaction.flush`): one call to the fighter's model reads the messages
 * about to leave its context and names the durable facts, preferences and commitments in them; each
 * is stored as a memory, under the key of the stored memory it updates when there is one, and left
 * out when it is already stored word for word. What the user and the fighter said is read; tool
 * results are not (what a web page says is not a fact about the user).
 */
import type { CompactionInput, FlushedFact, RingServices, TaintSource } from "../../sdk/index.js";
import type { Memories, MemoryRecord } from "./memories.js";

export const FLUSH_SYSTEM =
  "You keep an assistant's long-term memory. From the conversation excerpt, list the durable facts " +
  "about the user and their world, their preferences, and the commitments made (by either side) that " +
  "will still matter in later conversations. Skip small talk, one-off requests, and anything only a " +
  "tool or a web page said. When a fact updates one already remembered, reuse that memory's key. " +
  'Answer with JSON only: {"facts": [{"key": "short_snake_case_name", "value": "the fact, one sentence"}]}, ' +
  'or {"facts": []} when there is nothing to keep.';

/** Memories shown to the model so it reuses their keys for updates. */
const SHOWN_MEMORIES = 40;
const MAX_FACTS = 30;
const CLIP = 2_000;

const clip = (text: string) => (text.length > CLIP ? `${text.slice(0, CLIP)} […]` : text);

/** The excerpt the model reads: spoken messages only. */
export function flushTranscript(
  input: Pick<CompactionInput, "messages">,
  known: readonly MemoryRecord[],
): string {
  const lines = input.messages
    .filter((m) => (m.role === "user" || m.role === "assistant") && m.content.trim() !== "")
    .map((m) => `${m.role === "user" ? "User" : "Assistant"}: ${clip(m.content)}`);
  const remembered = known.map((m) => `- ${m.key}: ${clip(m.value)}`).join("\n");
  return `${remembered ? `Already remembered:\n${remembered}\n\n` : ""}Conversation excerpt:\n${lines.join("\n")}`;
}

/** The facts in a model's answer: JSON (perhaps in a code fence or with words around it); others are dropped. */
export function parseFacts(text: string): FlushedFact[] {
  const start = text.indexOf("{");
  const end = text.lastIndexOf("}");
  if (start < 0 || end <= start) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.slice(start, end + 1));
  } catch {
    return [];
  }
  const facts = (parsed as { facts?: unknown }).facts;
  if (!Array.isArray(facts)) return [];
  const out: FlushedFact[] = [];
  for (const f of facts.slice(0, MAX_FACTS)) {
    const { key, value } = (f ?? {}) as { key?: unknown; value?: unknown };
    if (typeof key !== "string" || typeof value !== "string") continue;
    const k = key.trim().slice(0, 200);
    const v = value.trim().slice(0, 20_000);
    if (k && v) out.push({ key: k, value: v });
  }
  return out;
}

const same = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

/**
 * Runs the flush for `input`: the memories stored (new or changed), in the model's order. A turn that
 * took in untrusted content marks the memories it leads to (`taint`), as memory_store does.
 */
export async function flushFacts(
  ring: Pick<RingServices, "llm">,
  memories: Pick<Memories, "put" | "recent">,
  input: CompactionInput,
  taint?: TaintSource,
): Promise<MemoryRecord[]> {
  const spoken = input.messages.some(
    (m) => (m.role === "user" || m.role === "assistant") && m.content.trim(),
  );
  if (!spoken) return [];
  const known = await memories.recent(input.fighter.id, SHOWN_MEMORIES);
  const reply = await ring.llm.complete(
    input.model,
    {
      system: FLUSH_SYSTEM,
      messages: [{ role: "user", content: flushTranscript(input, known) }],
      tools: [],
    },
    { fighter: input.fighter, bout_id: input.bout_id, turn_id: input.turn_id, origin: input.origin },
  );
  const stored: MemoryRecord[] = [];
  for (const fact of parseFacts(reply.text)) {
    const held = known.find((m) => same(m.key, fact.key) || same(m.value, fact.value));
    if (held && same(held.value, fact.value)) continue;
    stored.push(await memories.put(input.fighter.id, held?.key ?? fact.key, fact.value, taint));
  }
  return stored;
}
