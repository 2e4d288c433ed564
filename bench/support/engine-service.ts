import * as fs from "node:fs"
import { performance } from "node:perf_hooks"
import { type Child, spawnChild, stopChild } from "./children.js"
import { freePort, ROOT } from "./servers.js"

/**
 * The service for `npm run bench:engine`: `node bin/jobmon.js serve` as a child process at log level
 * info, timed from the spawn to the first 200 of /healthz, with the incident engine's start-up line
 * ("incident engine: N monitor actors rebuilt in M ms") picked out of its log. (servers.ts's
 * startService runs the service at log level warn, where that line is not printed, and polls
 * /healthz every 200 ms, too coarse to time a start-up.)
 */

export interface EngineLine {
  readonly actors: number
  /** The engine's own measurement, ms. */
  readonly rebuildMs: number
  /** When the line reached the benchmark, ms after the spawn. */
  readonly seenAfterMs: number
}

export interface TimedService {
  readonly child: Child
  readonly pid: number
  readonly url: string
  /** From just before the spawn to the first 200 of /healthz (polled every 20 ms). */
  readonly spawnToHealthyMs: number
  readonly engine: EngineLine | undefined
  /** "database mode: …" from the log, e.g. "timescaledb (TimescaleDB 2.17.2)". */
  readonly databaseMode: string | undefined
  /** Every line the service wrote to stdout so far (bounded). */
  readonly stdout: () => ReadonlyArray<string>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const ENGINE_LINE = /incident engine: (\d+) monitor actors rebuilt in (\d+) ms/
const MODE_LINE = /database mode: ([^"\n]+)/
const KEPT_LINES = 2_000

export interface TimedServiceOptions {
  readonly databaseUrl: string
  readonly bootstrapToken: string
  /** Give up when /healthz has not answered 200 after this long (default 300 s). */
  readonly timeoutMs?: number
}

export const startTimedService = async (options: TimedServiceOptions): Promise<TimedService> => {
  const port = await freePort()
  const lines: Array<string> = []
  let engine: EngineLine | undefined
  let databaseMode: string | undefined
  let partial = ""
  const t0 = performance.now()
  const child = spawnChild("service", process.execPath, ["bin/jobmon.js", "serve"], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      HOST: "127.0.0.1",
      PORT: String(port),
      BOOTSTRAP_TOKEN: options.bootstrapToken,
      LOG_LEVEL: "info",
      // The benchmark creates a few hundred monitors through the API with one token.
      API_RATE_PER_SECOND: "100000",
      API_BURST: "100000",
      // 100,000 monitors in one organization, ten times the default quota.
      MAX_MONITORS_PER_ORG: "0"
    },
    onStdout: (text) => {
      const now = performance.now()
      const all = partial + text
      const parts = all.split("\n")
      partial = parts.pop() ?? ""
      for (const line of parts) {
        if (line.trim() === "") continue
        lines.push(line)
        if (lines.length > KEPT_LINES) lines.shift()
        const e = ENGINE_LINE.exec(line)
        if (e !== null && engine === undefined) {
          engine = { actors: Number(e[1]), rebuildMs: Number(e[2]), seenAfterMs: now - t0 }
        }
        const m = MODE_LINE.exec(line)
        if (m !== null) databaseMode = m[1]!.trim()
      }
    }
  })
  const pid = child.process.pid
  if (pid === undefined) throw new Error(`the service could not be spawned:\n${child.tail()}`)
  const url = `http://127.0.0.1:${port}`
  const limit = t0 + (options.timeoutMs ?? 300_000)
  const describe = () => [...lines.slice(-20), child.tail()].join("\n")
  let spawnToHealthyMs: number
  for (;;) {
    if (child.hasExited()) throw new Error(`the service exited before it was healthy:\n${describe()}`)
    try {
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })
      await response.arrayBuffer()
      if (response.status === 200) {
        spawnToHealthyMs = performance.now() - t0
        break
      }
    } catch {
      // not listening yet
    }
    if (performance.now() > limit) throw new Error(`the service was not healthy within ${Math.round((limit - t0) / 1000)} s:\n${describe()}`)
    await sleep(20)
  }
  // The engine's line is written before the HTTP server starts; give the pipe a moment anyway.
  for (let i = 0; i < 50 && engine === undefined; i++) await sleep(20)
  return {
    child,
    pid,
    url,
    spawnToHealthyMs,
    get engine() {
      return engine
    },
    get databaseMode() {
      return databaseMode
    },
    stdout: () => lines
  }
}

export const stopTimedService = (service: TimedService, graceMs = 30_000) => stopChild(service.child, graceMs)

/** VmRSS and VmHWM (peak RSS) of a process, bytes, from /proc/<pid>/status. */
export const memoryOf = (pid: number): { rss: number; hwm: number } | undefined => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (name: string) => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)
      return m === null ? NaN : Number(m[1]) * 1024
    }
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") }
  } catch {
    return undefined
  }
}
