// Small statistics over a list of samples: median, nearest-rank percentiles, min and max.

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Nearest-rank percentile: the smallest sample with at least p % of the samples at or below it. */
export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export function summarize(xs) {
  return {
    n: xs.length,
    median: median(xs),
    p50: percentile(xs, 50),
    p99: percentile(xs, 99),
    min: Math.min(...xs),
    max: Math.max(...xs),
  };
}

/** A number with a fixed count of decimals, or "n/a" for a missing one. */
export function num(x, digits = 0) {
  return Number.isFinite(x) ? x.toFixed(digits) : "n/a";
}

/** "412 ms (min 398, max 450)" */
export function medianSpread(xs, unit, digits = 0) {
  const s = summarize(xs);
  return `${num(s.median, digits)} ${unit} (min ${num(s.min, digits)}, max ${num(s.max, digits)})`;
}

/** "p50 1.20 ms, p99 4.80 ms" */
export function p50p99(xs, unit = "ms", digits = 2) {
  return `p50 ${num(percentile(xs, 50), digits)} ${unit}, p99 ${num(percentile(xs, 99), digits)} ${unit}`;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
