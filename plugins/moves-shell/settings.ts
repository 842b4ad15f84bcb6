import { readFileSync } from "node:fs";
import { join } from "node:path";

/** `[moves.shell]` in config.toml; the schema and defaults are in plugin.json. */
export interface ShellSettings {
  timeout_s: number;
  max_output_bytes: number;
  path: string;
}

/**
 * The table as config.toml gave it, over the defaults in the plugin's own plugin.json (in `dir`).
 * The kernel checks a table that is present and fills in its defaults, but hands a nested table
 * (`moves.shell`) that config.toml leaves out over empty.
 */
export function withDefaults(dir: string, table: Partial<ShellSettings> | undefined): ShellSettings {
  const manifest = JSON.parse(readFileSync(join(dir, "plugin.json"), "utf8")) as {
    sections: { "moves.shell": { properties: Record<keyof ShellSettings, { default: unknown }> } };
  };
  const properties = manifest.sections["moves.shell"].properties;
  const defaults = Object.fromEntries(
    Object.entries(properties).map(([key, schema]) => [key, schema.default]),
  ) as unknown as ShellSettings;
  return { ...defaults, ...table };
}
