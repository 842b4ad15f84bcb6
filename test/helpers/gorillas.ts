/** User gorillas for tests: a GORILLA.toml written into a data dir's `gorillas/<name>/`. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Writes `body` as the gorilla `name`'s GORILLA.toml in `home`. */
export function writeGorilla(home: string, name: string, body: string): void {
  mkdirSync(join(home, "gorillas", name), { recursive: true });
  writeFileSync(join(home, "gorillas", name, "GORILLA.toml"), body);
}

/** A test gorilla's GORILLA.toml: it may call memory_store; `settings` is the `[settings]` table's body. */
export function gorillaToml(name: string, schedule: string, settings: string): string {
  return [
    `name = "${name}"`,
    `description = "The ${name} test gorilla."`,
    `schedule = "${schedule}"`,
    `moves = ["memory_store"]`,
    `system_prompt = "You are ${name}, a test gorilla."`,
    `task = "Do the ${name} chore and say done."`,
    "[settings]",
    settings,
    "",
  ].join("\n");
}
