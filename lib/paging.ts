/** `?limit=&before=` as the list routes read them (gorilla runs, troop tasks): newest first, by pages. */
import { SparError } from "../sdk/index.js";

/** Items one page holds by default, and at most. */
const PAGE = 20;
const MAX_PAGE = 500;

/** The page a query asks for; `item` names what `before` must be ("run", "task"). */
export function pageOf(query: Record<string, string>, item: string): { limit: number; before?: string } {
  const raw = query.limit ?? String(PAGE);
  const limit = Number(raw);
  if (!/^\d+$/.test(raw) || limit < 1 || limit > MAX_PAGE) {
    throw new SparError(
      "VALIDATION_FAILED",
      `?limit must be an integer from 1 to ${MAX_PAGE}, not ${JSON.stringify(raw.slice(0, 40))}`,
      { path: "/querystring/limit" },
    );
  }
  const before = query.before;
  if (before !== undefined && !/^[A-Za-z0-9-]{1,64}$/.test(before)) {
    throw new SparError("VALIDATION_FAILED", `?before must be a ${item} id`, { path: "/querystring/before" });
  }
  return { limit, ...(before ? { before } : {}) };
}
