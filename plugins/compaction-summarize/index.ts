import {
  type CompactionInput,
  type CompactionStrategy,
  definePlugin,
  type RingServices,
} from "../../sdk/index.js";
import { transcript } from "./transcript.js";

export const SUMMARY_SYSTEM =
  "You summarize the earlier part of a conversation between a user and an AI assistant, so the " +
  "assistant can continue it without the full text. Keep every fact, decision, preference, name, " +
  "number and open question that may matter later; drop greetings and filler. Write plain prose or " +
  "short bullet points, no preamble.";

/** Asks the fighter's own model for a summary that extends (or, past its budget, condenses) the last one. */
export function createSummarizer(ring: RingServices): CompactionStrategy {
  return {
    name: "summarize",
    async compact(input: CompactionInput) {
      const previous = input.previous_summary ?? "";
      const condense = previous.length / 4 > input.summary_budget_tokens;
      const instruction = condense
        ? `The summary so far has grown too long: rewrite it with the new messages in at most ${input.summary_budget_tokens * 3} characters.`
        : "Write the updated summary: the summary so far, extended with the new messages.";
      const reply = await ring.llm.complete(
        input.model,
        {
          system: SUMMARY_SYSTEM,
          messages: [{ role: "user", content: `${transcript(previous, input.messages)}\n\n${instruction}` }],
          tools: [],
        },
        { fighter: input.fighter, bout_id: input.bout_id, turn_id: input.turn_id, origin: input.origin },
      );
      const summary = reply.text.trim();
      if (!summary) throw new Error("the model returned an empty summary");
      return { summary };
    },
  };
}

export default definePlugin({
  id: "compaction-summarize",
  apply({ hooks, ring }) {
    const summarizer = createSummarizer(ring);
    hooks.compaction.resolve.tap((name) => (name === "summarize" ? summarizer : undefined));
  },
});
