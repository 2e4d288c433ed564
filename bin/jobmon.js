#!/usr/bin/env node
// The `jobmon` command. `exec` and `ping` run on the job's host: a small plain-JavaScript client,
// loaded before (and instead of) tsx and the service, so a wrapped job starts at once.
// Everything else runs the TypeScript sources through tsx's loader: no build step to forget.
const command = process.argv[2]
if (command === "exec" || command === "ping") {
  const { main } = await import("../src/Cli/client.js")
  await main(process.argv.slice(2))
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import("../src/Cli/main.ts")
}
