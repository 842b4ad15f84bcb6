import type { CredentialCheck } from "../../lib/provider-keys.js";
import type { SparConfig } from "../../sdk/config.js";
import { SparError } from "../../sdk/errors.js";
import { estimateTokens } from "../../sdk/tokens.js";
import type { ModelSettings } from "../../sdk/types.js";
import type { FighterRegistry, LiveFighter } from "../fighters/fighter-registry.js";

/** The share of a model's context window one message may take. */
const MAX_MESSAGE_SHARE = 0.5;

/** The reply a turn is reserved for when its model sets no `max_tokens`. */
export const RESERVED_OUTPUT_TOKENS = 1024;

/**
 * The checks at the door (DESIGN §4 step 2) that refuse a message before anything is stored or
 * queued, and the token estimate its quota reservation holds.
 */
export function createAdmission(deps: {
  config: SparConfig;
  fighters: FighterRegistry;
  credentialFor: (settings: ModelSettings) => CredentialCheck;
  contextWindow: (model: ModelSettings) => number;
}) {
  const { config, fighters } = deps;

  /** A fighter already waiting in the chain would wait on itself: refused at once, never queued. */
  function refuseCycles(live: LiveFighter, chain: readonly string[]): void {
    const names = () => [...chain, live.row.id].map((id) => fighters.name(id)).join(" → ");
    if (chain.includes(live.row.id)) {
      throw new SparError(
        "CONFLICT",
        `fighter "${live.row.name}" is already waiting in this call chain (${names()}): a call back into it would wait on itself`,
        { chain: names() },
      );
    }
    if (chain.length >= config.agent.max_call_depth) {
      throw new SparError(
        "CONFLICT",
        `the call chain ${names()} is deeper than [agent] max_call_depth (${config.agent.max_call_depth})`,
        { chain: names() },
      );
    }
  }

  /**
   * One message may take at most half the model's context window: a bigger one would be re-sent on
   * every later turn and push everything else out, so it is refused before anything is stored.
   */
  function refuseOversized(live: LiveFighter, text: string, model: ModelSettings): void {
    const window = deps.contextWindow(model);
    const limit = Math.floor(window * MAX_MESSAGE_SHARE);
    const tokens = estimateTokens(text);
    if (tokens <= limit) return;
    throw new SparError(
      "PAYLOAD_TOO_LARGE",
      `the message is about ${tokens} tokens; one message may take at most half of the context window of ` +
        `fighter "${live.row.name}"'s model ${model.model} (${window} tokens), so ${limit} tokens (about ` +
        `${limit * 4} characters). Split it, or give the fighter a model with a larger context_window`,
      { limit_tokens: limit, message_tokens: tokens },
    );
  }

  /** A model that cannot be called (no key, a refused endpoint) is refused before anything is stored. */
  function refuseUncallable(model: ModelSettings): void {
    const check = deps.credentialFor(model);
    if (!check.ok)
      throw new SparError("PROVIDER_ERROR", check.problem, { provider: model.provider, retryable: false });
  }

  /**
   * What a turn is reserved against the token quota before it runs: the context it will send (as
   * the fighter's last turn left it, or its system prompt for a first one), the new message, and
   * the reply it may write (`max_tokens`, else RESERVED_OUTPUT_TOKENS).
   */
  function estimateTurnTokens(live: LiveFighter, text: string, model: ModelSettings): number {
    const context = live.contextTokens ?? estimateTokens(live.row.manifest.system_prompt);
    return context + estimateTokens(text) + (model.max_tokens ?? RESERVED_OUTPUT_TOKENS);
  }

  return { refuseCycles, refuseOversized, refuseUncallable, estimateTurnTokens };
}
