import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
    // CI shares two cores with PostgreSQL: a test that fails is run once more before the run
    // fails, and a retried pass is still listed in the log (docs/operations.md, CI).
    retry: process.env.CI ? 1 : 0,
    reporters: ["default"]
  }
})
