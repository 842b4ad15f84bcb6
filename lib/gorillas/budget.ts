/**
 * A cycle's budgets, checked before every model call (`turn.prepare` of the gorilla's fighter): at
 * most `max_iterations` calls, and at most `max_tokens` input plus output tokens over the whole
 * cycle. The provider reports real usage only when the turn ends, so the budget counts an estimate
 * as the kernel makes it (4 characters a token): each call's prompt (system, messages, tool
 * definitions) as it is about to be sent, and each reply once it shows up in the next prompt. A call
 * is refused when the cycle so far plus that call's prompt would pass the budget: the prompt is
 * what a call is certain to cost, so the budget is never knowingly overspent; the reply of the last
 * call allowed is the only part that can go past it.
 */
import { messageTokens, promptTokens } from "../../sdk/index.js";

export interface BudgetLimits {
  max_iterations: number;
  max_tokens: number;
}

export type BudgetVerdict = { ok: true } | { ok: false; reason: string };

/**
 * One cycle's spending. `admit` is called with each prompt before its model call; it answers
 * whether the call may start and, when it may, counts it.
 *
 * @example
 * const budget = createCycleBudget({ max_iterations: 15, max_tokens: 200_000 });
 * const verdict = budget.admit(prompt);
 * if (!verdict.ok) throw new Error(verdict.reason);
 */
export function createCycleBudget(limits: BudgetLimits) {
  let calls = 0;
  let spent = 0;
  /** How many of the turn's messages the last prompt held: the replies after them are new output. */
  let seen = 0;
  return {
    admit(prompt: Parameters<typeof promptTokens>[0]): BudgetVerdict {
      // The replies and tool results since the last call: a reply is output that was paid for.
      for (const message of prompt.messages.slice(seen)) {
        if (message.role === "assistant") spent += messageTokens(message);
      }
      seen = prompt.messages.length;
      if (calls >= limits.max_iterations) {
        return {
          ok: false,
          reason: `hit its max_iterations budget: ${calls} model call${calls === 1 ? "" : "s"} without a final answer`,
        };
      }
      const input = promptTokens(prompt);
      if (spent + input > limits.max_tokens) {
        return {
          ok: false,
          reason:
            `hit its max_tokens budget of ${limits.max_tokens}: about ${spent} tokens spent in ${calls} ` +
            `model call${calls === 1 ? "" : "s"}, and the next call would send about ${input} more`,
        };
      }
      calls += 1;
      spent += input;
      return { ok: true };
    },
    /** Model calls admitted so far. */
    get calls() {
      return calls;
    },
    /** Estimated tokens so far: every admitted prompt and every reply seen since. */
    get spent() {
      return spent;
    },
  };
}

export type CycleBudget = ReturnType<typeof createCycleBudget>;
