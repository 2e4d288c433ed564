import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { type Child, onCleanup, spawnChild, stopChild } from "./children.js"
import type { DriverConfig, DriverResult } from "./protocol.js"

/** The processes the benchmark drives: the service, the bare node:http baseline, the load driver. */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const TSX = ["--import", "tsx"]

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface RunningServer {
  readonly child: Child
  readonly url: string
  /** Everything the process wrote (the service: its warnings and errors). */
  readonly logFile?: string | undefined
}

/** A server script of the benchmark's own (it prints `listening <port>`); resolves once it listens. */
const startScript = async (name: string, script: string, args: ReadonlyArray<string>): Promise<RunningServer> => {
  let resolvePort: (port: number) => void = () => {}
  const listening = new Promise<number>((resolve) => (resolvePort = resolve))
  const child = spawnChild(name, process.execPath, [...TSX, script, ...args], {
    cwd: ROOT,
    onStdout: (text) => {
      const m = /listening (\d+)/.exec(text)
      if (m !== null) resolvePort(Number(m[1]))
    }
  })
  const port = await Promise.race([
    listening,
    child.exited.then((code) => {
      throw new Error(`the ${name} server exited (${code}) before listening:\n${child.tail()}`)
    }),
    sleep(30_000).then(() => {
      throw new Error(`the ${name} server did not listen within 30 s`)
    })
  ])
  return { child, url: `http://127.0.0.1:${port}` }
}

/** The bare node:http server. */
export const startBare = (): Promise<RunningServer> => startScript("bare node:http", "bench/support/bare-server.ts", ["0"])

/** The durable floor (bench/support/floor-server.ts), storing into `databaseUrl`. */
export const startFloor = (databaseUrl: string): Promise<RunningServer> =>
  startScript("durable floor", "bench/support/floor-server.ts", [databaseUrl])

export interface ServiceOptions {
  readonly databaseUrl: string
  readonly bootstrapToken: string
  /** Directory for `node --cpu-prof` output; no profiling when undefined. */
  readonly cpuProfileDir?: string | undefined
  /** Where the service's own output goes (appended). */
  readonly logFile?: string | undefined
  /** More environment for the service. */
  readonly env?: Readonly<Record<string, string>> | undefined
}

/** `node bin/jobmon.js serve` as a child; resolves once /healthz answers 200. */
export const startService = async (options: ServiceOptions): Promise<RunningServer> => {
  const port = await freePort()
  const args = [
    ...(options.cpuProfileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", options.cpuProfileDir]),
    "bin/jobmon.js",
    "serve"
  ]
  const child = spawnChild("service", process.execPath, args, {
    cwd: ROOT,
    ...(options.logFile === undefined ? {} : { logFile: options.logFile }),
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      HOST: "127.0.0.1",
      PORT: String(port),
      BOOTSTRAP_TOKEN: options.bootstrapToken,
      LOG_LEVEL: "warn",
      // 1,000 monitors at thousands of pings per second: far above the default 10/s per monitor.
      PING_RATE_PER_SECOND: "100000",
      PING_BURST: "100000",
      // Creating 1,000 monitors quickly with one token.
      API_RATE_PER_SECOND: "100000",
      API_BURST: "100000",
      MAX_MONITORS_PER_ORG: "0",
      ...options.env
    }
  })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 180_000
  for (;;) {
    if (child.hasExited()) throw new Error(`the service exited before it was healthy:\n${child.tail()}`)
    try {
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })
      if (response.status === 200) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the service was not healthy within 180 s:\n${child.tail()}`)
    await sleep(200)
  }
  return { child, url, logFile: options.logFile }
}

export const newBootstrapToken = () => `jmt_bench_${randomBytes(24).toString("hex")}`

const api = async (url: string, token: string, method: string, route: string, body?: unknown) => {
  const response = await fetch(`${url}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, text, json: (): any => JSON.parse(text) }
}

/** A ping-scoped token, made through the API as a user would. */
export const createPingToken = async (url: string, adminToken: string): Promise<string> => {
  const r = await api(url, adminToken, "POST", "/api/tokens", { name: "bench pings", scope: "ping" })
  if (r.status !== 201) throw new Error(`token creation answered ${r.status}: ${r.text}`)
  return r.json().token as string
}

/** `count` monitors with an interval schedule (hourly by default), made through the API; answers their ids. */
export const createMonitors = async (url: string, adminToken: string, count: number, every = "1h"): Promise<Array<string>> => {
  const ids: Array<string> = new Array(count)
  let next = 0
  const worker = async () => {
    while (next < count) {
      const i = next++
      const r = await api(url, adminToken, "POST", "/api/monitors", {
        name: `bench monitor ${i + 1}`,
        schedule: { type: "interval", expression: every }
      })
      if (r.status !== 201) throw new Error(`monitor creation answered ${r.status}: ${r.text}`)
      ids[i] = r.json().id as string
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
  return ids
}

/** An outbound webhook selecting `events`, made through the API; answers its id. */
export const createWebhook = async (
  url: string,
  adminToken: string,
  target: string,
  events: ReadonlyArray<string>,
  monitorIds: ReadonlyArray<string> = []
): Promise<string> => {
  const r = await api(url, adminToken, "POST", "/api/webhooks", { url: target, events, filters: { monitorIds } })
  if (r.status !== 201) throw new Error(`webhook creation answered ${r.status}: ${r.text}`)
  return r.json().id as string
}

export const deleteWebhook = async (url: string, adminToken: string, id: string): Promise<void> => {
  const r = await api(url, adminToken, "DELETE", `/api/webhooks/${id}`)
  if (r.status >= 300) throw new Error(`webhook deletion answered ${r.status}: ${r.text}`)
}

/** Runs the load driver in a process of its own and answers its result. */
export const runDriver = async (config: DriverConfig): Promise<DriverResult> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-bench-driver-"))
  // Also when the benchmark is interrupted while the driver runs.
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, "config.json")
  fs.writeFileSync(file, JSON.stringify(config))
  let stdout = ""
  const child = spawnChild(`driver ${config.title}`, process.execPath, [...TSX, "bench/support/driver.ts", file], {
    cwd: ROOT,
    onStdout: (text) => (stdout += text)
  })
  try {
    const limit = sleep((config.seconds + 60) * 1000).then(() => "timeout" as const)
    const code = await Promise.race([child.exited, limit])
    if (code === "timeout") {
      await stopChild(child, 2000)
      throw new Error(`the load driver did not finish (${config.title})`)
    }
    if (code !== 0) throw new Error(`the load driver failed (${code}) for ${config.title}:\n${child.tail()}`)
    const line = stdout.trim().split("\n").pop() ?? ""
    return JSON.parse(line) as DriverResult
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

export const stopServer = (server: RunningServer, graceMs = 20_000) => stopChild(server.child, graceMs)
