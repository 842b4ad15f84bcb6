/**
 * Splitting a reply to a platform's length limit (Telegram 4,096 characters, Discord 2,000, Slack
 * 40,000 but 3,000 reads better): at a paragraph break when there is one in the second half of the
 * piece, else a line break, else a space, else hard. Surrogate pairs are never cut.
 */

/** The pieces of `text`, each at most `limit` UTF-16 units and none empty; `[]` for blank text. */
export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 2)
    throw new RangeError(`limit must be an integer ≥ 2, not ${limit}`);
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > limit) {
    const window = rest.slice(0, limit);
    let cut = -1;
    for (const separator of ["\n\n", "\n", " "]) {
      const at = window.lastIndexOf(separator);
      if (at >= limit / 2) {
        cut = at;
        break;
      }
    }
    if (cut < 0) {
      cut = limit;
      // Never split a surrogate pair: back off one unit when the cut lands inside one.
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    }
    const piece = rest.slice(0, cut).trimEnd();
    if (piece) parts.push(piece);
    rest = rest.slice(cut).trimStart();
  }
  if (rest) parts.push(rest);
  return parts;
}
