// `npm install` / `npm ci` run this (the `prepare` script): build the dashboard into web/dist.
// Without dev dependencies (npm ci --omit=dev) vite is absent: say so and leave the install alone.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"

if (!existsSync(new URL("../node_modules/vite/package.json", import.meta.url))) {
  console.log("jobmon: vite is not installed (production install?); the dashboard was not built. Run `npm run build:web` after a full install.")
  process.exit(0)
}
const npm = process.env.npm_execpath
const run = npm
  ? spawnSync(process.execPath, [npm, "run", "build:web"], { stdio: "inherit" })
  : spawnSync("npm", ["run", "build:web"], { stdio: "inherit", shell: process.platform === "win32" })
process.exit(run.status ?? 1)
