import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
/** The package root: two levels up from dist/sdk/, one up from sdk/ under a TS runner. */
export const PACKAGE_ROOT = existsSync(join(here, "..", "package.json"))
  ? join(here, "..")
  : join(here, "..", "..");

/** The kernel's version is the package's: plugins declare the range of it they support. */
export const KERNEL_VERSION: string = (
  JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string }
).version;
