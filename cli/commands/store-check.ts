/**
 * `spar doctor`'s (and `spar init --fresh`'s) own look at the database while no daemon runs: opened
 * as start opens it (the Ring, through the active store plugin, with <data dir>/.env beneath the
 * environment), the store's integrity check awaited, then closed. Channels are left out: a channel
 * plugin checks its tokens when it applies, and its refusal says nothing about the database.
 */

import { discoverPlugins, pluginRoots } from "../../kernel/host/plugin-manifest.js";
import { createRing } from "../../kernel/ring.js";
import { readMasterSecret, withDotEnv } from "../../lib/home.js";
import { createLogger } from "../../lib/logger.js";
import type { SparConfig } from "../../sdk/config.js";
import type { StoreCheck } from "../../sdk/store-types.js";
import { KERNEL_VERSION } from "../../sdk/version.js";

/**
 * Opens the store and waits for its integrity check. Throws what opening throws (STORE_KEY_INVALID,
 * STORE_CORRUPT, …). The caller makes sure no daemon holds the data dir and a database exists:
 * opening an absent one would create it.
 *
 * @example
 * const check = await checkStoreOffline(home, loadConfig(home));
 * if (check.status === "corrupt") console.log(check.detail);
 */
export async function checkStoreOffline(
  home: string,
  config: SparConfig,
  // As start opens it: plugins read their secrets from <data dir>/.env too.
  env: NodeJS.ProcessEnv = withDotEnv(home),
): Promise<StoreCheck> {
  const plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  // Silent: the outcome is the answer, and the store would otherwise log it a second time.
  const log = createLogger(() => undefined);
  const sections = Object.entries(config.sections).filter(([path]) => !/^channels\.[^.]+$/.test(path));
  const storeOnly: SparConfig = { ...config, sections: Object.fromEntries(sections) };
  const ring = createRing({ config: storeOnly, home, env, version: KERNEL_VERSION, plugins, log });
  try {
    const secret = readMasterSecret(home, env);
    try {
      await ring.open(secret);
    } finally {
      secret.fill(0);
    }
    return await ring.services.store.integrity();
  } finally {
    await ring.close().catch(() => undefined);
  }
}
