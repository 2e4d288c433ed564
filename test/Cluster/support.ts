import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as net from "node:net"
import * as path from "node:path"
import pg from "pg"
import { inject } from "vitest"
import { shardOf } from "../../src/Engine/Shards.js"

/**
 * Several instances as real processes (`jobmon serve`, as operators run it) on one test database,
 * driven over HTTP: the harness of test/Cluster (docs/operations.md#several-instances).
 */

const root = path.resolve(import.meta.dirname, "../..")

/**
 * The timers of the cluster tests: shard locks refreshed every 500 ms and taken over after 3 s of
 * silence (the defaults are 1 s and 5 s).
 */
export const TEST_TIMERS = { CLUSTER_LOCK_REFRESH_MS: "500", CLUSTER_LOCK_EXPIRATION_MS: "3000" }

/** Four instances at once must fit the test server's connections (100 by default) beside the other tests. */
const TEST_POOL = { DATABASE_POOL_SIZE: "8" }

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `check` until it answers something other than undefined, or fails after `ms`. */
export const waitFor = async <A>(what: string, ms: number, check: () => Promise<A | undefined>, every = 100): Promise<A> => {
  const until = Date.now() + ms
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (e) {
      last = e
    }
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}${last === undefined ? "" : `: ${String(last)}`}`)
    await sleep(every)
  }
}

export interface TestDatabase {
  readonly url: string
  readonly drop: () => Promise<void>
}

export const createDatabase = async (prefix: string): Promise<TestDatabase> => {
  const adminUrl = inject("adminDatabaseUrl")
  const name = `${prefix}_${randomBytes(6).toString("hex")}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl })
      await client.connect()
      try {
        for (let i = 0; i < 50; i++) {
          const left = await client.query<{ n: number }>(
            "select count(*)::int as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
            [name]
          )
          if (left.rows[0]!.n === 0) break
          await sleep(100)
        }
        await client.query(`drop database if exists ${name} with (force)`)
      } finally {
        await client.end()
      }
    }
  }
}

export interface Instance {
  readonly name: string
  readonly url: string
  readonly httpPort: number
  readonly clusterPort: number
  readonly env: Record<string, string>
  child: ChildProcess
  log: string
}

export const TOKEN = `jmt_cluster_${randomBytes(18).toString("base64url")}`

/** Starts `jobmon serve`; resolves once /healthz answers (or rejects with the process's output). */
export const launch = async (
  name: string,
  databaseUrl: string,
  extra: Record<string, string> = {},
  ports?: { readonly http: number; readonly cluster: number }
): Promise<Instance> => {
  const httpPort = ports?.http ?? await freePort()
  const clusterPort = ports?.cluster ?? await freePort()
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    HOST: "127.0.0.1",
    PORT: String(httpPort),
    CLUSTER_PORT: String(clusterPort),
    BOOTSTRAP_TOKEN: TOKEN,
    LOG_LEVEL: "info",
    PING_RATE_PER_SECOND: "1000",
    PING_BURST: "1000",
    ...TEST_TIMERS,
    ...TEST_POOL,
    ...extra
  }
  const instance: Instance = { name, url: `http://127.0.0.1:${httpPort}`, httpPort, clusterPort, env, child: spawnServe(env), log: "" }
  attachLog(instance)
  await waitFor(`${name} to answer /healthz`, 60_000, async () => {
    if (instance.child.exitCode !== null) throw new Error(`${name} exited with ${instance.child.exitCode}:\n${instance.log}`)
    const ok = await fetch(`${instance.url}/healthz`).then((r) => r.ok, () => false)
    return ok ? true : undefined
  }).catch((e) => {
    instance.child.kill("SIGKILL")
    throw e
  })
  return instance
}

const spawnServe = (env: Record<string, string>) =>
  spawn(process.execPath, [path.join(root, "bin/jobmon.js"), "serve"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })

const attachLog = (instance: Instance) => {
  instance.child.stdout!.on("data", (d) => (instance.log += d))
  instance.child.stderr!.on("data", (d) => (instance.log += d))
}

/** Runs `jobmon serve` that is expected to fail at start: its exit code and output. */
export const launchFailing = (env: Record<string, string>, ms = 60_000): Promise<{ code: number | null; output: string }> =>
  new Promise((resolve, reject) => {
    const child = spawnServe(env)
    let output = ""
    child.stdout!.on("data", (d) => (output += d))
    child.stderr!.on("data", (d) => (output += d))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`the service did not stop within ${ms} ms:\n${output}`))
    }, ms)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })

/** Stops the process with `signal` and resolves when it has exited. */
export const stop = (instance: Instance, signal: NodeJS.Signals = "SIGTERM"): Promise<void> =>
  new Promise((resolve) => {
    const child = instance.child
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill(signal)
  })

/** The same instance again (same ports and settings), after it stopped. */
export const restart = async (instance: Instance): Promise<Instance> =>
  launch(instance.name, instance.env.DATABASE_URL!, instance.env, { http: instance.httpPort, cluster: instance.clusterPort })

const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }

export const api = async <A = any>(instance: Instance, method: string, target: string, body?: unknown): Promise<{ status: number; body: A }> => {
  const response = await fetch(`${instance.url}${target}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: (text === "" ? undefined : JSON.parse(text)) as A }
}

export interface ClusterStatus {
  readonly clustered: boolean
  readonly instance: { readonly address: string | null; readonly shards: ReadonlyArray<number>; readonly monitors: number }
  readonly members: ReadonlyArray<{ readonly address: string; readonly shards: ReadonlyArray<number> }>
  readonly unownedShards: ReadonlyArray<number>
}

export const clusterOf = async (instance: Instance): Promise<ClusterStatus> => {
  const { status, body } = await api<ClusterStatus>(instance, "GET", "/api/cluster")
  if (status !== 200) throw new Error(`GET /api/cluster answered ${status}`)
  return body
}

/** Which of `instances` judges the monitor now (by its shard), per their own view. */
export const ownerOf = async (instances: ReadonlyArray<Instance>, monitorId: string): Promise<Instance | undefined> => {
  const shard = shardOf(monitorId)
  for (const instance of instances) {
    if (instance.child.exitCode !== null || instance.child.signalCode !== null) continue
    const status = await clusterOf(instance).catch(() => undefined)
    if (status?.instance.shards.includes(shard)) return instance
  }
  return undefined
}

/** Resolves once the live instances hold every shard exactly once between them, each some. */
export const balanced = (instances: ReadonlyArray<Instance>, ms = 30_000) =>
  waitFor(`the ${instances.length} instances to share the shards`, ms, async () => {
    const views = await Promise.all(instances.map(clusterOf))
    const seen = new Map<number, number>()
    for (const view of views) for (const shard of view.instance.shards) seen.set(shard, (seen.get(shard) ?? 0) + 1)
    if (seen.size !== 64 || [...seen.values()].some((n) => n !== 1)) return undefined
    if (views.some((v) => v.instance.shards.length === 0)) return undefined
    return views
  }, 200)

export interface Incident {
  readonly id: string
  readonly type: string
  readonly monitorId: string
  readonly createdAt: string
  readonly occurrences: number
  readonly status: string
}

export const incidentsOf = async (instance: Instance): Promise<Array<Incident>> => {
  const all: Array<Incident> = []
  let cursor: string | null = null
  do {
    const { body }: { body: { incidents: Array<Incident>; nextCursor: string | null } } = await api(
      instance,
      "GET",
      `/api/incidents?limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
    )
    all.push(...body.incidents)
    cursor = body.nextCursor
  } while (cursor !== null)
  return all
}

export interface Monitor {
  readonly id: string
  readonly nextExpectedAt: string | null
  readonly graceSeconds: number
}

export const createMonitor = async (instance: Instance, name: string, every = "10s", graceSeconds = 2): Promise<Monitor> => {
  const { status, body } = await api<Monitor>(instance, "POST", "/api/monitors", {
    name,
    schedule: { type: "interval", expression: every },
    graceSeconds
  })
  if (status !== 201 && status !== 200) throw new Error(`creating a monitor answered ${status}: ${JSON.stringify(body)}`)
  return body
}

/** The events of a type, from the database (what the delivery worker fans out: one per alert). */
export const eventCount = async (databaseUrl: string, type: string, monitorIds: ReadonlyArray<string>) => {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const rows = await client.query<{ monitor_id: string; n: number }>(
      `select m::text as monitor_id, count(*)::int as n from events, unnest(monitor_ids) as m
       where type = $1 and m = any($2::uuid[]) group by 1`,
      [type, monitorIds]
    )
    return new Map(rows.rows.map((r) => [r.monitor_id, r.n]))
  } finally {
    await client.end()
  }
}

/**
 * A TCP proxy to PostgreSQL that the test can cut (every connection closed, new ones refused) and
 * restore: an instance that loses its database while the others keep theirs; or hold (what
 * PostgreSQL sends the instance waits) and release: an instance whose news comes late.
 */
export const databaseProxy = async (databaseUrl: string) => {
  const target = new URL(databaseUrl)
  const sockets = new Set<net.Socket>()
  let open = true
  // While held, PostgreSQL's answers and notifications to the instance wait here, in order.
  let held: Array<{ client: net.Socket; data: Buffer }> | undefined
  const server = net.createServer((client) => {
    if (!open) return void client.destroy()
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    sockets.add(client)
    sockets.add(upstream)
    const close = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on("error", close).on("close", close)
    upstream.on("error", close).on("close", close)
    client.pipe(upstream)
    upstream.on("data", (data: Buffer) => {
      if (held !== undefined) held.push({ client, data })
      else client.write(data)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as net.AddressInfo).port
  const url = new URL(databaseUrl)
  url.hostname = "127.0.0.1"
  url.port = String(port)
  return {
    url: url.toString(),
    cut: () => {
      open = false
      for (const s of sockets) s.destroy()
      sockets.clear()
    },
    restore: () => {
      open = true
    },
    /** Holds back what PostgreSQL sends the instance (answers, notifications) until `release`. */
    hold: () => {
      held ??= []
    },
    release: () => {
      const waiting = held ?? []
      held = undefined
      for (const { client, data } of waiting) if (!client.destroyed) client.write(data)
    },
    close: () => new Promise<void>((resolve) => {
      open = false
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    })
  }
}
