/** How relevance fades: one formula for memories and the Creed's observations. */
const DAY_MS = 86_400_000;

/** score(t) = score0 · e^(−rate · t), t in days since the score was set. */
export function decayedScore(score0: number, scoredAt: string, now: number, ratePerDay: number): number {
  const days = Math.max(0, (now - Date.parse(scoredAt)) / DAY_MS);
  return score0 * Math.exp(-ratePerDay * days);
}
