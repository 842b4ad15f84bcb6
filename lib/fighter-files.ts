/**
 * Where fighters live on disk, shared by the kernel and the CLI: each fighter's workspace folder
 * under the data dir, and the bundled fighter kinds (`fighters/<kind>.json`, package data).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { FighterManifest } from "../sdk/types.js";
import { PACKAGE_ROOT } from "../sdk/version.js";

/** A name as a folder name: letters, digits, `.`, `_` and `-`; other names get a short hash to stay apart. */
export function nameSlug(name: string): string {
  const base = name
    .normalize("NFKC")
    .replace(/[^\p{L}\p{N}._-]+/gu, "-")
    .replace(/^[.-]+|-+$/g, "")
    .slice(0, 48);
  if (base === name) return base;
  return `${base || "fighter"}-${createHash("sha256").update(name).digest("hex").slice(0, 8)}`;
}

/** A fighter's own folder, `<home>/workspaces/<name as a slug>/`, created (private) on first use. */
export function workspaceOf(home: string, fighterName: string): string {
  const dir = join(home, "workspaces", nameSlug(fighterName));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

export const DEFAULT_FIGHTER_NAME = "spar";

/** Bundled fighter kinds are data: `fighters/<kind>.json` in the package. */
const TEMPLATES_DIR = join(PACKAGE_ROOT, "fighters");

/** The manifest of a bundled kind (the default fighter's included), or undefined. */
export function fighterTemplate(kind: string): FighterManifest | undefined {
  if (!templateFiles().includes(kind)) return undefined;
  return JSON.parse(readFileSync(join(TEMPLATES_DIR, `${kind}.json`), "utf8")) as FighterManifest;
}

/** The kinds a user can spawn (the default fighter is not one of them). */
export function templateNames(): string[] {
  return templateFiles().filter((n) => n !== DEFAULT_FIGHTER_NAME);
}

function templateFiles(): string[] {
  return readdirSync(TEMPLATES_DIR)
    .filter((f) => f.endsWith(".json"))
    .map((f) => f.slice(0, -".json".length))
    .sort();
}
