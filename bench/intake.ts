/**
 * `npm run bench`: the durable ping intake against a bare node:http server, in one run.
 *
 * Starts the real service as a child process on a fresh PostgreSQL database (DATABASE_URL's server,
 * or an embedded PostgreSQL), creates 1,000 monitors and a ping token through the API, drives the
 * ping routes with autocannon from another process, and checks that every acknowledged ping has its
 * row. docs/performance.md ("Ping intake") describes the phases, the knobs and the latest results.
 */
import { execSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Accounting, account } from "./support/accounting.js"
import { installSignalHandlers, onCleanup, runBench } from "./support/children.js"
import { backgroundBusy, cpuBetween, machineBusyBetween, parentPid, postgresServerCpuUs, sampleCpu } from "./support/cpu.js"
import { BenchDb, openBenchDatabase } from "./support/database.js"
import { median } from "./support/engine-report.js"
import { mainThreadProfile, type ProfileSummary, summarizeProfile } from "./support/profile.js"
import type { DriverConfig, DriverResult, LoadMode } from "./support/protocol.js"
import {
  type Check,
  checksText,
  consoleTable,
  type CpuCost,
  type Machine,
  type PhaseRow,
  profileText,
  writeDocs
} from "./support/report.js"
import {
  createMonitors,
  createPingToken,
  createWebhook,
  deleteWebhook,
  newBootstrapToken,
  ROOT,
  runDriver,
  type RunningServer,
  startBare,
  startFloor,
  startService,
  stopServer
} from "./support/servers.js"
import { env, positive } from "./support/settings.js"


const settings = {
  seconds: positive("BENCH_SECONDS", 10),
  connections: env("BENCH_CONNECTIONS", "64,256").split(",").map((c) => Math.floor(Number(c))).filter((c) => c > 0),
  rate: positive("BENCH_RATE", 5000),
  rateConnections: Math.floor(positive("BENCH_RATE_CONNECTIONS", 256)),
  warmupSeconds: positive("BENCH_WARMUP_SECONDS", 3),
  /** Rounds of bare, floor and intake at each connection count; the ratio judged is their median. */
  rounds: Math.floor(positive("BENCH_ROUNDS", 3)),
  monitors: Math.floor(positive("BENCH_MONITORS", 1000)),
  profile: env("BENCH_PROFILE", "auto") as "auto" | "always" | "never",
  writeDocs: env("BENCH_WRITE_DOCS", "1") !== "0",
  strict: env("BENCH_STRICT", "0") === "1",
  /** Also measure the intake with an outbound webhook subscribed to ping.received (issue #6). */
  webhook: env("BENCH_WEBHOOK", "1") !== "0",
  /** Also measure the durable floor (bench/support/floor-server.ts) beside the bare server. */
  floor: env("BENCH_FLOOR", "1") !== "0",
  /** Also compare the ping URL (/ping/<pingId>, no token) with the token route (issue #23). */
  pingUrls: env("BENCH_PING_URLS", "1") !== "0"
}
if (settings.connections.length === 0) throw new Error("BENCH_CONNECTIONS must list connection counts, e.g. 64,256")
if (!["auto", "always", "never"].includes(settings.profile)) throw new Error("BENCH_PROFILE must be auto, always or never")

const RATIO_TARGET = 0.5
const P99_TARGET_MS = 50
/** With a webhook receiving every ping, the intake keeps at least this share of its rate without one. */
const WEBHOOK_TARGET = 0.9
/** The ping URL route keeps at least this share of the token route's rate (the same intake behind both). */
const PING_URL_TARGET = 0.9
/** The fixed-rate phase must actually deliver (nearly) the rate it offers. */
const RATE_DELIVERED = 0.97
/** A round's phase starts once the cores are less busy than this (share of all cores, over a second). */
const QUIET_BUSY = 0.05

const log = (message: string) => console.log(`[bench] ${message}`)

/** Which code was measured: the commit, and whether src/ or sql/ had uncommitted changes. */
const codeVersion = (): string => {
  const given = process.env.BENCH_CODE_LABEL
  if (given !== undefined && given.trim() !== "") return given.trim()
  try {
    const run = (command: string) => execSync(command, { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim()
    const commit = run("git rev-parse --short HEAD")
    const dirty = run("git status --porcelain -- src sql bin package.json") !== ""
    return `commit ${commit}${dirty ? " with uncommitted changes in src/, sql/ or package.json" : ""}`
  } catch {
    return "unknown code version (no git)"
  }
}

const machine = (postgres: string, database: string): Machine => {
  let cores = os.availableParallelism()
  try {
    cores = Number(execSync("nproc", { stdio: ["ignore", "pipe", "ignore"] }).toString().trim()) || cores
  } catch {
    // nproc missing: node's count
  }
  return {
    cores,
    cpu: os.cpus()[0]?.model.trim() ?? "unknown CPU",
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    postgres,
    database
  }
}

const describeResult = (r: DriverResult, cpu?: CpuCost) => {
  const non2xx = r.non2xx === 0 ? "" : `, non-2xx ${JSON.stringify(Object.fromEntries(Object.entries(r.statusCodes).filter(([s]) => !s.startsWith("2"))))}`
  const errors = r.errors === 0 ? "" : `, ${r.errors} connection errors (${r.timeouts} timeouts)`
  const cost = cpu === undefined
    ? ""
    : `${cpu.walBytes === undefined ? "" : `; WAL ${cpu.walBytes.toFixed(0)} B/ping`}; CPU µs/ping: server ${cpu.serverUs.toFixed(0)}${cpu.postgresUs === undefined ? "" : `, PostgreSQL backends ${cpu.postgresUs.toFixed(0)}`}${cpu.postgresServerUs === undefined ? "" : ` (whole server ${cpu.postgresServerUs.toFixed(0)})`}, driver ${cpu.driverUs.toFixed(0)}; cores busy ${cpu.machineBusy === undefined ? "?" : `${(cpu.machineBusy * 100).toFixed(0)} %`}${cpu.otherCores === undefined ? "" : `, other processes ${cpu.otherCores.toFixed(2)} cores`}`
  return `${r.rps} pings/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, 2xx ${r.count2xx}${non2xx}${errors}${cost}`
}

const main = async (): Promise<number> => {
  installSignalHandlers()
  const started = new Date()
  log(
    `${settings.seconds} s per phase, connections ${settings.connections.join("/")}, ${settings.rate} pings/s fixed rate over ${settings.rateConnections} connections, ${settings.monitors} monitors`
  )
  const background = await backgroundBusy(2000)
  if (background !== undefined) log(`before starting anything, the cores were ${(background * 100).toFixed(0)} % busy with other work`)

  const database = await openBenchDatabase()
  log(`database: ${database.describe}`)
  const db = await BenchDb.connect(database.url)
  onCleanup(() => db.close())

  const rows: Array<PhaseRow> = []
  const notes: Array<string> = []
  const accountings: Array<{ label: string; accounting: Accounting }> = []

  // Both servers run side by side (the idle one costs nothing); their phases alternate, so that
  // other work on the machine weighs on the baseline and the intake alike.
  const bare = await startBare()
  const floor = settings.floor ? await startFloor(database.url) : undefined
  const adminToken = newBootstrapToken()
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-bench-log-"))
  const serviceLog = path.join(logDir, "service.log")
  let keepServiceLog = false
  onCleanup(async () => {
    if (!keepServiceLog) fs.rmSync(logDir, { recursive: true, force: true })
  })
  // The webhook phase posts ping.received deliveries to the bare server on 127.0.0.1.
  const serviceEnv = settings.webhook ? { ALLOW_PRIVATE_TARGETS: "true" } : {}
  let service: RunningServer = await startService({ databaseUrl: database.url, bootstrapToken: adminToken, logFile: serviceLog, env: serviceEnv })
  log(`bare node:http at ${bare.url}; service at ${service.url} is healthy`)
  const facts = await db.serverFacts()
  const pgDescription = `PostgreSQL ${facts.version}${facts.timescaledb === undefined ? "" : ` + TimescaleDB ${facts.timescaledb}`}`
  const dbDescription = `runs ${facts.runsIsHypertable ? "is a hypertable" : "is a plain table"}; synchronous_commit=${facts.synchronousCommit}, fsync=${facts.fsync}, wal_sync_method=${facts.walSyncMethod}`
  log(`${pgDescription}; ${dbDescription}`)
  if (facts.synchronousCommit !== "on") notes.push(`synchronous_commit is '${facts.synchronousCommit}' on this server: acknowledged pings are not durably committed.`)

  const setupStart = Date.now()
  const pingToken = await createPingToken(service.url, adminToken)
  const ids = await createMonitors(service.url, adminToken, settings.monitors)
  const bareIds = Array.from({ length: settings.monitors }, () => randomUUID())
  log(`${ids.length} monitors and a ping-scoped token created through the API in ${((Date.now() - setupStart) / 1000).toFixed(1)} s`)

  /** One driver run against `server`, with the CPU each process spent on it. */
  const pingIds = settings.pingUrls ? await db.pingIds(ids) : []
  const measured = async (server: RunningServer, target: "bare" | "floor" | "intake", config: Omit<DriverConfig, "url" | "token" | "monitorIds">) => {
    const serverPid = server.child.process.pid!
    const backends = target !== "bare" ? await db.backendPids() : []
    const postmaster = backends.length > 0 ? parentPid(backends[0]!) : undefined
    const pgBefore = postmaster === undefined ? undefined : postgresServerCpuUs(postmaster)
    const walBefore = target !== "bare" ? await db.walLsn() : undefined
    const before = sampleCpu([serverPid, ...backends])
    const result = await runDriver({
      ...config,
      url: server.url,
      token: target === "intake" ? pingToken : "bare",
      monitorIds: target === "intake" ? (config.mode === "pingUrl" ? pingIds : ids) : bareIds
    })
    const after = sampleCpu([serverPid, ...backends])
    const pgAfter = postmaster === undefined ? undefined : postgresServerCpuUs(postmaster)
    const pgServerUs = pgBefore === undefined || pgAfter === undefined ? undefined : pgAfter.total - pgBefore.total
    const walBytes = walBefore === undefined ? undefined : await db.walBytesBetween(walBefore, await db.walLsn())
    const requests = Math.max(1, result.sent)
    const serverUs = cpuBetween(before, after, [serverPid])
    const postgresUs = cpuBetween(before, after, backends)
    const wallUs = (after.at - before.at) * 1000
    const machineUs = before.machine === undefined || after.machine === undefined ? undefined : after.machine.busy - before.machine.busy
    const cpu: CpuCost | undefined = before.processes.has(serverPid) && after.processes.has(serverPid)
      ? {
        serverUs: serverUs / requests,
        postgresUs: target !== "bare" && backends.length > 0 ? postgresUs / requests : undefined,
        postgresServerUs: pgServerUs === undefined ? undefined : pgServerUs / requests,
        walBytes: walBytes === undefined ? undefined : walBytes / requests,
        driverUs: result.driverCpuUs / requests,
        machineBusy: machineBusyBetween(before, after),
        otherCores: machineUs === undefined || wallUs <= 0
          ? undefined
          : Math.max(0, machineUs - serverUs - (pgServerUs ?? postgresUs) - result.driverCpuUs) / wallUs
      }
      : undefined
    return { result, cpu }
  }

  const barePhase = async (connections: number, seconds: number, label = "bare node:http", rate?: DriverConfig["rate"]) => {
    const { result, cpu } = await measured(bare, "bare", { title: label, mode: "success", connections, seconds, ...(rate === undefined ? {} : { rate }) })
    log(`${label}, ${connections} connections: ${describeResult(result, cpu)}`)
    return { result, cpu }
  }

  const FLOOR_LABEL = "durable floor (node:http + group commit, no product logic)"
  let floorAcknowledged = 0
  const floorPhase = async (connections: number, seconds: number, label = FLOOR_LABEL, rate?: DriverConfig["rate"]) => {
    if (floor === undefined) return undefined
    const { result, cpu } = await measured(floor, "floor", { title: "floor", mode: "success", connections, seconds, ...(rate === undefined ? {} : { rate }) })
    floorAcknowledged += result.count2xx
    log(`${label}, ${connections} connections: ${describeResult(result, cpu)}`)
    return { result, cpu }
  }

  const intakePhase = async (label: string, mode: LoadMode, connections: number, seconds: number, rate?: DriverConfig["rate"]) => {
    const before = await db.settledRunCounts()
    const { result, cpu } = await measured(service, "intake", { title: label, mode, connections, seconds, ...(rate === undefined ? {} : { rate }) })
    const after = await db.settledRunCounts()
    const accounting = account(result, before, after)
    accountings.push({ label: `${label} (${connections} connections)`, accounting })
    const rowsText = mode === "pairs"
      ? `; acknowledged starts ${accounting.ackedStarts}, successes ${accounting.ackedSuccesses}; ${accounting.newRuns} runs, ${accounting.newSuccess} closed, ${accounting.leftRunning} left RUNNING`
      : `; ${accounting.newRuns} rows`
    log(`${label}, ${connections} connections: ${describeResult(result, cpu)}${rowsText}; unanswered ${accounting.unanswered}; missing ${accounting.missing}`)
    return { result, cpu, accounting }
  }

  log(`warm-up: ${settings.warmupSeconds} s each`)
  await barePhase(settings.connections[0]!, settings.warmupSeconds, "bare warm-up")
  await floorPhase(settings.connections[0]!, settings.warmupSeconds, "durable floor warm-up")
  // Success phases first: a success without runId closes an open run, so none may be open yet.
  await intakePhase("intake warm-up", "success", settings.connections[0]!, settings.warmupSeconds)

  // The closed-loop comparison runs in rounds: at each connection count, bare node:http, the durable
  // floor and the intake one after the other, the order reversed every other round, and the judged
  // ratio is the median of the rounds' own ratios (intake / bare of the same round). This host's
  // speed drifts by a third between minutes, so one phase of each, run one after the other,
  // compared whatever the machine did in between (docs/performance.md, "Rounds").
  const bareRps = new Map<number, number>()
  const ratios = new Map<number, number>()
  const roundRates = new Map<number, { bare: Array<number>; intake: Array<number> }>()
  // Before each phase of a round, until the machine is quiet (at most 10 s): what PostgreSQL does
  // after a phase that wrote (autovacuum, the checkpointer) must not weigh on the next phase, whichever
  // server it measures.
  const quiet = async () => {
    for (let i = 0; i < 10; i++) {
      const busy = await backgroundBusy(1000)
      if (busy === undefined || busy < QUIET_BUSY) return
    }
    log(`the machine stayed above ${QUIET_BUSY * 100} % busy for 10 s before the next phase`)
  }
  for (const c of settings.connections) {
    const rates: Array<number> = []
    const intakeRates: Array<number> = []
    for (let round = 1; round <= settings.rounds; round++) {
      const tag = settings.rounds === 1 ? "" : ` (round ${round} of ${settings.rounds})`
      const order = round % 2 === 1 ? (["bare", "floor", "intake"] as const) : (["intake", "floor", "bare"] as const)
      let b: Awaited<ReturnType<typeof barePhase>> | undefined
      let f: Awaited<ReturnType<typeof floorPhase>>
      let i: Awaited<ReturnType<typeof intakePhase>> | undefined
      for (const target of order) {
        await quiet()
        if (target === "bare") b = await barePhase(c, settings.seconds, `bare node:http${tag}`)
        else if (target === "floor") f = await floorPhase(c, settings.seconds, `${FLOOR_LABEL}${tag}`)
        else i = await intakePhase(`intake success${tag}`, "success", c, settings.seconds)
      }
      const ratio = i!.result.rps / b!.result.rps
      rates.push(b!.result.rps)
      intakeRates.push(i!.result.rps)
      rows.push({ label: `bare node:http${tag}`, target: "bare", ...b! })
      if (f !== undefined) rows.push({ label: `${FLOOR_LABEL}${tag}`, target: "floor", ...f, ratio: f.result.rps / b!.result.rps })
      rows.push({ label: `intake: success pings${tag}`, target: "intake", ...i!, ratio })
    }
    bareRps.set(c, median(rates))
    ratios.set(c, median(intakeRates.map((r, k) => r / rates[k]!)))
    roundRates.set(c, { bare: rates, intake: intakeRates })
  }
  // The same fixed rate on the bare server first: what the machine and the driver allow at that
  // rate with nothing behind the answers (its p99, whole and after the first second).
  const bareEven = await barePhase(settings.rateConnections, settings.seconds, `bare node:http ${settings.rate}/s`, { perSecond: settings.rate, pacing: "even" })
  rows.push({ label: `bare node:http: ${settings.rate}/s, even pacing`, target: "bare", ...bareEven })
  const floorEven = await floorPhase(settings.rateConnections, settings.seconds, `durable floor ${settings.rate}/s`, { perSecond: settings.rate, pacing: "even" })
  if (floorEven !== undefined) rows.push({ label: `durable floor: ${settings.rate}/s, even pacing`, target: "floor", ...floorEven })
  // The fixed rate comes from a new driver process with new connections: warm those up first.
  await intakePhase(`intake ${settings.rate}/s warm-up`, "success", settings.rateConnections, settings.warmupSeconds, { perSecond: settings.rate, pacing: "even" })
  const evenRate = await intakePhase(`intake ${settings.rate}/s`, "success", settings.rateConnections, settings.seconds, { perSecond: settings.rate, pacing: "even" })
  rows.push({ label: `intake: ${settings.rate}/s, even pacing`, target: "intake", ...evenRate })
  const burstRate = await intakePhase(`intake ${settings.rate}/s (autocannon overallRate)`, "success", settings.rateConnections, settings.seconds, {
    perSecond: settings.rate,
    pacing: "autocannon"
  })
  rows.push({ label: `intake: ${settings.rate}/s, autocannon overallRate`, target: "intake", ...burstRate })
  // ping.received subscribed (issue #6): the same success phase with no subscriber, with a webhook
  // on ping.received for other monitors, and with a webhook receiving every ping, in the order
  // A B C C B A (the tables grow and autovacuum wakes as phases go by: a fixed order would favour
  // whichever ran first); every acknowledged ping of the C phases must have its event.
  let webhookResult: { without: number; eventsOnly: number; with: number; connections: number; events: number; acked: number } | undefined
  if (settings.webhook) {
    const c = settings.connections[0]!
    const variants = {
      without: { label: "no webhook", rps: [] as Array<number> },
      eventsOnly: { label: "webhook on ping.received for other monitors", rps: [] as Array<number> },
      with: { label: "webhook on ping.received", rps: [] as Array<number> }
    }
    let events = 0
    let acked = 0
    for (const which of ["without", "eventsOnly", "with", "with", "eventsOnly", "without"] as const) {
      const variant = variants[which]
      // eventsOnly: a monitor filter that matches none of the pinged monitors, so their pings record
      // no event (docs/events.md) and the phase should cost what "no webhook" does.
      const hook = which === "without"
        ? undefined
        : await createWebhook(service.url, adminToken, `${bare.url}/hook`, ["ping.received"], which === "eventsOnly" ? [randomUUID()] : undefined)
      const eventsBefore = await db.pingEventCount()
      const phase = await intakePhase(`intake success, ${variant.label}`, "success", c, settings.seconds)
      if (which === "with") {
        events += (await db.pingEventCount()) - eventsBefore
        acked += phase.accounting.ackedSuccesses
      }
      if (hook !== undefined) await deleteWebhook(service.url, adminToken, hook)
      variant.rps.push(phase.result.rps)
      rows.push({ label: `intake: success pings, ${variant.label}`, target: "intake", ...phase, ratio: phase.result.rps / bareRps.get(c)! })
    }
    const mean = (xs: ReadonlyArray<number>) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length)
    webhookResult = {
      without: mean(variants.without.rps),
      eventsOnly: mean(variants.eventsOnly.rps),
      with: mean(variants.with.rps),
      connections: c,
      events,
      acked
    }
    log(`ping.received (means of two phases each): ${webhookResult.eventsOnly} pings/s with a webhook for other monitors, ${webhookResult.with} with a webhook receiving every ping, against ${webhookResult.without} without; ${events} events for ${acked} acknowledged pings`)
  }
  // Ping URLs (issue #23): success pings by /ping/<pingId> (no token: the URL is the credential,
  // found in memory) against the token route, at the first connection count, in the order
  // A B B A (the tables grow as phases go by: a fixed order would favour whichever ran first).
  let pingUrlResult: { token: number; url: number; connections: number } | undefined
  if (settings.pingUrls) {
    const c = settings.connections[0]!
    const rates = { token: [] as Array<number>, url: [] as Array<number> }
    // The ping URL's code path gets its warm-up too (the token route had its own above).
    await intakePhase("ping URL warm-up", "pingUrl", c, settings.warmupSeconds)
    for (const which of ["token", "url", "url", "token"] as const) {
      await quiet()
      const label = which === "token" ? "intake success, token route" : "intake success, ping URL"
      const phase = await intakePhase(label, which === "token" ? "success" : "pingUrl", c, settings.seconds)
      rates[which].push(phase.result.rps)
      rows.push({
        label: which === "token" ? "intake: success pings, POST /api/ping/{id}/success + token" : "intake: success pings, POST /ping/{pingId} (no token)",
        target: "intake",
        ...phase,
        ratio: phase.result.rps / bareRps.get(c)!
      })
    }
    const mean = (xs: ReadonlyArray<number>) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length)
    pingUrlResult = { token: mean(rates.token), url: mean(rates.url), connections: c }
    log(`ping URL (means of two phases each): ${pingUrlResult.url} pings/s by /ping/<pingId>, against ${pingUrlResult.token} by the token route`)
  }
  for (const c of settings.connections) {
    const i = await intakePhase("intake start+success pairs", "pairs", c, settings.seconds)
    rows.push({ label: "intake: start+success pairs", target: "intake", ...i, ratio: i.result.rps / bareRps.get(c)! })
  }
  const malformed = await db.malformedSuccessRows()
  const incidents = await db.incidentCounts()
  await stopServer(bare)
  if (floor !== undefined) {
    await stopServer(floor)
    const stored = await db.countFloorRuns()
    notes.push(
      `The durable floor (bench/support/floor-server.ts: node:http, group commit into a five-column table with a primary key and a (monitor, time) index, answered after COMMIT; no authentication, validation, redaction, pairing, engine or events) acknowledged ${floorAcknowledged.toLocaleString("en-US")} pings and stored ${stored.toLocaleString("en-US")} rows: its distance to the intake is the product's own work per ping, its distance to bare node:http the price of durability.`
    )
  }
  await stopServer(service)
  const totals = await db.totals()

  // The checks.
  const checks: Array<Check> = []
  const missing = accountings.reduce((n, a) => n + a.accounting.missing, 0)
  const unexplained = accountings.reduce((n, a) => n + a.accounting.unexplained, 0)
  const acknowledged = accountings.reduce((n, a) => n + a.accounting.ackedStarts + a.accounting.ackedSuccesses, 0)
  checks.push({
    name: "zero acknowledged pings missing",
    pass: missing === 0,
    detail: `${missing} of ${acknowledged.toLocaleString("en-US")} acknowledged pings (all phases, warm-up included) have no row`
  })
  checks.push({
    name: "no rows beyond the acknowledged pings",
    pass: unexplained === 0 && malformed === 0,
    detail: `${unexplained} rows without an acknowledged (or, if any, still unanswered) ping; ${malformed} SUCCESS rows without a finish time, or without a duration though their start is known`
  })
  for (const c of settings.connections) {
    const ratio = ratios.get(c)!
    const { bare: bareRates, intake: intakeRates } = roundRates.get(c)!
    const each = intakeRates.map((r, k) => r / bareRates[k]!)
    const list = (xs: ReadonlyArray<number>) => xs.map((x) => Math.round(x).toLocaleString("en-US")).join(", ")
    checks.push({
      name: `intake ≥ ${RATIO_TARGET} × bare node:http at ${c} connections`,
      pass: ratio >= RATIO_TARGET,
      detail: each.length === 1
        ? `${intakeRates[0]} / ${bareRates[0]} pings/s = ${ratio.toFixed(2)}`
        : `median of ${each.length} rounds ${ratio.toFixed(2)} (rounds: ${each.map((r) => r.toFixed(2)).join(", ")}; intake ${list(intakeRates)} pings/s against bare ${list(bareRates)})`
    })
  }
  if (webhookResult !== undefined) {
    checks.push({
      name: "an event for every acknowledged ping while ping.received is subscribed",
      pass: webhookResult.events >= webhookResult.acked,
      detail: `${webhookResult.events} ping.received events for ${webhookResult.acked} acknowledged pings`
    })
    // Issue #6: ping.received "must not slow the intake path". A run's phases differ by several
    // per cent with nothing changed (compare A with B), so "not slower" is read as within 10 %.
    checks.push({
      name: `a webhook receiving every ping keeps the intake within ${Math.round((1 - WEBHOOK_TARGET) * 100)} % of its rate without one`,
      pass: webhookResult.with >= WEBHOOK_TARGET * webhookResult.without,
      detail: `${webhookResult.with} / ${webhookResult.without} pings/s = ${(webhookResult.with / webhookResult.without).toFixed(2)} (means of two phases each, order A B C C B A)`
    })
    notes.push(
      `ping.received (issue #6), success phases at ${webhookResult.connections} connections in the order A B C C B A (means of the two phases of each): ${webhookResult.without.toLocaleString("en-US")} pings/s without a subscriber (A); ${webhookResult.eventsOnly.toLocaleString("en-US")} (${(webhookResult.eventsOnly / webhookResult.without).toFixed(2)}) with a webhook on ping.received whose monitor filter matches none of the pinged monitors, so their pings record no event (B); ${webhookResult.with.toLocaleString("en-US")} (${(webhookResult.with / webhookResult.without).toFixed(2)}) with a webhook receiving every ping (C: one ping_events row per ping; the delivery worker turns them into deliveries as the webhook takes them, 100 a minute).`
    )
  }
  if (pingUrlResult !== undefined) {
    checks.push({
      name: `the ping URL keeps at least ${PING_URL_TARGET} × the token route's rate`,
      pass: pingUrlResult.url >= PING_URL_TARGET * pingUrlResult.token,
      detail: `${pingUrlResult.url} / ${pingUrlResult.token} pings/s = ${(pingUrlResult.url / pingUrlResult.token).toFixed(2)} at ${pingUrlResult.connections} connections (means of two phases each, order A B B A)`
    })
    notes.push(
      `Ping URLs (issue #23), success phases at ${pingUrlResult.connections} connections in the order A B B A: ${pingUrlResult.token.toLocaleString("en-US")} pings/s by POST /api/ping/{id}/success with a ping token and a JSON body (A), ${pingUrlResult.url.toLocaleString("en-US")} (${(pingUrlResult.url / pingUrlResult.token).toFixed(2)}) by POST /ping/{pingId} with no token and the output as a text body (B). Both go through the same intake, writer and engine; the ping URL looks its capability up in memory instead of the token.`
    )
  }
  const even = evenRate.result
  const delivered = even.rps / settings.rate
  // Whole seconds only (the last one is cut short by the stop).
  const seconds = even.perSecond.slice(0, Math.floor(settings.seconds)).filter((s) => s.count > 0)
  const slowSeconds = seconds.filter((s) => s.p99 >= P99_TARGET_MS)
  const worst = seconds.reduce((w, s, i) => (s.p99 > w.p99 ? { p99: s.p99, at: i } : w), { p99: 0, at: 0 })
  const medianSecond = [...seconds.map((s) => s.p99)].sort((a, b) => a - b)[Math.floor(seconds.length / 2)] ?? 0
  const steady = even.latencyAfterFirstSecond.count === 0 ? even.latency : even.latencyAfterFirstSecond
  const bareRate = bareEven.result
  checks.push({
    name: `p99 < ${P99_TARGET_MS} ms at ${settings.rate} pings/s`,
    // Judged after the first second: in it the driver opens all its connections at once, and
    // the bare server's own p99 over the whole phase shows what that costs with nothing behind it.
    pass: steady.p99 < P99_TARGET_MS && delivered >= RATE_DELIVERED && even.non2xx === 0,
    detail: `even pacing over ${settings.rateConnections} connections, latency from the instant each ping was due, after the first second: p50 ${steady.p50} ms, p99 ${steady.p99} ms (whole phase: p50 ${even.latency.p50} ms, p99 ${even.latency.p99} ms, max ${even.latency.max} ms); delivered ${even.rps} pings/s (${(delivered * 100).toFixed(1)} %); p99 of each second: median ${medianSecond} ms, worst ${worst.p99} ms (second ${worst.at + 1}), ${slowSeconds.length} of ${seconds.length} seconds at or above ${P99_TARGET_MS} ms. Bare node:http at the same rate: p99 ${bareRate.latencyAfterFirstSecond.p99} ms after the first second, ${bareRate.latency.p99} ms whole phase (${bareRate.rps}/s delivered)${floorEven === undefined ? "" : `; the durable floor: p99 ${floorEven.result.latencyAfterFirstSecond.p99} ms after the first second, ${floorEven.result.latency.p99} ms whole phase (${floorEven.result.rps}/s delivered)`}`
  })
  log(`${settings.rate}/s, even pacing, p99 of each second (ms): ${seconds.map((s) => s.p99.toFixed(0)).join(" ")}`)
  const burst = burstRate.result
  notes.push(
    `autocannon's own overallRate lets every connection send its per-second quota back to back at the start of each second, and measures from the actual send; at ${settings.rate}/s that gave p50 ${burst.latency.p50} ms, p99 ${burst.latency.p99} ms (${burst.rps} pings/s delivered). The p99 check uses even pacing.`
  )
  if (incidents !== undefined) {
    const total = Object.values(incidents).reduce((a, b) => a + b, 0)
    notes.push(
      total === 0
        ? "The service raised no incidents during the run (each monitor's durations are steady)."
        : `The service raised ${total} incidents during the run (${Object.entries(incidents).map(([t, n]) => `${t} ${n}`).join(", ")}): their writes are part of what was measured.`
    )
  }
  const totalNon2xx = rows.filter((r) => r.target === "intake").reduce((n, r) => n + r.result.non2xx, 0)
  const serviceTroubles = totalNon2xx > 0 || rows.some((r) => r.result.errors > 0) || fs.statSync(serviceLog).size > 0
  notes.push(totalNon2xx === 0 ? "No non-2xx answers from the intake." : `${totalNon2xx} non-2xx answers from the intake (see the table).`)
  if (serviceTroubles) {
    keepServiceLog = true
    log(`the service's log (warnings and errors): ${serviceLog}`)
  }
  const unanswered = accountings.reduce((n, a) => n + a.accounting.unanswered, 0)
  notes.push(
    unanswered === 0
      ? `Each phase sends for its seconds, then waits for every answer: all ${acknowledged.toLocaleString("en-US")} pings sent were answered, so "rows written" must equal the acknowledged pings exactly (pairs: runs = acknowledged starts, closed = acknowledged successes).`
      : `${unanswered} pings were still unanswered when a phase ended (${accountings.filter((a) => a.accounting.unanswered > 0).map((a) => `${a.label}: ${a.accounting.unanswered}`).join("; ")}); the service may have stored them, so for those phases rows may exceed the acknowledged pings by at most that many.`
  )
  notes.push(
    `Over the whole run (setup included: ${settings.monitors} monitors created through the API) the database committed ${totals.commits.toLocaleString("en-US")} transactions and updated \`monitors\` rows ${totals.monitorUpdates.toLocaleString("en-US")} times, for ${acknowledged.toLocaleString("en-US")} acknowledged pings (${(totals.commits / Math.max(1, acknowledged)).toFixed(3)} commits per ping).`
  )
  const crowded = rows.filter((r) => (r.cpu?.otherCores ?? 0) > 0.25)
  if (crowded.length > 0) {
    notes.push(
      `Other processes competed for the cores during ${crowded.map((r) => `${r.label} at ${r.result.connections} (${r.cpu!.otherCores!.toFixed(2)} cores)`).join("; ")}: those rates (and ratios) are low by that much; the CPU-per-ping figures are the steadier comparison.`
    )
  }
  if (background !== undefined) {
    notes.push(`Before the run the cores were ${(background * 100).toFixed(0)} % busy with other work; "cores busy" in the CPU table counts everything on the machine during each phase.`)
  }

  // A CPU profile of the service when the ratio target is missed (or when asked).
  let profile: ProfileSummary | undefined
  let profiledConnections: number | undefined
  const belowTarget = [...ratios.values()].some((r) => r < RATIO_TARGET)
  if (settings.profile === "always" || (settings.profile === "auto" && belowTarget)) {
    const c = settings.connections[0]!
    profiledConnections = c
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-bench-prof-"))
    log(`profiling the service (node --cpu-prof) during a ${settings.seconds} s success phase at ${c} connections`)
    service = await startService({ databaseUrl: database.url, bootstrapToken: adminToken, cpuProfileDir: dir })
    const loadedBy = new Date()
    // Not counted: success pings would now also close the runs the pairs left open.
    await runDriver({ title: "profile warm-up", url: service.url, token: pingToken, monitorIds: ids, mode: "success", connections: c, seconds: settings.warmupSeconds })
    const phaseStart = Date.now()
    const profiled = await runDriver({ title: "profiled", url: service.url, token: pingToken, monitorIds: ids, mode: "success", connections: c, seconds: settings.seconds })
    const phaseEnd = Date.now()
    log(`profiled phase (success, ${c} connections, profiler on): ${describeResult(profiled)}`)
    await stopServer(service)
    const exited = Date.now()
    const file = mainThreadProfile(dir)
    if (file === undefined) notes.push("The CPU profile was not written (the service did not exit cleanly).")
    else {
      // Only the measured phase (the driver's own start-up excluded); the file stays for a closer look.
      const window = [exited - phaseEnd + profiled.duration * 1000, exited - phaseEnd] as const
      profile = summarizeProfile(file, { windowBeforeEndMs: window, loadedBy })
      log(`CPU profile: ${file} (phase window ${Math.round(window[0] - window[1])} ms of ${Math.round(exited - phaseStart)} ms)`)
    }
  }

  // The results.
  const m = machine(pgDescription, dbDescription)
  console.log("")
  console.log(`Ping intake — ${started.toISOString()} — ${codeVersion()} — ${m.cores} cores, Node ${m.node}, ${m.postgres} (${database.setup === "url" ? "DATABASE_URL" : "embedded"})`)
  console.log(consoleTable(rows))
  console.log("")
  console.log(checksText(checks))
  for (const note of notes) console.log(`note: ${note}`)
  if (profile !== undefined) console.log(`\n${profileText(profile)}`)

  if (settings.writeDocs) {
    const file = env("BENCH_DOCS_FILE", path.join(ROOT, "docs", "performance.md"))
    writeDocs(file, {
      setup: database.setup,
      date: started.toISOString().slice(0, 16).replace("T", " ") + " UTC",
      machine: m,
      code: codeVersion(),
      settings: `${settings.seconds} s per phase after a ${settings.warmupSeconds} s warm-up, ${settings.monitors} monitors, fixed rate over ${settings.rateConnections} connections`,
      rows,
      checks,
      notes,
      profile,
      profiledConnections
    })
    log(`results written to ${path.relative(process.cwd(), file)} ("Ping intake", ${database.setup} block)`)
  }

  if (missing > 0 || unexplained > 0 || malformed > 0) return 1
  if (settings.strict && checks.some((c) => !c.pass)) return 1
  return 0
}

await runBench("bench", main)
