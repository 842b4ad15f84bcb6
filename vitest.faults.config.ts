/**
 * The long fault suite (`npm run test:faults`): the files of test/faults at their full sizes
 * (`SPAR_FAULTS=long`, set here so the script runs in any shell), one file at a time so each
 * prints its figures undisturbed. `npm test` runs the same files in their short mode.
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/faults/**/*.test.ts"],
    env: { SPAR_FAULTS: "long" },
    // 1,000 kills and restarts take a while; each file prints its progress.
    testTimeout: 4 * 3600_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
