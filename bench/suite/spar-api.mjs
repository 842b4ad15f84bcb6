// The few calls of Spar's HTTP API the benchmarks make.
import { pool, post } from "./http.mjs";

/** A fighter that costs its model as little as a fighter can: a one-line prompt, no tools. */
export const minimalManifest = (name) => ({
  name,
  description: "a benchmark fighter",
  system_prompt: "Be brief.",
  capabilities: [],
});

/** Spawns fighters `${prefix}0` … with `concurrency` requests at a time; returns their names. */
export async function spawnFighters(api, prefix, count, concurrency = 8) {
  const names = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  const ms = await pool(count, concurrency, (i) =>
    post(`${api}/fighters`, { manifest: minimalManifest(names[i]) }),
  );
  return { names, ms };
}

/** One message; resolves with the reply, rejects on any status but 200. */
export const message = (api, fighter, text, extra = {}) =>
  post(`${api}/fighters/${encodeURIComponent(fighter)}/message`, { message: text, ...extra });

/** Messages per bout in the steady-load parts: each fighter starts a new bout every this many. */
export const BOUT_TURNS = 20;

/**
 * Message number `i` of a steady load spread over `names`: to fighter i mod n, starting a new bout
 * every BOUT_TURNS messages to that fighter, so that bouts stay as long as a typical chat's and the
 * figures do not drift with one ever-growing history.
 */
export function steadyMessage(api, names, i, tag) {
  const turn = Math.floor(i / names.length);
  return message(api, names[i % names.length], `${tag} ${i}`, turn % BOUT_TURNS === 0 ? { bout: "new" } : {});
}
