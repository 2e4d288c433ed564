// `npm run build:server`, and `npm install` / `npm ci` through `prepare`: compile src/ into dist/
// (tsconfig.build.json), which `npm start`, the `jobmon` bin and the image run.
// `--if-installed` (prepare): without dev dependencies (npm ci --omit=dev) TypeScript is absent;
// say so and leave the install alone, as web/prepare.mjs does for the dashboard.
import { spawnSync } from "node:child_process"
import { existsSync, rmSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../", import.meta.url))
const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url))

if (!existsSync(tsc)) {
  const message = "typescript is not installed (production install?); the service was not built into dist/."
  if (process.argv.includes("--if-installed")) {
    console.log(`jobmon: ${message} Run \`npm run build:server\` after a full install.`)
    process.exit(0)
  }
  console.error(`jobmon: ${message} Run a full \`npm install\` first.`)
  process.exit(1)
}
// From scratch, so that no output of a deleted or renamed source survives; with noEmitOnError, a
// build that fails leaves no dist/ at all rather than a half-new one.
rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true })
const run = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" })
process.exit(run.status ?? 1)
