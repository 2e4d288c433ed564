import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile, execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { freePort } from "../../src/Db/Embedded.js"
import { makeTestDatabase } from "../support/fixture.js"

/**
 * `jobmon` as `npm start` and the image run it: the JavaScript that tsconfig.build.json compiles
 * into dist/, and what bin/jobmon.js does when that build is missing or older than the sources.
 * Each case is a package of its own in a temporary directory (package.json, bin/, sql/, and what
 * the case needs), so that the worktree's own dist/ is neither used nor touched.
 */

const root = path.resolve(import.meta.dirname, "../..")
const temp = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-compiled-"))
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }))

/** A package directory: package.json, bin/ and sql/, node_modules with every package but tsx unless `withTsx`. */
const makePackage = (name: string, { withTsx }: { withTsx: boolean }) => {
  const dir = path.join(temp, name)
  fs.mkdirSync(path.join(dir, "node_modules"), { recursive: true })
  fs.copyFileSync(path.join(root, "package.json"), path.join(dir, "package.json"))
  fs.cpSync(path.join(root, "bin"), path.join(dir, "bin"), { recursive: true })
  fs.symlinkSync(path.join(root, "sql"), path.join(dir, "sql"))
  for (const entry of fs.readdirSync(path.join(root, "node_modules"))) {
    if (entry === "tsx" && !withTsx) continue
    fs.symlinkSync(path.join(root, "node_modules", entry), path.join(dir, "node_modules", entry))
  }
  return dir
}

/** `node <dir>/bin/jobmon.js <args>` to completion: its exit code and output. */
const jobmon = (dir: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [path.join(dir, "bin/jobmon.js"), ...args],
        { cwd: dir, env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", LOG_LEVEL: "warn", ...env }, timeout: 120_000 },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
      )
    )
  )

/** A stand-in for a build: dist/Cli/main.js that only says it ran, dated `at`. */
const fakeBuild = (dir: string, at: Date) => {
  const main = path.join(dir, "dist", "Cli", "main.js")
  fs.mkdirSync(path.dirname(main), { recursive: true })
  fs.writeFileSync(main, `console.log("the build in dist/")\n`)
  fs.utimesSync(main, at, at)
}

/** A copy of the sources, every file and folder dated `at`. */
const copySources = (dir: string, at: Date) => {
  fs.cpSync(path.join(root, "src"), path.join(dir, "src"), { recursive: true })
  fs.copyFileSync(path.join(root, "tsconfig.json"), path.join(dir, "tsconfig.json"))
  const date = (p: string) => {
    if (fs.statSync(p).isDirectory()) for (const entry of fs.readdirSync(p)) date(path.join(p, entry))
    fs.utimesSync(p, at, at)
  }
  date(path.join(dir, "src"))
}

const hourAgo = new Date(Date.now() - 3_600_000)
const now = new Date()

describe("the compiled service (dist/), as the image runs it: no src/, no tsx", () => {
  const dir = makePackage("image", { withTsx: false })
  beforeAll(() => {
    execFileSync(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", path.join(dir, "dist")], {
      cwd: root,
      stdio: "pipe"
    })
    // The dashboard's place: found from dist/ through the package root, as sql/ is.
    fs.mkdirSync(path.join(dir, "web", "dist"), { recursive: true })
    fs.writeFileSync(path.join(dir, "web", "dist", "index.html"), "<!doctype html><title>the dashboard of this package</title>\n")
  }, 600_000)

  it.scopedLive("serve applies the migrations from sql/, answers /healthz and the API, and serves web/dist", () =>
    Effect.gen(function*() {
      const db = yield* makeTestDatabase()
      const port = yield* freePort
      const token = `jmt_compiled_${randomBytes(18).toString("base64url")}`
      const service = spawn(process.execPath, [path.join(dir, "bin/jobmon.js"), "serve"], {
        cwd: dir,
        env: { PATH: process.env.PATH!, DATABASE_URL: db.url, PORT: String(port), HOST: "127.0.0.1", BOOTSTRAP_TOKEN: token, LOG_LEVEL: "warn" },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stderr = ""
      let log = ""
      service.stdout!.on("data", (d) => (log += d))
      service.stderr!.on("data", (d) => {
        stderr += d
        log += d
      })
      yield* Effect.addFinalizer(() =>
        Effect.async<void>((resume) => {
          if (service.exitCode !== null || service.signalCode !== null) return resume(Effect.void)
          service.once("exit", () => resume(Effect.void))
          service.kill("SIGINT")
        })
      )
      const url = `http://127.0.0.1:${port}`
      let up = false
      for (let i = 0; i < 1200 && !up && service.exitCode === null; i++) {
        up = yield* Effect.promise(() => fetch(`${url}/healthz`).then((r) => r.ok, () => false))
        if (!up) yield* Effect.sleep("100 millis")
      }
      if (!up) return yield* Effect.dieMessage(`the compiled service did not start:\n${log}`)
      const monitors = yield* Effect.promise(() =>
        fetch(`${url}/api/monitors`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => ({ status: r.status, body: await r.json() }))
      )
      expect(monitors.status).toBe(200)
      const page = yield* Effect.promise(() => fetch(`${url}/monitors`).then((r) => r.text()))
      expect(page).toBe("<!doctype html><title>the dashboard of this package</title>\n")
      expect(stderr).toBe("")
    }), 300_000)

  it.effect("exec and ping load the client from dist/ when there is no src/", () =>
    Effect.gen(function*() {
      const result = yield* jobmon(dir, ["ping"])
      expect(result.code).toBe(2)
      expect(result.stderr).toMatch(/^jobmon: ping needs a monitor id/)
    }), 60_000)
})

describe("bin/jobmon.js without a current build", () => {
  it.effect("with neither dist/ nor tsx, refuses to start and says how to build", () =>
    Effect.gen(function*() {
      const dir = makePackage("unbuilt", { withTsx: false })
      for (const command of ["serve", "migrate"]) {
        const result = yield* jobmon(dir, [command])
        expect(result.code).toBe(1)
        expect(result.stderr).toMatch(/the service is not built/)
        expect(result.stderr).toMatch(/npm install/)
        expect(result.stderr).toMatch(/npm run build:server/)
      }
    }), 60_000)

  it.effect("runs dist/ while it is newer than src/, and the sources through tsx once src/ has changed", () =>
    Effect.gen(function*() {
      const dir = makePackage("checkout", { withTsx: true })
      copySources(dir, hourAgo)
      fakeBuild(dir, now)
      const current = yield* jobmon(dir, ["help"])
      expect(current).toMatchObject({ code: 0, stdout: "the build in dist/\n", stderr: "" })

      // An edit (or a git pull) after the build.
      fs.utimesSync(path.join(dir, "src", "Config.ts"), new Date(now.getTime() + 60_000), new Date(now.getTime() + 60_000))
      const edited = yield* jobmon(dir, ["help"])
      expect(edited.code).toBe(0)
      expect(edited.stdout).toMatch(/^jobmon — job monitoring service/)
      expect(edited.stderr).toBe("")

      // A file renamed keeps its own date; its folder's changes.
      fs.writeFileSync(path.join(dir, "src", "Cli", "Spare.ts"), "export {}\n")
      copySources(dir, hourAgo)
      expect((yield* jobmon(dir, ["help"])).stdout).toBe("the build in dist/\n")
      fs.renameSync(path.join(dir, "src", "Cli", "Spare.ts"), path.join(dir, "src", "Cli", "Renamed.ts"))
      expect((yield* jobmon(dir, ["help"])).stdout).toMatch(/^jobmon — job monitoring service/)
    }), 120_000)

  it.effect("without tsx, a build older than src/ still runs, with a warning", () =>
    Effect.gen(function*() {
      const dir = makePackage("stale", { withTsx: false })
      fakeBuild(dir, hourAgo)
      copySources(dir, now)
      const result = yield* jobmon(dir, ["help"])
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("the build in dist/\n")
      expect(result.stderr).toMatch(/src\/ changed after dist\/ was built/)
      expect(result.stderr).toMatch(/npm run build:server/)
    }), 60_000)
})
