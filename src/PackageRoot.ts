import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/**
 * The directory of jobmon's package.json, beside which `sql/` and `web/dist/` live. Found by walking
 * up from this module rather than by a fixed `../..`, because the module runs from `src/` (tsx,
 * tests) and from the build in `dist/` (`npm start`, the image), and neither place should have to
 * mirror the other's depth.
 */
export const packageRoot: string = (() => {
  const start = path.dirname(fileURLToPath(import.meta.url))
  for (let dir = start;;) {
    const manifest = path.join(dir, "package.json")
    // A nested package.json (a `{"type": "module"}` marker, say) is not the package's own.
    if (fs.existsSync(manifest) && JSON.parse(fs.readFileSync(manifest, "utf8")).name === "jobmon") return dir
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error(`no package.json of jobmon in ${start} or above it`)
    dir = parent
  }
})()
