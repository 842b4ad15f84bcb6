import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "kernel/**/*.test.ts",
      "sdk/**/*.test.ts",
      "lib/**/*.test.ts",
      "plugins/**/*.test.ts",
      "cli/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // End-to-end suites start real daemons (Argon2id costs ~300 ms each): keep two at a time on two cores.
    maxWorkers: 2,
  },
});
