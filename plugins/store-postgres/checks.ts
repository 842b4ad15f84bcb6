/** The store's clock. (What it checks of the values it is given is lib/store-checks.ts, shared with store-sqlite.) */
/**
 * ISO timestamps that strictly increase within a store, so "latest" and "newest first" never depend
 * on two writes landing in the same millisecond.
 */
export function createClock(): () => string {
  let last = 0;
  return () => {
    last = Math.max(Date.now(), last + 1);
    return new Date(last).toISOString();
  };
}
