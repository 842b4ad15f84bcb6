/** `[moves.shell]` in config.toml; the schema and defaults are in plugin.json. */
export interface ShellSettings {
  timeout_s: number;
  max_output_bytes: number;
  path: string;
}
