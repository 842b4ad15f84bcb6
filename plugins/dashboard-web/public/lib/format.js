/** Small formatters shared by the views: times, token counts, truncated text. */

/** An ISO time as the reader's locale shows it; "—" for none. */
export function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** "1,234 in / 56 out tokens" */
export function tokens(usage) {
  if (!usage) return "—";
  return `${usage.input_tokens.toLocaleString()} in / ${usage.output_tokens.toLocaleString()} out tokens`;
}

/** At most `max` characters, with an ellipsis when cut. */
export function clip(text, max = 160) {
  const value = String(text ?? "");
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}
