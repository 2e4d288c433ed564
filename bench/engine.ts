/**
 * `npm run bench:engine`: the incident engine at 100,000 monitors in one process.
 *
 * On a fresh database (DATABASE_URL's server, or an embedded PostgreSQL) the service is started
 * once to migrate and bootstrap, 100,000 idle monitors (with open runs and active incidents) are
 * written straight in SQL, and the service is started again as a child process: the time from the
 * spawn to a healthy /healthz, the engine's own rebuild time from its log, the idle RSS of the
 * process; then monitors whose MISSED or LATE deadline falls 20–40 s later are created through the
 * API and the incidents table is polled to see how soon after its deadline each incident is
 * written. docs/performance.md ("Incident engine") describes it and holds the latest results.
 *
 * Targets: idle RSS ≤ 512 MB; all actors rebuilt in ≤ 10 s at start-up; a MISSED or LATE incident
 * written ≤ 1 s after its deadline with 100,000 monitors loaded.
 */
import { execSync } from "node:child_process"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { installSignalHandlers, onCleanup, runBench } from "./support/children.js"
import { backgroundBusy, parentPid, postgresServerCpuUs, processCpuUs } from "./support/cpu.js"
import { BenchDb, openBenchDatabase } from "./support/database.js"
import {
  type Group,
  type Kind,
  plantBurst,
  type Planted,
  type PlantResult,
  plantSpread,
  POLL_MS,
  retire,
  watchIncidents,
  type WatchResult
} from "./support/engine-deadlines.js"
import { consoleText, type EngineReport, fmt, latencyStats, mb, median, writeEngineDocs } from "./support/engine-report.js"
import { seedFleet } from "./support/engine-seed.js"
import { memoryOf, startTimedService, stopTimedService, type TimedService } from "./support/engine-service.js"
import type { Check, Machine } from "./support/report.js"
import { newBootstrapToken, ROOT } from "./support/servers.js"
import { env, whole } from "./support/settings.js"


const settings = {
  monitors: whole("BENCH_ENGINE_MONITORS", 100_000),
  openRuns: whole("BENCH_ENGINE_OPEN_RUNS", 3_000, 0),
  incidents: whole("BENCH_ENGINE_INCIDENTS", 300, 0),
  missed: whole("BENCH_ENGINE_MISSED", 200),
  late: whole("BENCH_ENGINE_LATE", 100),
  burst: whole("BENCH_ENGINE_BURST", 1000, 0),
  idleSeconds: whole("BENCH_ENGINE_IDLE_SECONDS", 15),
  writeDocs: env("BENCH_WRITE_DOCS", "1") !== "0",
  strict: env("BENCH_STRICT", "0") === "1"
}

const RSS_TARGET = 512 * 2 ** 20
const REBUILD_TARGET_MS = 10_000
const LATENCY_TARGET_MS = 1_000
const RSS_SAMPLES = 5
const HISTORY_PER_OPEN_RUN = 30

const log = (message: string) => console.log(`[bench:engine] ${message}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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

const main = async (): Promise<number> => {
  installSignalHandlers()
  const started = new Date()
  log(
    `${fmt(settings.monitors)} monitors, ${fmt(settings.openRuns)} open runs, ${settings.incidents} active incidents; ${settings.missed} MISSED and ${settings.late} LATE deadlines planted, then ${fmt(settings.burst)} MISSED sharing one deadline`
  )
  const background = await backgroundBusy(1000)

  const database = await openBenchDatabase("jobmon_bench_engine")
  log(`database: ${database.describe}`)
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  onCleanup(() => client.end())
  // Read-backs of the planted deadlines, from several API workers at once.
  const pool = new pg.Pool({ connectionString: database.url, max: 8 })
  onCleanup(() => pool.end())
  const adminToken = newBootstrapToken()

  // 1. Migrations and the default organization: start the service once on the empty database.
  const first = await startTimedService({ databaseUrl: database.url, bootstrapToken: adminToken })
  log(`empty database: healthy ${fmt(first.spawnToHealthyMs)} ms after the spawn (engine: ${first.engine?.actors ?? "?"} actors in ${first.engine?.rebuildMs ?? "?"} ms); mode ${first.databaseMode ?? "?"}`)
  const emptyRss = memoryOf(first.pid)
  await stopTimedService(first)
  const db = await BenchDb.connect(database.url)
  onCleanup(() => db.close())
  const facts = await db.serverFacts()
  const pgDescription = `PostgreSQL ${facts.version}${facts.timescaledb === undefined ? "" : ` + TimescaleDB ${facts.timescaledb}`}`
  const dbDescription = `database mode ${first.databaseMode ?? "?"}; runs ${facts.runsIsHypertable ? "is a hypertable" : "is a plain table"}`
  log(`${pgDescription}; ${dbDescription}`)

  // 2. The idle fleet, straight in SQL.
  const org = await client.query<{ id: string }>(`select id from organizations where slug = 'default'`)
  const orgId = org.rows[0]?.id
  if (orgId === undefined) throw new Error("the service did not create the default organization")
  const seed = await seedFleet(client, {
    orgId,
    count: settings.monitors,
    openRuns: settings.openRuns,
    historyPerOpenRun: HISTORY_PER_OPEN_RUN,
    activeIncidents: settings.incidents,
    quietMinutes: 15
  })
  log(
    `seeded in ${fmt(seed.ms / 1000, 1)} s: ${fmt(seed.monitors)} monitors (${fmt(seed.paused)} paused), ${fmt(seed.openRuns)} open runs (${fmt(seed.learnedLimit)} with a learned LATE limit, ${fmt(seed.historyRuns)} past runs), ${seed.activeIncidents} active incidents; earliest deadline ${seed.earliestDeadline?.toISOString() ?? "none"}`
  )
  const incidentsBefore = Number((await client.query<{ n: string }>(`select count(*) as n from incidents`)).rows[0]!.n)

  // 3. The start-up with 100,000 monitors.
  const busyBeforeStart = await backgroundBusy(2000)
  const service: TimedService = await startTimedService({ databaseUrl: database.url, bootstrapToken: adminToken })
  const startupCpuUs = processCpuUs(service.pid)
  const engine = service.engine
  log(
    `healthy ${fmt(service.spawnToHealthyMs)} ms after the spawn; engine: ${engine === undefined ? "no start-up line in the log" : `${fmt(engine.actors)} actors rebuilt in ${fmt(engine.rebuildMs)} ms (line seen ${fmt(engine.seenAfterMs)} ms after the spawn)`}`
  )
  const peakAfterStart = memoryOf(service.pid)?.hwm

  // 4. Idle: RSS (and CPU) of the process with nothing to do.
  const cpuIdleFrom = processCpuUs(service.pid)
  const idleFrom = Date.now()
  await sleep(settings.idleSeconds * 1000)
  const rssSamples: Array<number> = []
  let hwm: number | undefined
  for (let i = 0; i < RSS_SAMPLES; i++) {
    if (i > 0) await sleep(1000)
    const m = memoryOf(service.pid)
    if (m !== undefined) {
      rssSamples.push(m.rss)
      hwm = m.hwm
    }
  }
  const cpuIdleTo = processCpuUs(service.pid)
  if (service.child.hasExited()) throw new Error(`the service exited while idle:\n${[...service.stdout().slice(-30), service.child.tail()].join("\n")}`)
  const idleCpu = cpuIdleFrom === undefined || cpuIdleTo === undefined ? undefined : (cpuIdleTo - cpuIdleFrom) / ((Date.now() - idleFrom) * 1000)
  const idleRss = rssSamples.length === 0 ? undefined : median(rssSamples)
  log(`idle RSS after ${settings.idleSeconds} s: ${rssSamples.map(mb).join(", ")} (median ${mb(idleRss)}); peak (VmHWM) ${mb(hwm)}; idle CPU ${idleCpu === undefined ? "?" : `${fmt(idleCpu * 100, 1)} %`} of a core`)

  // 5. Deadlines 20–40 s ahead, with 100,000 monitors loaded; then a burst sharing one deadline.
  const api = { url: service.url, token: adminToken }
  const alive = (phase: string) => {
    if (!service.child.hasExited()) return
    throw new Error(`the service exited during ${phase}; its last lines:\n${[...service.stdout().slice(-30), service.child.tail()].join("\n")}`)
  }
  const spread = await plantSpread(api, pool, { missed: settings.missed, late: settings.late, concurrency: 8 })
  const describePlant = (p: ReadonlyArray<Planted>, ms: number) => {
    const now = Date.now()
    const first = Math.min(...p.map((x) => x.deadline))
    const last = Math.max(...p.map((x) => x.deadline))
    return `planted ${fmt(p.length)} monitors through the API in ${fmt(ms)} ms; deadlines from ${fmt((first - now) / 1000, 1)} s to ${fmt((last - now) / 1000, 1)} s from now (${new Set(p.map((x) => x.deadline)).size} distinct instants); polling every ${POLL_MS} ms`
  }
  log(describePlant(spread.planted, spread.ms))
  const spreadWatch = await watchIncidents(client, spread.planted, 15_000)
  alive("the spread deadlines")
  log(`spread: ${spreadWatch.seen.length} of ${spread.planted.length} incidents seen`)
  // The MISSED monitors would go on missing every 10–60 s: delete them before the burst.
  await retire(api, spread.planted, 8)
  let burstPlant: PlantResult = { planted: [], ms: 0 }
  let burstWatch: WatchResult = { seen: [], rows: [], polls: 0, meanPollMs: 0, maxPollGapMs: 0 }
  let burstCpu: { serviceMs: number | undefined; postgresMs: number | undefined; wallMs: number } | undefined
  if (settings.burst > 0) {
    const rate = (spread.planted.length * 1000) / Math.max(1, spread.ms)
    burstPlant = await plantBurst(api, pool, { count: settings.burst, ratePerSecond: rate, concurrency: 8 })
    log(describePlant(burstPlant.planted, burstPlant.ms))
    // CPU of the service and of the PostgreSQL server from just before the shared deadline to the last incident.
    const at = burstPlant.planted[0]!.deadline
    if (at - Date.now() > 300) await sleep(at - Date.now() - 300)
    const backends = await db.backendPids()
    const postmaster = backends.length > 0 ? parentPid(backends[0]!) : undefined
    const before = { service: processCpuUs(service.pid), pg: postmaster === undefined ? undefined : postgresServerCpuUs(postmaster)?.total, at: Date.now() }
    burstWatch = await watchIncidents(client, burstPlant.planted, 60_000)
    alive("the burst")
    const after = { service: processCpuUs(service.pid), pg: postmaster === undefined ? undefined : postgresServerCpuUs(postmaster)?.total, at: Date.now() }
    burstCpu = {
      serviceMs: before.service === undefined || after.service === undefined ? undefined : (after.service - before.service) / 1000,
      postgresMs: before.pg === undefined || after.pg === undefined ? undefined : (after.pg - before.pg) / 1000,
      wallMs: after.at - before.at
    }
    log(`burst: ${burstWatch.seen.length} of ${burstPlant.planted.length} incidents seen`)
  }
  const planted = [...spread.planted, ...burstPlant.planted]
  const watch = { seen: [...spreadWatch.seen, ...burstWatch.seen], rows: [...spreadWatch.rows, ...burstWatch.rows] }
  const afterRss = memoryOf(service.pid)
  const backgroundIncidents = Number(
    (await client.query<{ n: string }>(`select count(*) as n from incidents where monitor_id <> all($1::uuid[])`, [planted.map((p) => p.id)])).rows[0]!.n
  )
  const stopFrom = Date.now()
  await stopTimedService(service)
  const stopMs = Date.now() - stopFrom
  log(`service stopped in ${fmt(stopMs)} ms`)

  // 6. Checks.
  const stats = (kind: Kind, group: Group) =>
    latencyStats(
      planted.filter((p) => p.kind === kind && p.group === group).length,
      watch.seen.filter((s) => s.kind === kind && s.group === group).map((s) => s.latencyMs)
    )
  const missed = stats("MISSED", "spread")
  const late = stats("LATE", "spread")
  const burst = stats("MISSED", "burst")
  const burstWithin = watch.seen.filter((x) => x.group === "burst" && x.latencyMs <= LATENCY_TARGET_MS).length
  const kindOf = new Map(planted.map((p) => [p.id, p.kind]))
  const wrong: Array<string> = []
  for (const p of planted) {
    const rows = watch.rows.filter((r) => r.id === p.id)
    const own = rows.find((r) => r.type === p.kind)?.n ?? 0
    const other = rows.filter((r) => r.type !== p.kind)
    if (own !== 1 || other.length > 0) {
      wrong.push(`${p.kind} ${p.schedule}: ${own} ${p.kind}${other.map((o) => `, ${o.n} ${o.type}`).join("")}`)
    }
  }
  const misdated = watch.seen.filter((s) => s.createdAt !== s.deadline)
  const countsOk = wrong.length === 0 && backgroundIncidents === incidentsBefore
  const actorsOk = engine !== undefined && engine.actors === seed.monitors

  const checks: Array<Check> = []
  checks.push({
    name: `all actors rebuilt ≤ ${REBUILD_TARGET_MS / 1000} s at start-up`,
    pass: engine !== undefined && actorsOk && engine.rebuildMs <= REBUILD_TARGET_MS,
    detail: engine === undefined
      ? "the engine's start-up line was not in the log"
      : `${fmt(engine.actors)} of ${fmt(seed.monitors)} actors in ${fmt(engine.rebuildMs)} ms (engine log); spawn → /healthz 200 ${fmt(service.spawnToHealthyMs)} ms (${fmt(first.spawnToHealthyMs)} ms with an empty database)`
  })
  checks.push({
    name: "idle RSS ≤ 512 MB",
    pass: idleRss !== undefined && idleRss <= RSS_TARGET,
    detail: `median of ${rssSamples.length} readings after ${settings.idleSeconds} s idle: ${mb(idleRss)} (${rssSamples.map(mb).join(", ")}); peak during start-up ${mb(hwm)}`
  })
  for (const [kind, s] of [["MISSED", missed], ["LATE", late]] as const) {
    checks.push({
      name: `${kind} written ≤ ${LATENCY_TARGET_MS / 1000} s after its deadline`,
      pass: s.seen === s.planted && s.max <= LATENCY_TARGET_MS,
      detail: `${s.seen} of ${s.planted} seen; first seen − deadline p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms, max ${fmt(s.max)} ms`
    })
  }
  checks.push({
    name: "exactly one incident of its kind per planted monitor, none on the idle fleet",
    pass: countsOk,
    detail: `${fmt(planted.length - wrong.length)} of ${fmt(planted.length)} planted monitors right${wrong.length === 0 ? "" : ` (wrong: ${wrong.slice(0, 5).join("; ")}${wrong.length > 5 ? "; …" : ""})`}; idle fleet ${backgroundIncidents - incidentsBefore} new incidents`
  })

  const notes: Array<string> = []
  if (burst.planted > 0) {
    // Not one of the issue's targets (which speak of one incident): how the same limit fares when
    // many monitors fall due at the same instant, as when every job of a host stops at once.
    notes.push(
      `Burst (beyond the targets): ${fmt(burst.planted)} monitors sharing one MISSED deadline — ${fmt(burst.seen)} seen; first seen − deadline p50 ${fmt(burst.p50)} ms, p99 ${fmt(burst.p99)} ms, max ${fmt(burst.max)} ms, so ${fmt(burst.max > 0 ? (burst.seen / burst.max) * 1000 : NaN)} incidents/s; ${fmt(burstWithin)} of them within ${LATENCY_TARGET_MS / 1000} s.${
        burstCpu === undefined
          ? ""
          : ` From 0.3 s before the deadline to the last incident seen (+1 s), ${fmt(burstCpu.wallMs)} ms: the service used ${fmt(burstCpu.serviceMs)} ms of CPU (${fmt((burstCpu.serviceMs ?? NaN) / burst.planted, 2)} ms per incident), the PostgreSQL server ${fmt(burstCpu.postgresMs)} ms${database.setup === "url" ? " (the whole server: other databases' work included)" : ""}.`
      }`
    )
  }
  notes.push(
    misdated.length === 0
      ? "Every incident's created_at equals the planted deadline to the millisecond (the rules date an incident at its deadline), so the deadlines the latencies are measured from are the engine's own."
      : `${misdated.length} incidents have a created_at different from the planted deadline (e.g. ${misdated.slice(0, 3).map((s) => `${kindOf.get(s.id)} ${s.createdAt - s.deadline} ms`).join(", ")}).`
  )
  notes.push(
    `Latency resolution: a poll every ${fmt(spreadWatch.meanPollMs)} ms on average (longest gap ${fmt(Math.max(spreadWatch.maxPollGapMs, burstWatch.maxPollGapMs))} ms); each latency is an upper bound by up to one poll interval.`
  )
  const slowest = [...spreadWatch.seen].sort((a, b) => b.latencyMs - a.latencyMs).slice(0, 3)
  if (slowest.length > 0 && slowest[0]!.latencyMs > LATENCY_TARGET_MS / 2) {
    const origin = Math.min(...spread.planted.map((p) => p.deadline))
    notes.push(
      `Slowest of the spread phase: ${slowest.map((x) => `${x.kind} (${x.schedule}) ${fmt(x.latencyMs)} ms, deadline at +${fmt((x.deadline - origin) / 1000, 1)} s`).join("; ")} (deadlines from +0 s to +${fmt((Math.max(...spread.planted.map((p) => p.deadline)) - origin) / 1000, 1)} s).`
    )
  }
  const troubles = service.stdout().filter((line) => /\b(WARN|ERROR|FATAL)\b/.test(line))
  if (troubles.length > 0) {
    notes.push(`The service logged ${troubles.length} warnings or errors, e.g. ${troubles.slice(0, 3).map((t) => `"${t.slice(0, 200)}"`).join("; ")}.`)
  }
  const busiest = Math.max(background ?? 0, busyBeforeStart ?? 0)
  if (busiest > 0.15) {
    notes.push(
      `Other work on the machine: the cores were ${fmt((background ?? NaN) * 100)} % busy before the run and ${fmt((busyBeforeStart ?? NaN) * 100)} % in the 2 s before the measured start-up; wall times are longer by that much (the service's own CPU time is the steadier figure).`
    )
  }

  // 7. Results.
  const m = machine(pgDescription, dbDescription)
  const rows: Array<readonly [string, string]> = [
    ["monitors (idle fleet + planted)", `${fmt(seed.monitors)} + ${fmt(planted.length)}`],
    ["open runs / active incidents loaded at start-up", `${fmt(seed.openRuns)} (${fmt(seed.learnedLimit)} learned LATE limits) / ${seed.activeIncidents}`],
    ["rebuild, engine log", engine === undefined ? "–" : `${fmt(engine.rebuildMs)} ms (${fmt(engine.actors)} actors)`],
    ["spawn → /healthz 200", `${fmt(service.spawnToHealthyMs)} ms (empty database: ${fmt(first.spawnToHealthyMs)} ms)`],
    ["service CPU time, spawn → healthy", startupCpuUs === undefined ? "–" : `${fmt(startupCpuUs / 1000)} ms`],
    ["idle RSS, median of 5", `${mb(idleRss)} (empty database: ${mb(emptyRss?.rss)})`],
    ["peak RSS (VmHWM)", `${mb(hwm ?? peakAfterStart)}`],
    ["idle CPU", idleCpu === undefined ? "–" : `${fmt(idleCpu * 100, 1)} % of a core`],
    ["MISSED latency p50 / p99 / max", `${fmt(missed.p50)} / ${fmt(missed.p99)} / ${fmt(missed.max)} ms`],
    ["LATE latency p50 / p99 / max", `${fmt(late.p50)} / ${fmt(late.p99)} / ${fmt(late.max)} ms`],
    ["MISSED / LATE incidents (seen of planted)", `${missed.seen} / ${missed.planted}, ${late.seen} / ${late.planted}`],
    ...(burst.planted > 0
      ? [[`burst: ${fmt(burst.planted)} MISSED at one instant, p50 / p99 / max`, `${fmt(burst.p50)} / ${fmt(burst.p99)} / ${fmt(burst.max)} ms (${fmt(burst.seen)} seen)`] as const]
      : []),
    ["RSS after the deadlines", mb(afterRss?.rss)],
    ["seeding (SQL) / planting (API)", `${fmt(seed.ms / 1000, 1)} s / ${fmt(spread.ms / 1000, 1)} s + ${fmt(burstPlant.ms / 1000, 1)} s`],
    ["stop (SIGINT → exit)", `${fmt(stopMs)} ms`]
  ]
  const report: EngineReport = {
    setup: database.setup,
    date: started.toISOString().slice(0, 16).replace("T", " ") + " UTC",
    machine: m,
    rows,
    checks,
    notes
  }
  console.log("")
  console.log(`Incident engine — ${started.toISOString()} — ${m.cores} cores, Node ${m.node}, ${m.postgres} (${database.setup === "url" ? "DATABASE_URL" : "embedded"})`)
  console.log(consoleText(report))
  if (settings.writeDocs) {
    const file = path.join(ROOT, "docs", "performance.md")
    writeEngineDocs(file, report)
    log(`results written to ${path.relative(process.cwd(), file)} ("Incident engine", ${database.setup} block)`)
  }
  if (!countsOk || !actorsOk) return 1
  if (settings.strict && checks.some((c) => !c.pass)) return 1
  return 0
}

await runBench("bench:engine", main)
