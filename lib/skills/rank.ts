/**
 * Deterministic ranking of skills and moves for a query: no model call, the same answer for the same
 * catalog and text. Words are lowercased and reduced to a crude stem (so "reviewing", "reviews" and
 * "review" meet); each query word that appears in an entry scores by where it appears (name ×3, tags
 * ×2, description ×1) and by how rare it is across the catalog (a word every entry has counts for
 * little). Ties break by name, so the order is total.
 */

/** What can be ranked: a skill (name, description, tags) or a move (name, description). */
export interface Rankable {
  name: string;
  description: string;
  tags?: readonly string[];
}

/** One entry a query matched, with its score. */
export interface Ranked<T> {
  item: T;
  score: number;
  /** How many of the query's words the entry has. */
  matched: number;
  /** Whether one of them is in its name or tags, not only its description. */
  named: boolean;
}

const STOPWORDS = new Set(
  (
    "a an and are as at be by can could do does for from get give help how i in into is it its me my of " +
    "on or our please should so some that the their them then there these this to up us use using was " +
    "we what when where which who why will with would you your"
  ).split(" "),
);

/** A crude suffix stemmer: enough for English query words to meet their forms in descriptions. */
export function stem(word: string): string {
  let w = word;
  for (const suffix of ["ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "es", "ed", "ly", "s"]) {
    if (w.length - suffix.length >= 3 && w.endsWith(suffix)) {
      w = w.slice(0, -suffix.length) + (suffix === "ies" || suffix === "ied" ? "y" : "");
      break;
    }
  }
  return w;
}

/** The stems of a text's words (letters and digits, split on everything else, `_` and `-` included). */
export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])
    .filter((w) => w.length > 1 && !STOPWORDS.has(w))
    .map(stem);
}

interface Indexed<T> {
  item: T;
  name: Set<string>;
  tags: Set<string>;
  description: Set<string>;
}

/** An index over a catalog, built once and queried many times. */
export function rankIndex<T extends Rankable>(catalog: readonly T[]) {
  const entries: Indexed<T>[] = catalog.map((item) => ({
    item,
    name: new Set(terms(item.name)),
    tags: new Set((item.tags ?? []).flatMap(terms)),
    description: new Set(terms(item.description)),
  }));
  const frequency = new Map<string, number>();
  for (const e of entries) {
    for (const t of new Set([...e.name, ...e.tags, ...e.description]))
      frequency.set(t, (frequency.get(t) ?? 0) + 1);
  }
  const rarity = (t: string) => Math.log(1 + entries.length / (frequency.get(t) ?? 1));

  return {
    /** The entries matching `query`, best first; at most `limit`, and only those scoring `min` or more. */
    search(query: string, limit = 10, min = 0): Ranked<T>[] {
      const words = [...new Set(terms(query))];
      if (words.length === 0) return [];
      const ranked: Ranked<T>[] = [];
      for (const e of entries) {
        let score = 0;
        let matched = 0;
        let named = false;
        for (const w of words) {
          const weight = (e.name.has(w) ? 3 : 0) + (e.tags.has(w) ? 2 : 0) + (e.description.has(w) ? 1 : 0);
          if (weight > 0) matched += 1;
          if (weight > 1) named = true;
          score += weight * rarity(w);
        }
        // Entries that meet more of the query's words come first among similar scores.
        score *= 0.5 + (0.5 * matched) / words.length;
        if (score > 0 && score >= min) {
          ranked.push({ item: e.item, score: Math.round(score * 1000) / 1000, matched, named });
        }
      }
      ranked.sort((a, b) => b.score - a.score || a.item.name.localeCompare(b.item.name));
      return ranked.slice(0, limit);
    },
  };
}
