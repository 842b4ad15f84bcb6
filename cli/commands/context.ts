import type { PromptContext } from "../../sdk/services.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/**
 * `spar context`: what the fighter's next turn would send, part by part, each part's token estimate
 * (the kernel's, four characters a token, not the provider's count), whether it is in the stable,
 * cacheable prefix, and the input's cost at the model's price (README "What a turn's prompt holds").
 */
export async function context(
  options: GlobalOptions & { fighter: string; bout?: string; message?: string },
): Promise<void> {
  const { formatCost } = await import("../../lib/pricing.js");
  const query = new URLSearchParams({
    ...(options.bout !== undefined ? { bout: options.bout } : {}),
    ...(options.message !== undefined ? { message: options.message } : {}),
  }).toString();
  const path = `/api/v1/fighters/${encodeURIComponent(options.fighter)}/context${query ? `?${query}` : ""}`;
  const view = await api<PromptContext>("GET", path);
  if (options.json) return printJson(view);
  const rows = view.parts.map((p) => [
    p.part,
    p.source,
    p.stable ? "stable" : "varies",
    String(p.tokens),
    p.count === undefined ? "" : String(p.count),
  ]);
  rows.push(["TOTAL", "", "", String(view.input_tokens), ""]);
  const bout = view.bout_id ? `bout ${view.bout_id}` : "a new bout";
  const probe = view.message ? `the message ${JSON.stringify(view.message)}` : "an empty message";
  const out = [
    `${view.fighter}'s next turn, in ${bout}, on ${view.model.provider}/${view.model.model}, prepared for ${probe}:`,
    table([["PART", "FROM", "PREFIX", "TOKENS~", "COUNT"], ...rows]),
    "Tokens are the kernel's estimate (four characters a token), not the provider's count.",
    view.cache.enabled
      ? `Prompt cache: on; the stable prefix is ~${view.cache.stable_tokens} tokens.`
      : "Prompt cache: off.",
    view.cost
      ? `Input cost: ${formatCost(view.cost.uncached_micros, view.cost.currency)}` +
        (view.cost.cached_micros !== null
          ? `, or ${formatCost(view.cost.cached_micros, view.cost.currency)} with the stable prefix cached.`
          : ".")
      : "Input cost: unpriced (no price for this model; [[pricing]] in config.toml adds one).",
  ];
  process.stdout.write(`${out.join("\n")}\n`);
}
