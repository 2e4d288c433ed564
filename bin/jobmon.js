#!/usr/bin/env node
// The `jobmon` command. `exec` and `ping` run on the job's host: a small plain-JavaScript client,
// loaded before (and instead of) the service, so a wrapped job starts at once.
// Everything else runs the service compiled into dist/ (`npm run build:server`, which `npm install`
// runs). A checkout whose dist/ is missing or older than src/ runs the TypeScript sources through
// tsx instead, when tsx (a dev dependency) is installed, so tests and a `git pull` never run a stale
// build (docs/operations.md, "Building and running").
import { existsSync, readdirSync, statSync } from "node:fs"

const root = new URL("../", import.meta.url)
const command = process.argv[2]

if (command === "exec" || command === "ping") {
  // The source itself when there is one (plain JavaScript, always current); the image has only dist/.
  const source = new URL("src/Cli/client.js", root)
  const { main } = await import((existsSync(source) ? source : new URL("dist/Cli/client.js", root)).href)
  await main(process.argv.slice(2))
} else {
  // V8's allocation-site pretenuring, once the API's slower requests have taught it that node:http's
  // objects live long, allocates every later request's objects in the old generation; the young ones
  // they point to then survive each scavenge and are promoted too, a third of all the intake
  // allocates (docs/performance.md, "Pretenuring"). The service runs without it.
  if (process.env.V8_PRETENURING !== "1") (await import("node:v8")).setFlagsFromString("--no-allocation-site-pretenuring")

  const built = new URL("dist/Cli/main.js", root)
  const builtAt = existsSync(built) ? statSync(built).mtimeMs : undefined
  const sources = new URL("src/", root)
  /** Whether a file or folder under `dir` changed after `time` (an edit, a `git pull`, a new file). */
  const changedSince = (dir, time) =>
    readdirSync(dir, { withFileTypes: true }).some((entry) => {
      const url = new URL(entry.isDirectory() ? `${entry.name}/` : entry.name, dir)
      return statSync(url).mtimeMs > time || (entry.isDirectory() && changedSince(url, time))
    })
  const current = builtAt !== undefined && !(existsSync(sources) && changedSince(sources, builtAt))

  const tsx = current
    ? undefined
    : await import("tsx/esm/api").catch((error) => {
      if (error?.code === "ERR_MODULE_NOT_FOUND") return undefined
      throw error
    })
  if (current) {
    await import(built.href)
  } else if (tsx !== undefined) {
    if (command === "serve") {
      const why = builtAt === undefined ? "dist/ is missing" : "src/ changed after dist/ was built"
      console.error(`jobmon: running the TypeScript sources through tsx (${why}; \`npm run build:server\` compiles them)`)
    }
    tsx.register()
    await import("../src/Cli/main.ts")
  } else if (builtAt !== undefined) {
    console.error("jobmon: src/ changed after dist/ was built, and tsx is not installed to run it: running the older build. `npm run build:server` (after a full `npm install`) compiles the sources.")
    await import(built.href)
  } else {
    console.error(`jobmon: the service is not built (no ${built.pathname}). Run \`npm install\` (it builds dist/), or \`npm run build:server\` after it.`)
    process.exit(1)
  }
}
