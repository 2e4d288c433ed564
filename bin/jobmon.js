#!/usr/bin/env node
// The `jobmon` command. `exec` and `ping` run on the job's host: a small plain-JavaScript client,
// loaded before (and instead of) tsx and the service, so a wrapped job starts at once.
// Everything else runs the TypeScript sources through tsx's loader: no build step to forget.
const command = process.argv[2]
if (command === "exec" || command === "ping") {
  const { main } = await import("../src/Cli/client.js")
  await main(process.argv.slice(2))
} else {
  // V8's allocation-site pretenuring, once the API's slower requests have taught it that node:http's
  // objects live long, allocates every later request's objects in the old generation; the young ones
  // they point to then survive each scavenge and are promoted too, a third of all the intake
  // allocates (docs/performance.md, "Pretenuring"). The service runs without it.
  if (process.env.V8_PRETENURING !== "1") (await import("node:v8")).setFlagsFromString("--no-allocation-site-pretenuring")
  const { register } = await import("tsx/esm/api")
  register()
  await import("../src/Cli/main.ts")
}
