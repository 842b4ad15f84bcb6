import type { ModelSettings, RoutingConfig } from "../../sdk/index.js";

export type Tier = "cheap" | "mid" | "expensive";

export interface Classification {
  tier: Tier;
  score: number;
  /** Which signals counted, for logs and tests. */
  reasons: string[];
}

// Words that ask for reasoning, planning or analysis rather than a quick answer.
const REASONING =
  /\b(why|explain|analy[sz]e|analysis|compare|contrast|evaluate|assess|design|architect(ure)?|plan|strategy|trade-?offs?|prove|proof|derive|reason(ing)?|implications?|step[- ]by[- ]step|pros and cons|optimi[sz]e|debug|refactor|critique|investigate|root cause|risks?|assessments?|failure modes?)\b/gi;
const CODE_LINE =
  /^\s*(def |class |function |import |from \S+ import|const |let |var |return |#include|public |fn |SELECT |CREATE TABLE)|[;{}]\s*$|=>/m;
const IMAGE = /!\[[^\]]*\]\([^)]+\)|data:image\/|\bhttps?:\/\/\S+\.(png|jpe?g|gif|webp)\b/i;

/**
 * Picks a tier for a message with no LLM call: a deterministic score from its length, code,
 * reasoning and planning words, several questions, and images. 0–1 is cheap, 2–3 mid, 4+ expensive.
 */
export function classifyMessage(text: string): Classification {
  const reasons: string[] = [];
  let score = 0;
  const add = (points: number, reason: string) => {
    score += points;
    reasons.push(reason);
  };

  const length = text.length;
  if (length > 4000) add(3, "very long");
  else if (length > 1000) add(2, "long");
  else if (length > 280) add(1, "medium length");

  if (text.includes("```")) add(2, "code block");
  else if (CODE_LINE.test(text)) add(1, "code");

  // Each distinct ask counts: a short request dense with analysis and planning is an expensive one.
  const words = new Set((text.match(REASONING) ?? []).map((w) => w.toLowerCase()));
  if (words.size > 0) add(Math.min(5, words.size), `reasoning words: ${[...words].join(", ")}`);

  if ((text.match(/\?/g) ?? []).length >= 3) add(1, "several questions");
  if (IMAGE.test(text)) add(2, "image");

  const tier: Tier = score >= 4 ? "expensive" : score >= 2 ? "mid" : "cheap";
  return { tier, score, reasons };
}

/**
 * The model a message goes to when its fighter names none: with routing on, the classified tier's
 * model when that tier is configured; else `fallback` (`default_model`).
 */
export function routeModel(
  text: string,
  routing: RoutingConfig,
  fallback: ModelSettings,
): { model: ModelSettings; tier?: Tier; classification?: Classification } {
  if (!routing.enabled) return { model: fallback };
  const classification = classifyMessage(text);
  return { model: routing[classification.tier] ?? fallback, tier: classification.tier, classification };
}
