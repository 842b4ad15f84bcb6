/**
 * The soak run (`npm run test:soak`): test/faults/soak.test.ts alone, for SPAR_SOAK_MINUTES minutes
 * (60 by default). SPAR_FAULTS=soak is set here, like the long suite's SPAR_FAULTS=long in
 * vitest.faults.config.ts, so the script needs no shell syntax and runs in any shell.
 */
import { resolve } from "node:path";
import { defineConfig } from "vitest/config";
import faults from "../../vitest.faults.config.js";

export default defineConfig({
  root: resolve(import.meta.dirname, "..", ".."),
  test: {
    ...faults.test,
    include: ["test/faults/soak.test.ts"],
    env: { SPAR_FAULTS: "soak" },
  },
});
