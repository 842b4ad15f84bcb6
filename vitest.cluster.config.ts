/**
 * The long cluster test (`npm run test:cluster`): three daemons on one PostgreSQL and one Redis,
 * the gorilla counted for a minute (`SPAR_CLUSTER=long`, set here so the script runs in any shell).
 * `npm test` runs the same file in its short mode. Both need SPAR_TEST_DATABASE_URL and
 * SPAR_TEST_REDIS_URL (scripts/ci-services.sh starts the servers and prints them).
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/cluster/**/*.test.ts"],
    env: { SPAR_CLUSTER: "long" },
    testTimeout: 600_000,
    hookTimeout: 180_000,
  },
});
