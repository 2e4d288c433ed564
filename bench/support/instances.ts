import * as fs from "node:fs"
import { performance } from "node:perf_hooks"
import { type Child, spawnChild } from "./children.js"
import { freePort, ROOT } from "./servers.js"

/**
 * Instances of the service for `npm run bench:cluster`: `node bin/jobmon.js serve` as child
 * processes, in single mode (no CLUSTER_PORT) or in cluster mode (CLUSTER_PORT, the same
 * DATABASE_URL), with the times of their start; and GET /api/cluster to see which shards each
 * instance holds (docs/operations.md, "Several instances").
 */

export interface Instance {
  readonly name: string
  readonly url: string
  readonly httpPort: number
  /** Undefined: single mode. */
  readonly clusterPort: number | undefined
  readonly child: Child
  readonly logFile: string
  /** performance.now() at the spawn, and when /healthz first answered 200. */
  readonly spawnedAt: number
  readonly healthyAt: number
}

export interface LaunchOptions {
  readonly name: string
  readonly databaseUrl: string
  readonly bootstrapToken: string
  readonly logFile: string
  /** Cluster mode when set (a port, or "free" for a free one). */
  readonly cluster?: number | "free" | undefined
  /** The HTTP port (default: a free one): a restarted instance keeps its ports. */
  readonly httpPort?: number | undefined
}

/** Settings the instances must not inherit from the shell: the benchmark measures the defaults. */
const NOT_INHERITED = ["CLUSTER_PORT", "CLUSTER_HOST", "CLUSTER_LOCK_REFRESH_MS", "CLUSTER_LOCK_EXPIRATION_MS", "PING_WRITER_LANES"]

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const alive = (instance: Instance) => !instance.child.hasExited()

/** Starts refused by PostgreSQL for want of connections ("too many clients already"), retried. */
export const refusedStarts: Array<string> = []

/**
 * Spawns `jobmon serve`; resolves once /healthz answers 200 (polled every 25 ms). A start that
 * PostgreSQL refuses for want of connections (a shared server's other sessions) is tried again
 * after 2 s, at most 5 times.
 */
export const launchInstance = async (options: LaunchOptions): Promise<Instance> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchOnce(options)
    } catch (error) {
      const message = (error as Error).message
      if (attempt >= 5 || !message.includes("too many clients")) throw error
      refusedStarts.push(options.name)
      console.log(`[bench] ${options.name}: PostgreSQL refused its connections ("too many clients already"); starting it again in 2 s`)
      await sleep(2000)
    }
  }
}

const launchOnce = async (options: LaunchOptions): Promise<Instance> => {
  const httpPort = options.httpPort ?? (await freePort())
  const clusterPort = options.cluster === undefined ? undefined : options.cluster === "free" ? await freePort() : options.cluster
  const inherited = { ...process.env }
  for (const name of NOT_INHERITED) delete inherited[name]
  const spawnedAt = performance.now()
  const child = spawnChild(`service ${options.name}`, process.execPath, [...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), "bin/jobmon.js", "serve"], {
    cwd: ROOT,
    logFile: options.logFile,
    env: {
      ...inherited,
      DATABASE_URL: options.databaseUrl,
      HOST: "127.0.0.1",
      PORT: String(httpPort),
      ...(clusterPort === undefined ? {} : { CLUSTER_PORT: String(clusterPort) }),
      BOOTSTRAP_TOKEN: options.bootstrapToken,
      LOG_LEVEL: "warn",
      // 1,000 monitors at thousands of pings per second: far above the default 10/s per monitor.
      PING_RATE_PER_SECOND: "100000",
      PING_BURST: "100000",
      API_RATE_PER_SECOND: "100000",
      API_BURST: "100000",
      MAX_MONITORS_PER_ORG: "0"
    }
  })
  const url = `http://127.0.0.1:${httpPort}`
  const deadline = Date.now() + 180_000
  for (;;) {
    if (child.hasExited()) throw new Error(`${options.name} exited before it was healthy:\n${child.tail()}`)
    try {
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })
      await response.arrayBuffer()
      if (response.status === 200) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${options.name} was not healthy within 180 s:\n${child.tail()}`)
    await sleep(25)
  }
  return { name: options.name, url, httpPort, clusterPort, child, logFile: options.logFile, spawnedAt, healthyAt: performance.now() }
}

/** The same instance again, on the same ports (as after a crash and a restart by its supervisor). */
export const relaunch = (instance: Instance, options: Omit<LaunchOptions, "name" | "logFile" | "cluster" | "httpPort">) =>
  launchInstance({ ...options, name: instance.name, logFile: instance.logFile, cluster: instance.clusterPort, httpPort: instance.httpPort })

/** kill -9; resolves once the process is gone. */
export const killHard = async (instance: Instance): Promise<void> => {
  if (!alive(instance)) return
  instance.child.process.kill("SIGKILL")
  await instance.child.exited
}

/** SIGTERM (as `docker stop`); resolves once the process has exited, SIGKILL after `graceMs`. */
export const terminate = async (instance: Instance, graceMs = 20_000): Promise<void> => {
  if (!alive(instance)) return
  instance.child.process.kill("SIGTERM")
  const timer = sleep(graceMs).then(() => "timeout" as const)
  if ((await Promise.race([instance.child.exited, timer])) === "timeout") await killHard(instance)
}

/** GET /api/cluster (admin scope): the shards this instance holds now. */
export const shardsOf = async (
  instance: Instance,
  adminToken: string
): Promise<{ clustered: boolean; shards: Array<number>; monitors: number }> => {
  const response = await fetch(`${instance.url}/api/cluster`, {
    headers: { authorization: `Bearer ${adminToken}` },
    signal: AbortSignal.timeout(5000)
  })
  if (response.status !== 200) throw new Error(`GET /api/cluster on ${instance.name} answered ${response.status}: ${await response.text()}`)
  const body = (await response.json()) as { clustered: boolean; instance: { shards: Array<number>; monitors: number } }
  return { clustered: body.clustered, shards: body.instance.shards, monitors: body.instance.monitors }
}

/** Each live instance's shards, when they hold all `shardCount` exactly once between them and each holds some. */
const balancedNow = async (
  instances: ReadonlyArray<Instance>,
  adminToken: string,
  shardCount: number,
  observe: (views: ReadonlyArray<ReadonlyArray<number>>) => void
) => {
  const views = await Promise.all(instances.map((i) => shardsOf(i, adminToken)))
  observe(views.map((v) => v.shards))
  const seen = new Map<number, number>()
  for (const view of views) for (const shard of view.shards) seen.set(shard, (seen.get(shard) ?? 0) + 1)
  if (seen.size !== shardCount || [...seen.values()].some((n) => n !== 1)) return undefined
  if (views.some((v) => v.shards.length === 0)) return undefined
  return views.map((v) => v.shards)
}

/**
 * Polls GET /api/cluster on every instance of `instances` (all at once, every `everyMs`) until they
 * hold every shard once between them, each some; resolves with performance.now() when the first
 * balanced answers had all come back, and each instance's shards.
 */
export const waitBalanced = async (
  instances: ReadonlyArray<Instance>,
  adminToken: string,
  options: { readonly shardCount?: number; readonly timeoutMs?: number; readonly everyMs?: number } = {}
): Promise<{ at: number; shards: Array<Array<number>> }> => {
  const shardCount = options.shardCount ?? 64
  const until = performance.now() + (options.timeoutMs ?? 60_000)
  let last: unknown
  for (;;) {
    const asked = performance.now()
    try {
      const shards = await balancedNow(instances, adminToken, shardCount, (views) => (last = `shards held: ${views.map((v, i) => `${instances[i]!.name} ${v.length}`).join(", ")}`))
      // When the last answer came: the instances were balanced by then (the previous poll, at most
      // `everyMs` plus a request earlier, saw them not yet balanced).
      if (shards !== undefined) return { at: performance.now(), shards }
    } catch (error) {
      last = error
    }
    if (performance.now() > until) {
      throw new Error(
        `the ${instances.map((i) => i.name).join(", ")} did not share the ${shardCount} shards within ${options.timeoutMs ?? 60_000} ms${last === undefined ? "" : `: ${String(last)}`}`
      )
    }
    const wait = (options.everyMs ?? 50) - (performance.now() - asked)
    if (wait > 0) await sleep(wait)
  }
}

/** Warnings and errors the instance logged (LOG_LEVEL=warn: everything it wrote) from byte `from` of its log on. */
export const newTroubleLines = (instance: Instance, from = 0): Array<string> => {
  try {
    return fs
      .readFileSync(instance.logFile)
      .subarray(from)
      .toString("utf8")
      .split("\n")
      .filter((line) => /\b(WARN|ERROR|FATAL)\b/i.test(line))
  } catch {
    return []
  }
}
