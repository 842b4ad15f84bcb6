import { existsSync } from "node:fs";
import { join } from "node:path";
import { refuseReservedKeyVariables } from "../../lib/provider-keys.js";
import { readTomlFile } from "../../lib/toml-file.js";
import { parseListen, type SparConfig } from "../../sdk/config.js";
import { SparError } from "../../sdk/errors.js";
import { findForbiddenKey, forbiddenKeyMessage } from "../../sdk/safe-keys.js";
import { formatSchemaErrors, validatorWithDefaults } from "../../sdk/schema.js";
import { CONFIG_SCHEMA } from "../../sdk/schemas.js";

const CORE_KEYS = new Set(Object.keys(CONFIG_SCHEMA.properties));

/**
 * Reads `<home>/config.toml` (absent means all defaults), checks the kernel's keys with their paths,
 * applies environment overrides (`SPAR_API_LISTEN`) and keeps every other table in `sections` for
 * its owning plugin: `checkSections` (config-sections.ts) refuses the ones nobody owns.
 */
export function loadConfig(home: string, env = process.env): SparConfig {
  const path = join(home, "config.toml");
  const raw = existsSync(path) ? readTomlFile(path) : {};
  const forbidden = findForbiddenKey(raw);
  if (forbidden)
    throw new SparError("CONFIG_INVALID", forbiddenKeyMessage(forbidden, path), { path: forbidden.path });
  const core: Record<string, unknown> = {};
  const sections: Record<string, Record<string, unknown>> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (CORE_KEYS.has(key)) core[key] = value;
    else if (isTable(value)) sections[key] = value;
    else throw new SparError("CONFIG_INVALID", `${path}: unknown key "${key}"`, { path: key });
  }
  const validate = validatorWithDefaults(CONFIG_SCHEMA);
  if (!validate(core)) {
    throw new SparError("CONFIG_INVALID", `${path}: ${formatSchemaErrors(validate.errors, "")}`);
  }
  const config = { ...(core as Omit<SparConfig, "sections">), sections };
  if (env.SPAR_API_LISTEN) config.api_listen = env.SPAR_API_LISTEN;
  parseListen(config.api_listen);
  refuseReservedKeyVariables(path, config);
  return config;
}

export function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
