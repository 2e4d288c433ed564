/**
 * The load driver: runs autocannon in a process of its own (so that load generation does not share
 * the server's event loop) and prints one JSON `DriverResult` on stdout.
 *
 *   node --import tsx bench/support/driver.ts <config.json>
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import { performance } from "node:perf_hooks"
import type { DriverConfig, DriverResult, LatencySummary } from "./protocol.js"

// autocannon ships no type declarations: the small part used here.
interface AcRequest {
  method?: string
  path?: string
  body?: string | Buffer | undefined
  headers?: Record<string, string>
  setupRequest?: (request: AcRequest, context: Record<string, unknown>) => AcRequest | null
  onResponse?: (status: number, body: string, context: Record<string, unknown>) => void
}
interface AcClient {
  rate: number | undefined
  destroyed: boolean
  _doRequest: () => void
  on(event: "response", listener: (status: number, bytes: number, responseTime: number) => void): void
  on(event: "request", listener: () => void): void
}
interface AcHistogram {
  p50: number
  p99: number
  max: number
}
interface AcResult {
  duration: number
  "2xx": number
  non2xx: number
  statusCodeStats: Record<string, { count: number }>
  errors: number
  timeouts: number
  resets: number
  latency: AcHistogram
}
type Autocannon = (options: Record<string, unknown>) => Promise<AcResult>

const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon

const config = JSON.parse(fs.readFileSync(process.argv[2]!, "utf8")) as DriverConfig
const ids = config.monitorIds
if (ids.length === 0) throw new Error("no monitors to ping")

// One rotation over the monitors shared by all connections: pings spread evenly.
let cursor = Math.floor(Math.random() * ids.length)
const nextMonitor = (): number => {
  const index = cursor
  cursor = cursor + 1 === ids.length ? 0 : cursor + 1
  return index
}
let seq = 0

const byKind: Record<string, Record<string, number>> = {}
const count = (kind: string, status: number) => {
  const counts = (byKind[kind] ??= {})
  counts[status] = (counts[status] ?? 0) + 1
}

/**
 * Each monitor's job takes its own steady time (1 to 60 s) with a little jitter, as real jobs do:
 * durations all over the place would make the service raise duration anomalies, and the benchmark
 * would measure incidents instead of pings.
 */
const durationOf = (monitor: number) => {
  const typical = 1000 + ((monitor * 7919) % 59_000)
  return Math.round(typical * (0.97 + 0.06 * Math.random()))
}

const successBody = (monitor: number, extra: string) => {
  seq++
  return `{${extra}"durationMs":${durationOf(monitor)},"output":"ok ${config.title} #${seq}: 12 files, 3.4 MB"}`
}

/** The run ids of acknowledged pings, when the benchmark checks each against its row (`runIdsFile`). */
const runIds: Array<string> | undefined = config.runIdsFile === undefined ? undefined : []
const RUN_ID_KEY = '"runId":"'
const keepRunId = (body: string) => {
  const at = body.indexOf(RUN_ID_KEY)
  if (at >= 0) runIds!.push(body.slice(at + RUN_ID_KEY.length, at + RUN_ID_KEY.length + 36))
}

const successRequest: AcRequest = {
  method: "POST",
  setupRequest: (request) => {
    const monitor = nextMonitor()
    request.path = `/api/ping/${ids[monitor]}/success`
    request.body = successBody(monitor, "")
    return request
  },
  onResponse: (status, body) => {
    count("success", status)
    if (runIds !== undefined && status === 200) keepRunId(body)
  }
}

/** The ping URL form: no token, no JSON, the output as the body (Healthchecks' `curl --data-raw`). */
const pingUrlRequest: AcRequest = {
  method: "POST",
  setupRequest: (request) => {
    const monitor = nextMonitor()
    seq++
    request.path = `/ping/${ids[monitor]}`
    request.body = `ok ${config.title} #${seq}: 12 files, 3.4 MB`
    return request
  },
  onResponse: (status) => count("success", status)
}

const pairRequests: Array<AcRequest> = [
  {
    method: "POST",
    setupRequest: (request, context) => {
      const monitor = nextMonitor()
      context["monitor"] = monitor
      delete context["runId"]
      request.path = `/api/ping/${ids[monitor]}/start`
      request.body = undefined
      return request
    },
    onResponse: (status, body, context) => {
      count("start", status)
      if (status === 200) {
        try {
          context["runId"] = (JSON.parse(body) as { runId?: string }).runId
        } catch {
          // no run id: the success below is skipped (autocannon restarts from the start)
        }
      }
    }
  },
  {
    method: "POST",
    setupRequest: (request, context) => {
      const runId = context["runId"]
      // The start was not acknowledged: begin a new pair (autocannon counts this as a reset).
      if (typeof runId !== "string") return null
      const monitor = context["monitor"] as number
      request.path = `/api/ping/${ids[monitor]}/success`
      request.body = successBody(monitor, `"runId":"${runId}",`)
      return request
    },
    onResponse: (status) => count("success", status)
  }
]

// Exact latencies of every answer, in ms, also by second of the run (by when the request was sent,
// or due); requests actually written to a socket.
const latencies: Array<number> = []
const bySecond: Array<Array<number>> = []
let startedAt = 0
let firstSendAt = 0
let lastAnswerAt = 0
/**
 * Requests go out for `seconds`; then the connections stay open (autocannon runs one second
 * longer) so that every request in flight gets its answer: the 2xx count is then exactly the
 * pings the service acknowledged, with none left unanswered by the stop.
 */
let sendUntil = Number.POSITIVE_INFINITY
const record = (sentAt: number, latency: number) => {
  lastAnswerAt = performance.now()
  latencies.push(latency)
  const second = Math.max(0, Math.floor((sentAt - startedAt) / 1000))
  ;(bySecond[second] ??= []).push(latency)
}
let sent = 0
let lateSends = 0
let maxLagMs = 0

const even = config.rate?.pacing === "even" ? config.rate.perSecond : undefined

const setupClient = (client: AcClient) => {
  if (startedAt === 0) {
    startedAt = performance.now()
    sendUntil = startedAt + config.seconds * 1000
  }
  // Registered before the client's first request (autocannon's own count guesses the first ones).
  client.on("request", () => {
    if (sent++ === 0) firstSendAt = performance.now()
  })
  if (even === undefined) {
    client.on("response", (_status, _bytes, responseTime) => {
      record(performance.now() - responseTime, responseTime)
    })
  } else {
    paceEvenly(client, even)
  }
  const next = client._doRequest
  client._doRequest = function(this: AcClient) {
    if (performance.now() < sendUntil) next.call(this)
  }
}

/**
 * Even pacing: each connection sends one request every `connections / rate` seconds from a random
 * phase. When an answer comes after the next request was due, that request goes at once and its
 * latency still counts from when it was due (no coordinated omission).
 */
const paceEvenly = (client: AcClient, even: number) => {
  const intervalMs = (1000 * config.connections) / even
  const send = Object.getPrototypeOf(client)._doRequest as () => void
  client.rate = 0 // autocannon's own per-second limiter stays off: the override below paces
  let due = performance.now() + Math.random() * intervalMs
  let dueOfInFlight = 0
  let timer: NodeJS.Timeout | undefined
  client.on("response", () => {
    record(dueOfInFlight, performance.now() - dueOfInFlight)
  })
  client._doRequest = function(this: AcClient) {
    if (this.destroyed || timer !== undefined) return
    const now = performance.now()
    if (now < due) {
      timer = setTimeout(() => {
        timer = undefined
        this._doRequest()
      }, due - now)
      return
    }
    const lag = now - due
    if (lag > 1) lateSends++
    if (lag > maxLagMs) maxLagMs = lag
    dueOfInFlight = due
    due += intervalMs
    send.call(this)
  }
}

const summarize = (values: Array<number>): LatencySummary => {
  const sorted = Float64Array.from(values).sort()
  const at = (q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!)
  let sum = 0
  for (const v of sorted) sum += v
  const round = (v: number) => Math.round(v * 100) / 100
  return {
    count: sorted.length,
    mean: round(sorted.length === 0 ? 0 : sum / sorted.length),
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    p999: round(at(0.999)),
    max: round(sorted.length === 0 ? 0 : sorted[sorted.length - 1]!)
  }
}

const cpuBefore = process.cpuUsage()
const result = await autocannon({
  url: config.urls !== undefined && config.urls.length > 0 ? [...config.urls] : config.url,
  connections: config.connections,
  duration: config.seconds + 1,
  pipelining: 1,
  headers: config.mode === "pingUrl"
    ? { "content-type": "text/plain" }
    : { authorization: `Bearer ${config.token}`, "content-type": "application/json" },
  requests: config.mode === "pairs" ? pairRequests : config.mode === "pingUrl" ? [pingUrlRequest] : [successRequest],
  setupClient,
  ...(config.rate?.pacing === "autocannon"
    ? {
      overallRate: config.rate.perSecond,
      // autocannon's correction uses ceil(1 / rate) as the expected interval in ms (seconds and
      // milliseconds mixed up), which adds a fake sample per millisecond of every answer: off.
      ignoreCoordinatedOmission: true
    }
    : {})
})

const cpu = process.cpuUsage(cpuBefore)
if (runIds !== undefined) fs.writeFileSync(config.runIdsFile!, runIds.join("\n"))
// From the first request sent to the last answer received.
const activeSeconds = Math.max(0.001, (lastAnswerAt - firstSendAt) / 1000)

const statusCodes: Record<string, number> = {}
for (const [code, stats] of Object.entries(result.statusCodeStats)) statusCodes[code] = stats.count

const out: DriverResult = {
  title: config.title,
  mode: config.mode,
  connections: config.connections,
  count2xx: result["2xx"],
  non2xx: result.non2xx,
  statusCodes,
  byKind,
  sent,
  errors: result.errors,
  timeouts: result.timeouts,
  resets: result.resets,
  duration: Math.round(activeSeconds * 100) / 100,
  rps: Math.round(result["2xx"] / activeSeconds),
  latency: summarize(latencies),
  latencyAfterFirstSecond: summarize(bySecond.slice(1).flatMap((values) => values ?? [])),
  perSecond: Array.from(bySecond, (values) => {
    const s = summarize(values ?? [])
    return { count: s.count, p99: s.p99, max: s.max }
  }),
  autocannonLatency: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
  driverCpuUs: cpu.user + cpu.system,
  ...(config.rate === undefined
    ? {}
    : { pacing: { perSecond: config.rate.perSecond, pacing: config.rate.pacing, lateSends, maxLagMs: Math.round(maxLagMs * 100) / 100 } })
}
process.stdout.write(`${JSON.stringify(out)}\n`)
process.exit(0)
