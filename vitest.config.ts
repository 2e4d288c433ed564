import { configDefaults, defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
    // CI shares two cores with PostgreSQL: a test that fails is run once more before the run
    // fails, and a retried pass is still listed in the log (docs/operations.md, CI).
    retry: process.env.CI ? 1 : 0,
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: { name: "service", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, "test/Cluster/**"], sequence: { groupOrder: 0 } }
      },
      {
        // Several instances as real processes (three or four at once, each a whole service): run
        // after the rest, one file at a time, so that their timing does not weigh on the other files' nor theirs on it.
        extends: true,
        test: { name: "cluster", include: ["test/Cluster/**/*.test.ts"], sequence: { groupOrder: 1 }, poolOptions: { forks: { singleFork: true } } }
      }
    ]
  }
})
