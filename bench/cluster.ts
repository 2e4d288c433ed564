/**
 * `npm run bench:cluster`: one instance against three (cluster mode), on this machine.
 *
 * Two fresh databases on the same PostgreSQL server (DATABASE_URL's, or an embedded one): one for a
 * single instance (no CLUSTER_PORT), one for three instances in cluster mode (CLUSTER_PORT, the
 * default lock timers), each with 1,000 monitors (interval 2 min, so no deadline falls due while
 * they are pinged) and a ping token made through its API. One setup runs at a time (connections).
 *
 * 1. CPU per ping: the same fixed rate of success pings (1,000/s, evenly paced, from a load driver
 *    in a process of its own) to one setup, then the other, in alternating rounds, each setup
 *    started afresh for its round; the three instances get the driver's connections in turn (a
 *    third each). CPU from /proc: the service
 *    processes and the PostgreSQL backends serving their database. Judged: the median of the
 *    rounds' ratios cluster / single, target ≤ 1.25. Latency p50/p99 of the pings.
 * 2. Every 200-answered ping's runId has its row (the driver writes them down).
 * 3. No incident on the pinged monitors; and each monitor's lastPingAt (written by its owner, which
 *    hears of pings taken by other instances through NOTIFY) is its latest ping's.
 * 4. Failover: kill -9 of one of the three, five times (each time: time until the survivors hold
 *    every shard per GET /api/cluster; restart it on the same ports; wait until balanced), while
 *    pings keep coming through the live instances.
 * 5. Rebalance: SIGTERM one (time until the other two hold every shard), start a new one, time
 *    until the three are balanced, from its spawn and from its first /healthz 200.
 * 6. Ping news latency: a fail ping to an instance that does not own the monitor, until its FAIL
 *    incident (raised by the owner) is listed by GET /api/incidents on the instance that took it;
 *    the same through the owner, and on the single instance, for comparison.
 *
 * Results: a console summary and, unless BENCH_WRITE_DOCS=0, docs/performance.md ("Several
 * instances (npm run bench:cluster)"), which describes the method.
 */
import { execSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { shardOf, shardOfSql } from "../src/Engine/Shards.js"
import { account, type Accounting } from "./support/accounting.js"
import { installSignalHandlers, onCleanup, runBench } from "./support/children.js"
import { backgroundBusy, machineBusyBetween, parentPid, postgresServerCpuUs, sampleCpu } from "./support/cpu.js"
import { type BenchDatabase, BenchDb, openBenchDatabase } from "./support/database.js"
import { fmt, quantile } from "./support/engine-report.js"
import {
  alive,
  type Instance,
  killHard,
  launchInstance,
  refusedStarts,
  relaunch,
  shardsOf,
  terminate,
  newTroubleLines,
  waitBalanced
} from "./support/instances.js"
import type { DriverResult } from "./support/protocol.js"
import { type Check, replaceDocsBlock } from "./support/report.js"
import { createMonitors, createPingToken, newBootstrapToken, ROOT, runDriver } from "./support/servers.js"
import { env, whole } from "./support/settings.js"

const settings = {
  instances: whole("BENCH_CLUSTER_INSTANCES", 3, 2),
  rate: whole("BENCH_CLUSTER_RATE", 1000),
  connections: whole("BENCH_CLUSTER_CONNECTIONS", 96),
  seconds: whole("BENCH_CLUSTER_SECONDS", 15),
  warmupSeconds: whole("BENCH_CLUSTER_WARMUP_SECONDS", 5),
  rounds: whole("BENCH_CLUSTER_ROUNDS", 3),
  monitors: whole("BENCH_CLUSTER_MONITORS", 1000),
  every: env("BENCH_CLUSTER_INTERVAL", "2m"),
  kills: whole("BENCH_CLUSTER_KILLS", 5, 0),
  joins: whole("BENCH_CLUSTER_JOINS", 2, 0),
  probes: whole("BENCH_CLUSTER_PROBES", 20, 0),
  /** Pings per second through the live instances while they are killed and restarted. */
  failoverRate: whole("BENCH_CLUSTER_FAILOVER_RATE", 100, 0),
  /** Sample what the setup's PostgreSQL backends are running and waiting on during each phase (every 50 ms). */
  sampleQueries: env("BENCH_CLUSTER_SAMPLE_QUERIES", "1") !== "0",
  writeDocs: env("BENCH_WRITE_DOCS", "1") !== "0",
  strict: env("BENCH_STRICT", "0") === "1",
  note: env("BENCH_NOTE", "")
}
if (settings.connections % settings.instances !== 0) {
  throw new Error(`BENCH_CLUSTER_CONNECTIONS (${settings.connections}) must be a multiple of BENCH_CLUSTER_INSTANCES (${settings.instances})`)
}

const CPU_RATIO_TARGET = 1.25
const RATE_DELIVERED = 0.97
/** The cluster tests' bounds (test/Cluster/Cluster.test.ts), with the default timers here. */
const TAKEOVER_TARGET_MS = 10_000
const HANDOVER_TARGET_MS = 5_000
const JOIN_TARGET_MS = 20_000
/** docs/operations.md: the lock timers are the defaults (nothing set in the instances' environment). */
const TIMERS = "CLUSTER_LOCK_REFRESH_MS 1000, CLUSTER_LOCK_EXPIRATION_MS 5000 (the defaults)"

/** A cluster start must end balanced within this (spawn of the first instance to balanced). */
const START_LIMIT_MS = 60_000

const log = (message: string) => console.log(`[bench:cluster] ${message}`)

/** Log lines by message, counted: `ERROR Shard lock storage is unhealthy ×1; WARN No healthy runners available ×6`. */
const summarizeTroubles = (lines: ReadonlyArray<string>): string => {
  const counts = new Map<string, number>()
  for (const line of lines) {
    const m = /\b(WARN|ERROR|FATAL)\b[^:]*:\s*(.*)$/.exec(line)
    const key = m === null ? line.slice(0, 100) : `${m[1]} ${m[2]!.slice(0, 100)}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return [...counts.entries()].map(([k, c]) => `${k} ×${c}`).join("; ")
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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

const cores = (): number => {
  try {
    return Number(execSync("nproc", { stdio: ["ignore", "pipe", "ignore"] }).toString().trim()) || os.availableParallelism()
  } catch {
    return os.availableParallelism()
  }
}

interface Setup {
  readonly key: "single" | "cluster"
  readonly label: string
  readonly database: BenchDatabase
  readonly db: BenchDb
  readonly instances: Array<Instance>
  pingToken: string
  monitorIds: Array<string>
}

interface PhaseCpu {
  /** µs per ping sent. */
  readonly servicesUs: number
  readonly backendsUs: number
  readonly totalUs: number
  /** The whole PostgreSQL server (on a shared server: other databases' sessions too). */
  readonly pgServerUs: number | undefined
  readonly driverUs: number
  readonly commitsPerPing: number
  readonly machineBusy: number | undefined
  /** Cores used meanwhile by everything else (other work on the machine, the idle setup, PostgreSQL's other processes). */
  readonly otherCores: number | undefined
  readonly backends: number
}

interface Phase {
  readonly setup: Setup
  readonly round: number
  readonly result: DriverResult
  readonly cpu: PhaseCpu
  readonly accounting: Accounting
  readonly runIds: number
  readonly missingRunIds: number
  readonly activity: Activity | undefined
}

/** Acknowledged run ids without their row in `runs`. */
const missingRuns = async (db: BenchDb, ids: ReadonlyArray<string>): Promise<number> => {
  let missing = 0
  for (let i = 0; i < ids.length; i += 20_000) {
    const rows = await db.query<{ n: string }>(
      `select count(*) as n from unnest($1::uuid[]) as a(id) where not exists (select 1 from runs r where r.id = a.id)`,
      [ids.slice(i, i + 20_000)]
    )
    missing += Number(rows[0]!.n)
  }
  return missing
}

/** Incidents on these monitors, by type. */
const incidentsOn = async (db: BenchDb, monitorIds: ReadonlyArray<string>): Promise<Record<string, number>> => {
  const rows = await db.query<{ type: string; n: string }>(
    `select type, count(*) as n from incidents where monitor_id = any($1::uuid[]) group by type order by type`,
    [monitorIds]
  )
  return Object.fromEntries(rows.map((r) => [r.type, Number(r.n)]))
}

/**
 * Monitors whose lastPingAt (written by the owner's engine, at most a second after it hears of a
 * ping) is older than their latest run's finish (the ping's arrival): polled until none is, at most
 * `ms`. Answers how many were still behind and how long it took.
 */
const lastPingsHeard = async (db: BenchDb, monitorIds: ReadonlyArray<string>, ms = 10_000) => {
  const started = performance.now()
  for (;;) {
    const rows = await db.query<{ behind: string; pinged: string; lag: string | null }>(
      `select count(*) filter (where m.last_ping_at is null or m.last_ping_at < r.latest - interval '1 millisecond') as behind,
              count(*) as pinged,
              max(extract(epoch from r.latest - m.last_ping_at) * 1000) filter (where m.last_ping_at < r.latest - interval '1 millisecond') as lag
       from monitors m join (select monitor_id, max(finished_at) as latest from runs where monitor_id = any($1::uuid[]) group by monitor_id) r
         on r.monitor_id = m.id`,
      [monitorIds]
    )
    const behind = Number(rows[0]!.behind)
    const pinged = Number(rows[0]!.pinged)
    /** How far the most stale lastPingAt is behind its monitor's latest ping, ms. */
    const lagMs = rows[0]!.lag === null ? 0 : Number(rows[0]!.lag)
    const waited = performance.now() - started
    if (behind === 0 || waited > ms) return { behind, pinged, lagMs, waitedMs: waited }
    await sleep(250)
  }
}

/**
 * Samples the database's other sessions that are active (the setup's backends) every 50 ms until
 * stopped: how many sessions were busy on average, by statement and wait event. Costs one small
 * query on the benchmark's own connection each time (not counted among the setup's backends).
 */
const sampleActivity = (db: BenchDb) => {
  let running = true
  let samples = 0
  const counts = new Map<string, number>()
  const done = (async () => {
    while (running) {
      const rows = await db.query<{ q: string; w: string | null }>(
        `select regexp_replace(left(query, 60), '\\s+', ' ', 'g') as q, wait_event_type || ':' || wait_event as w from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid() and state = 'active'`
      )
      samples++
      for (const r of rows) {
        const key = `${r.q.trim()}${r.w === null ? "" : ` [${r.w}]`}`
        counts.set(key, (counts.get(key) ?? 0) + 1)
      }
      await sleep(50)
    }
  })()
  return {
    stop: async (): Promise<Activity> => {
      running = false
      await done
      const per = (c: number) => c / Math.max(1, samples)
      return {
        samples,
        busy: per([...counts.values()].reduce((a, b) => a + b, 0)),
        lockWaits: per([...counts.entries()].filter(([k]) => k.endsWith("[Lock:object]")).reduce((a, [, c]) => a + c, 0)),
        top: [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([what, c]) => ({ what, sessions: per(c) }))
      }
    }
  }
}

interface Activity {
  readonly samples: number
  /** Active sessions on average. */
  readonly busy: number
  /** Sessions waiting on PostgreSQL's lock of the notification queue (wait event Lock:object), on average. */
  readonly lockWaits: number
  readonly top: ReadonlyArray<{ readonly what: string; readonly sessions: number }>
}

const activityText = (a: Activity) =>
  `${a.busy.toFixed(2)} sessions active on average (${a.samples} samples), ${a.lockWaits.toFixed(2)} waiting on Lock:object; ${a.top.map((t) => `${t.sessions.toFixed(2)} "${t.what}"`).join("; ")}`

const api = async (url: string, token: string, method: string, route: string, body?: unknown) => {
  const response = await fetch(`${url}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000)
  })
  const text = await response.text()
  return { status: response.status, text }
}

/** The steady duration the load driver reports for the monitor at `index` (bench/support/driver.ts). */
const durationOf = (index: number) => Math.round((1000 + ((index * 7919) % 59_000)) * (0.97 + 0.06 * Math.random()))

/**
 * Success pings at `rate` a second from this process, spread over the setup's monitors, through its
 * live instances in turn; a request that fails on a connection error (an instance killed under it)
 * is sent again to the next live instance, as a load balancer retries. Keeps every acknowledged
 * run id.
 */
const backgroundPings = (setup: Setup, rate: number, down: ReadonlySet<string>) => {
  const loops = 8
  let running = true
  let monitor = 0
  let turn = 0
  const acked: Array<string> = []
  const refused: Record<string, number> = {}
  let retried = 0
  let lost = 0
  const loop = async (k: number) => {
    const every = (loops * 1000) / rate
    let due = performance.now() + (k * every) / loops
    while (running) {
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
      due = Math.max(due + every, performance.now() - every)
      const index = monitor++ % setup.monitorIds.length
      const body = { durationMs: durationOf(index), output: "ok background ping" }
      let answered = false
      for (let attempt = 0; attempt < setup.instances.length + 1 && !answered; attempt++) {
        const targets = setup.instances.filter((i) => alive(i) && !down.has(i.name))
        if (targets.length === 0) break
        const target = targets[turn++ % targets.length]!
        try {
          const r = await api(target.url, setup.pingToken, "POST", `/api/ping/${setup.monitorIds[index]}/success`, body)
          answered = true
          if (r.status === 200) acked.push((JSON.parse(r.text) as { runId: string }).runId)
          else refused[String(r.status)] = (refused[String(r.status)] ?? 0) + 1
        } catch {
          retried++
        }
      }
      if (!answered) lost++
    }
  }
  const done = Promise.all(Array.from({ length: loops }, (_, k) => loop(k)))
  return {
    stop: async () => {
      running = false
      await done
      return { acked, refused, retried, lost }
    }
  }
}

const main = async (): Promise<number> => {
  installSignalHandlers()
  const started = new Date()
  const n = settings.instances
  log(
    `${settings.rate} pings/s over ${settings.connections} connections, ${settings.rounds} rounds of ${settings.seconds} s per setup after a ${settings.warmupSeconds} s warm-up; one instance against ${n}; ${settings.monitors} monitors (every ${settings.every}); ${TIMERS}`
  )
  const background = await backgroundBusy(2000)
  if (background !== undefined) log(`before starting anything, the cores were ${(background * 100).toFixed(0)} % busy with other work`)

  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-bench-cluster-"))
  // Kept when the run fails or an instance logged a warning.
  let keepLogs = true
  onCleanup(async () => {
    if (!keepLogs) fs.rmSync(logDir, { recursive: true, force: true })
    else console.log(`[bench:cluster] the instances' logs: ${logDir}`)
  })
  const adminToken = newBootstrapToken()

  const open = async (key: Setup["key"], label: string): Promise<Setup> => {
    const database = await openBenchDatabase(`jobmon_bench_${key}`)
    const db = await BenchDb.connect(database.url)
    onCleanup(() => db.close())
    return { key, label, database, db, instances: [], pingToken: "", monitorIds: [] }
  }
  const single = await open("single", "one instance")
  const cluster = await open("cluster", `${n} instances`)
  log(`databases: ${single.database.describe}; ${cluster.database.describe}`)
  const facts = await single.db.serverFacts()
  const pgDescription = `PostgreSQL ${facts.version}${facts.timescaledb === undefined ? "" : ` + TimescaleDB ${facts.timescaledb}`}`
  const dbDescription = `runs ${facts.runsIsHypertable ? "is a hypertable" : "is a plain table"}, synchronous_commit=${facts.synchronousCommit}`

  // Each instance's pool grows to 20 connections under the load, and a cluster instance holds its
  // LISTEN and lock connections besides: the server must have room for them (one setup at a time).
  const connections = (await single.db.query<{ max: string; used: string }>(
    `select current_setting('max_connections') as max, (select count(*) from pg_stat_activity where backend_type = 'client backend') as used`
  ))[0]!
  const connectionsNeeded = 23 * n + 5
  const connectionsFree = Number(connections.max) - Number(connections.used)
  const connectionsNote = `PostgreSQL max_connections ${connections.max}, ${connections.used} client connections in use before the run (the ${n} instances take up to about ${connectionsNeeded})`
  log(connectionsNote)
  if (connectionsFree < connectionsNeeded) log(`warning: fewer than ${connectionsNeeded} connections free: instances may be refused ("too many clients already")`)

  const launch = (setup: Setup, name: string, clustered: boolean) =>
    launchInstance({
      name,
      databaseUrl: setup.database.url,
      bootstrapToken: adminToken,
      logFile: path.join(logDir, `${setup.key}-${name}.log`),
      cluster: clustered ? "free" : undefined
    })
  const names = "ABCDEFGH"

  /**
   * One setup's instances run at a time: each instance's pool grows to 20 connections under the load
   * (and the cluster's instances hold their LISTEN and lock connections besides), and the
   * PostgreSQL server may be shared. Starting a setup: its instances (the cluster's all at once),
   * until each answers /healthz and, in cluster mode, they share the shards.
   */
  /**
   * Starts that did not end balanced within START_LIMIT_MS: which instance held how many shards
   * (by its own GET /api/cluster) and what the instances logged. The setup is stopped and started
   * again (at most twice).
   */
  const unbalancedStarts: Array<string> = []
  let clusterStarts = 0
  const startSetup = async (setup: Setup): Promise<number> => {
    for (let attempt = 1; ; attempt++) {
      const t0 = performance.now()
      if (setup.key === "single") {
        setup.instances.splice(0, setup.instances.length, await launch(setup, "S", false))
        return performance.now() - t0
      }
      // One after the other, each once the previous answers /healthz: on a fresh database three
      // starting together can fail (two create the same table of @effect/cluster's storage at once:
      // "duplicate key value violates unique constraint pg_type_typname_nsp_index"), and on two busy
      // cores three start-ups at once delay each other's first lock refreshes.
      setup.instances.splice(0, setup.instances.length)
      for (let i = 0; i < n; i++) setup.instances.push(await launch(setup, names[i]!, true))
      clusterStarts++
      try {
        await waitBalanced(setup.instances, adminToken, { timeoutMs: START_LIMIT_MS })
        return performance.now() - t0
      } catch (error) {
        await stopSetup(setup)
        const logged = summarizeTroubles(troubles.slice(troublesReported))
        troublesReported = troubles.length
        const what = `${(error as Error).message}; the instances logged: ${logged === "" ? "nothing at warn or above" : logged}`
        unbalancedStarts.push(what)
        log(`start ${clusterStarts} of the cluster: ${what}`)
        if (attempt >= 3) throw error
        log("stopping it and starting it again")
      }
    }
  }
  let troublesReported = 0
  const stopSetup = async (setup: Setup) => {
    await Promise.all(setup.instances.map((i) => terminate(i)))
    troubles.push(...setup.instances.flatMap((i) => troubleLines(i).map((line) => `${i.name}: ${line}`)))
  }
  const troubles: Array<string> = []
  const seenLogBytes = new Map<string, number>()
  const troubleLines = (instance: Instance) => {
    const from = seenLogBytes.get(instance.logFile) ?? 0
    seenLogBytes.set(instance.logFile, fs.existsSync(instance.logFile) ? fs.statSync(instance.logFile).size : 0)
    return newTroubleLines(instance, from)
  }
  const startTimes: Record<Setup["key"], Array<number>> = { single: [], cluster: [] }

  // Set-up: each setup's instances (the first start creates the schema), token and monitors.
  const setupStart = performance.now()
  for (const setup of [single, cluster]) {
    startTimes[setup.key].push(await startSetup(setup))
    const view = await shardsOf(setup.instances[0]!, adminToken)
    if (view.clustered !== (setup.key === "cluster")) throw new Error(`${setup.label}: GET /api/cluster says clustered ${view.clustered}`)
    const url = setup.instances[0]!.url
    setup.pingToken = await createPingToken(url, adminToken)
    setup.monitorIds = await createMonitors(url, adminToken, settings.monitors, settings.every)
    await stopSetup(setup)
  }
  log(`set-up (instances started, tokens and ${fmt(settings.monitors)} monitors each) done in ${fmt((performance.now() - setupStart) / 1000, 1)} s`)

  const runIdsDir = path.join(logDir, "run-ids")
  fs.mkdirSync(runIdsDir)
  const phases: Array<Phase> = []
  let driverRuns = 0

  /** One driver run against a setup, with the CPU each process spent and the acknowledged pings checked. */
  const measure = async (setup: Setup, round: number, seconds: number): Promise<Phase> => {
    const label = round < 0 ? `${setup.label}, warm-up ${-round}` : `${setup.label}, round ${round}`
    const pids = setup.instances.map((i) => i.child.process.pid!)
    const before = await setup.db.settledRunCounts()
    const commitsBefore = await setup.db.commits()
    const backendsBefore = await setup.db.backendPids()
    const postmaster = backendsBefore.length > 0 ? parentPid(backendsBefore[0]!) : undefined
    const pgBefore = postmaster === undefined ? undefined : postgresServerCpuUs(postmaster)
    const cpuBefore = sampleCpu([...pids, ...backendsBefore])
    const runIdsFile = path.join(runIdsDir, `${driverRuns++}.txt`)
    const sampler = settings.sampleQueries ? sampleActivity(setup.db) : undefined
    const result = await runDriver({
      title: label,
      url: setup.instances[0]!.url,
      urls: setup.instances.map((i) => i.url),
      token: setup.pingToken,
      monitorIds: setup.monitorIds,
      mode: "success",
      connections: settings.connections,
      seconds,
      rate: { perSecond: settings.rate, pacing: "even" },
      runIdsFile
    })
    const activity = sampler === undefined ? undefined : await sampler.stop()
    const backendsAfter = await setup.db.backendPids()
    const cpuAfter = sampleCpu([...pids, ...new Set([...backendsBefore, ...backendsAfter])])
    const pgAfter = postmaster === undefined ? undefined : postgresServerCpuUs(postmaster)
    const commitsAfter = await setup.db.commits()
    const after = await setup.db.settledRunCounts()
    const spent = (pid: number) => {
      const b = cpuBefore.processes.get(pid)
      const a = cpuAfter.processes.get(pid)
      // A backend that connected during the phase spent all of its CPU in it.
      return a === undefined ? 0 : a - (b ?? 0)
    }
    const sum = (xs: Iterable<number>) => [...xs].reduce((s, pid) => s + spent(pid), 0)
    const servicesUs = sum(pids)
    const backendsUs = sum(new Set([...backendsBefore, ...backendsAfter]))
    const pgServerUs = pgBefore === undefined || pgAfter === undefined ? undefined : pgAfter.total - pgBefore.total
    const wallUs = (cpuAfter.at - cpuBefore.at) * 1000
    const machineUs = cpuBefore.machine === undefined || cpuAfter.machine === undefined ? undefined : cpuAfter.machine.busy - cpuBefore.machine.busy
    const sent = Math.max(1, result.sent)
    const cpu: PhaseCpu = {
      servicesUs: servicesUs / sent,
      backendsUs: backendsUs / sent,
      totalUs: (servicesUs + backendsUs) / sent,
      pgServerUs: pgServerUs === undefined ? undefined : pgServerUs / sent,
      driverUs: result.driverCpuUs / sent,
      commitsPerPing: (commitsAfter - commitsBefore) / sent,
      machineBusy: machineBusyBetween(cpuBefore, cpuAfter),
      otherCores: machineUs === undefined || wallUs <= 0
        ? undefined
        : Math.max(0, machineUs - servicesUs - Math.max(backendsUs, pgServerUs ?? 0) - result.driverCpuUs) / wallUs,
      backends: new Set([...backendsBefore, ...backendsAfter]).size
    }
    const ids = fs.readFileSync(runIdsFile, "utf8").split("\n").filter((l) => l.length === 36)
    const missingRunIds = await missingRuns(setup.db, ids)
    const accounting = account(result, before, after)
    const phase: Phase = { setup, round, result, cpu, accounting, runIds: ids.length, missingRunIds, activity }
    const steady = result.latencyAfterFirstSecond.count === 0 ? result.latency : result.latencyAfterFirstSecond
    const non2xx = result.non2xx === 0 ? "" : `, non-2xx ${JSON.stringify(result.statusCodes)}`
    const errors = result.errors === 0 ? "" : `, ${result.errors} connection errors`
    log(
      `${label}: ${result.rps} pings/s, p50 ${steady.p50} ms, p99 ${steady.p99} ms${non2xx}${errors}; CPU µs/ping: services ${fmt(cpu.servicesUs)}, PostgreSQL backends ${fmt(cpu.backendsUs)} (${cpu.backends}), total ${fmt(cpu.totalUs)}, whole PostgreSQL server ${fmt(cpu.pgServerUs)} ; ${fmt(cpu.commitsPerPing, 3)} commits/ping; cores busy ${fmt((cpu.machineBusy ?? NaN) * 100)} %, other ${fmt(cpu.otherCores, 2)}; ${ids.length} run ids acknowledged, ${missingRunIds} without a row; ${accounting.newRuns} rows`
    )
    if (activity !== undefined) log(`${label}, the backends: ${activityText(activity)}`)
    return phase
  }

  // 6. Ping news latency: fail pings, until the FAIL incident is listed by the instance that took the ping.
  const newsLatency = async (setup: Setup, count: number, via: "other" | "owner") => {
    if (count === 0) return []
    const ids = await createMonitors(setup.instances[0]!.url, adminToken, count, "1h")
    const views = await Promise.all(setup.instances.map(async (i) => ({ instance: i, view: await shardsOf(i, adminToken) })))
    const latencies: Array<number> = []
    for (const [k, id] of ids.entries()) {
      const owner = setup.key === "single" ? setup.instances[0]! : views.find((v) => v.view.shards.includes(shardOf(id)))?.instance
      if (owner === undefined) throw new Error(`no instance owns the shard of ${id}`)
      const others = setup.instances.filter((i) => i !== owner)
      const receiver = via === "owner" || others.length === 0 ? owner : others[k % others.length]!
      const ping = await api(receiver.url, setup.pingToken, "POST", `/api/ping/${id}/fail`, { exitCode: 1, output: "bench: news probe" })
      const acked = performance.now()
      if (ping.status !== 200) throw new Error(`the probe's fail ping answered ${ping.status}: ${ping.text}`)
      for (;;) {
        const r = await api(receiver.url, adminToken, "GET", `/api/incidents?monitorId=${id}&limit=1`)
        if (r.status === 200 && (JSON.parse(r.text) as { incidents: Array<unknown> }).incidents.length > 0) break
        if (performance.now() - acked > 15_000) throw new Error(`no FAIL incident for probe ${id} within 15 s`)
        await sleep(5)
      }
      latencies.push(performance.now() - acked)
      await sleep(20)
    }
    return latencies
  }
  const stats = (xs: ReadonlyArray<number>) => {
    const s = [...xs].sort((a, b) => a - b)
    return { n: s.length, p50: quantile(s, 0.5), p90: quantile(s, 0.9), max: s[s.length - 1] ?? NaN }
  }

  // 1. Rounds, the order reversed every other round: start the setup, warm it up, measure, stop it.
  // After a setup's last round, before it stops: 3. its owners heard every latest ping, its
  // incidents; 6. its news latency. The cluster stays up for the kills and joins.
  const heard: Partial<Record<Setup["key"], Awaited<ReturnType<typeof lastPingsHeard>>>> = {}
  const incidentsAfterLoad: Partial<Record<Setup["key"], Record<string, number>>> = {}
  const news: Record<"other" | "owner" | "single", Array<number>> = { other: [], owner: [], single: [] }
  for (let round = 1; round <= settings.rounds; round++) {
    const order = round % 2 === 1 ? [single, cluster] : [cluster, single]
    for (const setup of order) {
      const startMs = await startSetup(setup)
      startTimes[setup.key].push(startMs)
      phases.push(await measure(setup, -round, settings.warmupSeconds))
      phases.push(await measure(setup, round, settings.seconds))
      if (round < settings.rounds) {
        await stopSetup(setup)
        continue
      }
      heard[setup.key] = await lastPingsHeard(setup.db, setup.monitorIds)
      incidentsAfterLoad[setup.key] = await incidentsOn(setup.db, setup.monitorIds)
      log(`${setup.label}: lastPingAt behind the latest ping after the load on ${heard[setup.key]!.behind} of ${heard[setup.key]!.pinged} monitors; incidents ${JSON.stringify(incidentsAfterLoad[setup.key])}`)
      if (setup.key === "single") {
        news.single = await newsLatency(setup, settings.probes, "owner")
        await stopSetup(setup)
      } else {
        news.other = await newsLatency(setup, settings.probes, "other")
        news.owner = await newsLatency(setup, settings.probes, "owner")
      }
    }
  }
  const measured = phases.filter((p) => p.round > 0)
  const of = (setup: Setup) => measured.filter((p) => p.setup === setup)
  const roundRatios = Array.from({ length: settings.rounds }, (_, k) => {
    const s = of(single)[k]!
    const c = of(cluster)[k]!
    return c.cpu.totalUs / s.cpu.totalUs
  })
  const sortedRatios = [...roundRatios].sort((a, b) => a - b)
  const cpuRatio = quantile(sortedRatios, 0.5)
  const mid = (setup: Setup, pick: (p: Phase) => number | undefined) => {
    const xs = of(setup).map(pick).filter((x): x is number => x !== undefined).sort((a, b) => a - b)
    return xs.length === 0 ? undefined : quantile(xs, 0.5)
  }
  const steadyOf = (p: Phase) => (p.result.latencyAfterFirstSecond.count === 0 ? p.result.latency : p.result.latencyAfterFirstSecond)
  log(`CPU per ping, ${cluster.label} / ${single.label}: rounds ${roundRatios.map((r) => r.toFixed(2)).join(", ")}; median ${cpuRatio.toFixed(2)}`)
  const newsStats = { other: stats(news.other), owner: stats(news.owner), single: stats(news.single) }
  if (settings.probes > 0) {
    log(
      `fail ping → its FAIL incident listed: through another instance than the owner p50 ${fmt(newsStats.other.p50)} ms, max ${fmt(newsStats.other.max)} ms; through the owner p50 ${fmt(newsStats.owner.p50)} ms; one instance p50 ${fmt(newsStats.single.p50)} ms`
    )
  }

  // 4. and 5.: failovers and joins, while pings keep coming through the live instances.
  const down = new Set<string>()
  const pinger = settings.failoverRate > 0 ? backgroundPings(cluster, settings.failoverRate, down) : undefined
  const launchOptions = { databaseUrl: cluster.database.url, bootstrapToken: adminToken }
  interface Kill {
    readonly victim: string
    readonly shards: number
    readonly takeoverMs: number
    readonly restartHealthyMs: number
    readonly rejoinMs: number
  }
  const kills: Array<Kill> = []
  for (let k = 0; k < settings.kills; k++) {
    await sleep(1000)
    const index = k % n
    const victim = cluster.instances[index]!
    const victimShards = (await shardsOf(victim, adminToken)).shards.length
    down.add(victim.name)
    const killedAt = performance.now()
    await killHard(victim)
    const survivors = cluster.instances.filter((i) => i !== victim)
    const takeover = await waitBalanced(survivors, adminToken, { timeoutMs: 60_000 })
    const revived = await relaunch(victim, launchOptions)
    cluster.instances[index] = revived
    down.delete(victim.name)
    const rejoined = await waitBalanced(cluster.instances, adminToken, { timeoutMs: 60_000 })
    const kill: Kill = {
      victim: victim.name,
      shards: victimShards,
      takeoverMs: takeover.at - killedAt,
      restartHealthyMs: revived.healthyAt - revived.spawnedAt,
      rejoinMs: rejoined.at - revived.healthyAt
    }
    kills.push(kill)
    log(
      `kill -9 of ${kill.victim} (${kill.shards} shards): the survivors held every shard ${fmt(kill.takeoverMs)} ms later; restarted, healthy in ${fmt(kill.restartHealthyMs)} ms, balanced ${fmt(kill.rejoinMs)} ms after that`
    )
  }
  interface Join {
    readonly handoverMs: number
    readonly spawnHealthyMs: number
    readonly fromSpawnMs: number
    readonly fromHealthyMs: number
    readonly shards: Array<number>
  }
  const joins: Array<Join> = []
  for (let j = 0; j < settings.joins; j++) {
    await sleep(1000)
    const index = n - 1
    const leaving = cluster.instances[index]!
    down.add(leaving.name)
    const stoppedAt = performance.now()
    await terminate(leaving)
    const rest = cluster.instances.filter((i) => i !== leaving)
    const handover = await waitBalanced(rest, adminToken, { timeoutMs: 60_000 })
    await sleep(1000)
    // A new instance: new ports, a new member.
    const name = `${names[index]}${j + 2}`
    const joined = await launch(cluster, name, true)
    cluster.instances[index] = joined
    const balanced = await waitBalanced(cluster.instances, adminToken, { timeoutMs: 60_000 })
    const join: Join = {
      handoverMs: handover.at - stoppedAt,
      spawnHealthyMs: joined.healthyAt - joined.spawnedAt,
      fromSpawnMs: balanced.at - joined.spawnedAt,
      fromHealthyMs: balanced.at - joined.healthyAt,
      shards: balanced.shards.map((s) => s.length)
    }
    joins.push(join)
    log(
      `SIGTERM of ${leaving.name}: the other ${n - 1} held every shard ${fmt(join.handoverMs)} ms later; a new instance ${name}: healthy ${fmt(join.spawnHealthyMs)} ms after its spawn, balanced ${fmt(join.fromSpawnMs)} ms after its spawn (${fmt(join.fromHealthyMs)} ms after /healthz; shards ${join.shards.join("/")})`
    )
  }
  await sleep(2000)
  const failoverPings = pinger === undefined ? undefined : await pinger.stop()
  const failoverMissing = failoverPings === undefined ? 0 : await missingRuns(cluster.db, failoverPings.acked)
  if (failoverPings !== undefined) {
    log(
      `pings during the failovers: ${failoverPings.acked.length} acknowledged (${failoverMissing} without a row), ${failoverPings.retried} sent again after a connection error, refused ${JSON.stringify(failoverPings.refused)}, ${failoverPings.lost} never answered`
    )
  }
  const heardAtEnd = await lastPingsHeard(cluster.db, cluster.monitorIds)
  // Every monitor should have its actor on exactly one instance (GET /api/cluster: instance.monitors).
  const actorsAtEnd = (await Promise.all(cluster.instances.map((i) => shardsOf(i, adminToken)))).reduce((sum, v) => sum + v.monitors, 0)
  const monitorsAtEnd = Number((await cluster.db.query<{ n: string }>(`select count(*) as n from monitors`))[0]!.n)
  const staleAtEnd = heardAtEnd.behind === 0 ? [] : await cluster.db.query<{ id: string; shard: number; lag: string; pings: string }>(
    `select m.id, ${shardOfSql("m.id")} as shard, round(extract(epoch from r.latest - m.last_ping_at) * 1000) as lag, r.pings
     from monitors m join (select monitor_id, max(finished_at) as latest, count(*) as pings from runs where monitor_id = any($1::uuid[]) group by monitor_id) r
       on r.monitor_id = m.id
     where m.last_ping_at < r.latest - interval '1 millisecond' order by 3 desc limit 10`,
    [cluster.monitorIds]
  )
  log(`at the end: actors on the ${n} instances ${actorsAtEnd} for ${monitorsAtEnd} monitors; lastPingAt behind on ${heardAtEnd.behind} monitors${staleAtEnd.length === 0 ? "" : `, e.g. ${staleAtEnd.map((r) => `${r.id} (shard ${r.shard}, ${r.lag} ms behind)`).join(", ")}`}`)
  const clusterIncidents = await incidentsOn(cluster.db, cluster.monitorIds)
  // Stop every instance (the killed ones' logs are in the same files as their restarts').
  await stopSetup(cluster)

  // The checks.
  const checks: Array<Check> = []
  const offered = settings.rate
  const deliveredOk = measured.every((p) => p.result.rps >= RATE_DELIVERED * offered && p.result.non2xx === 0 && p.result.errors === 0)
  checks.push({
    name: `CPU per ping, ${cluster.label} / ${single.label} ≤ ${CPU_RATIO_TARGET}`,
    pass: cpuRatio <= CPU_RATIO_TARGET,
    detail: `median of ${settings.rounds} rounds ${cpuRatio.toFixed(2)} (rounds: ${roundRatios.map((r) => r.toFixed(2)).join(", ")}); service processes + the PostgreSQL backends of their database: ${fmt(mid(cluster, (p) => p.cpu.totalUs))} against ${fmt(mid(single, (p) => p.cpu.totalUs))} µs per ping (medians)`
  })
  checks.push({
    name: `both setups took the offered ${fmt(offered)} pings/s (≥ ${RATE_DELIVERED * 100} %), every answer 200`,
    pass: deliveredOk,
    detail: measured.map((p) => `${p.setup.key} ${p.round}: ${fmt(p.result.rps)}/s${p.result.non2xx === 0 ? "" : `, ${p.result.non2xx} non-2xx`}${p.result.errors === 0 ? "" : `, ${p.result.errors} errors`}`).join("; ")
  })
  const acked = phases.reduce((s, p) => s + p.runIds, 0) + (failoverPings?.acked.length ?? 0)
  const missing = phases.reduce((s, p) => s + p.missingRunIds, 0) + failoverMissing
  const countMismatch = phases.reduce((s, p) => s + p.accounting.missing + p.accounting.unexplained, 0)
  checks.push({
    name: "zero acknowledged pings lost",
    pass: missing === 0 && countMismatch === 0,
    detail: `${missing} of ${fmt(acked)} run ids answered with 200 have no row (all phases and warm-ups${failoverPings === undefined ? "" : `, and the ${fmt(failoverPings.acked.length)} pings acknowledged during the kills and joins`}); each phase's new rows ${countMismatch === 0 ? "equal" : "differ from"} its acknowledged pings`
  })
  const incidentTotal = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0)
  const describeIncidents = (r: Record<string, number>) => (incidentTotal(r) === 0 ? "none" : Object.entries(r).map(([t, c]) => `${t} ${c}`).join(", "))
  checks.push({
    name: "no false incidents",
    pass: incidentTotal(incidentsAfterLoad.single ?? {}) === 0 && incidentTotal(clusterIncidents) === 0,
    detail: `on the ${fmt(settings.monitors)} pinged monitors (every ${settings.every}), after the load: ${single.label} ${describeIncidents(incidentsAfterLoad.single ?? {})}, ${cluster.label} ${describeIncidents(incidentsAfterLoad.cluster ?? {})}; ${cluster.label} after the kills and the joins too: ${describeIncidents(clusterIncidents)}`
  })
  checks.push({
    name: "each monitor's owner heard its latest ping",
    pass: heard.single?.behind === 0 && heard.cluster?.behind === 0 && heardAtEnd.behind === 0,
    detail: `monitors whose lastPingAt is older than their latest acknowledged ping: ${single.label} ${heard.single?.behind} of ${fmt(heard.single?.pinged)}; ${cluster.label} ${heard.cluster?.behind} of ${fmt(heard.cluster?.pinged)} after the load (settled in ${fmt(heard.cluster?.waitedMs)} ms) and ${heardAtEnd.behind} of ${fmt(heardAtEnd.pinged)} after the kills and joins${heardAtEnd.behind === 0 ? "" : ` (still ${fmt(heardAtEnd.waitedMs / 1000, 0)} s after the last ping; the most stale ${fmt(heardAtEnd.lagMs)} ms behind its latest ping)`}`
  })
  checks.push({
    name: `every start of the ${n} instances ended balanced within ${START_LIMIT_MS / 1000} s`,
    pass: unbalancedStarts.length === 0,
    detail: unbalancedStarts.length === 0
      ? `${clusterStarts} starts (one instance after the other), each time every shard held once between them`
      : `${unbalancedStarts.length} of ${clusterStarts} starts did not (each then stopped and started again): ${unbalancedStarts.join(" | ")}`
  })
  checks.push({
    name: "every monitor has its actor on one instance",
    pass: actorsAtEnd === monitorsAtEnd,
    detail: `after the kills and joins, the ${n} instances' GET /api/cluster count ${fmt(actorsAtEnd)} actors for ${fmt(monitorsAtEnd)} monitors (the pinged ones and the news probes)`
  })
  const takeovers = kills.map((k) => k.takeoverMs).sort((a, b) => a - b)
  if (kills.length > 0) {
    checks.push({
      name: `failover after kill -9 ≤ ${TAKEOVER_TARGET_MS / 1000} s`,
      pass: takeovers[takeovers.length - 1]! <= TAKEOVER_TARGET_MS,
      detail: `${kills.length} kills: median ${fmt(quantile(takeovers, 0.5))} ms, worst ${fmt(takeovers[takeovers.length - 1])} ms (${TIMERS})`
    })
  }
  if (joins.length > 0) {
    checks.push({
      name: `a new instance balanced ≤ ${JOIN_TARGET_MS / 1000} s after its spawn; SIGTERM handover ≤ ${HANDOVER_TARGET_MS / 1000} s`,
      pass: joins.every((j) => j.fromSpawnMs <= JOIN_TARGET_MS && j.handoverMs <= HANDOVER_TARGET_MS),
      detail: joins.map((j) => `from spawn ${fmt(j.fromSpawnMs)} ms (from /healthz ${fmt(j.fromHealthyMs)} ms), handover ${fmt(j.handoverMs)} ms`).join("; ")
    })
  }

  // The report.
  const date = `${started.toISOString().slice(0, 16).replace("T", " ")} UTC`
  const machineLine = `${cores()} cores (${os.cpus()[0]?.model.trim() ?? "unknown CPU"}), ${Math.round(os.totalmem() / 2 ** 30)} GB · Node ${process.version} · ${os.type()} ${os.release()} · ${pgDescription} (${single.database.setup === "url" ? "DATABASE_URL" : "embedded"}), ${dbDescription}`
  const ms = (x: number | undefined) => `${fmt(x)} ms`
  const ratio = (c: number | undefined, s: number | undefined) => (c === undefined || s === undefined || s === 0 ? "–" : (c / s).toFixed(2))
  const cmp = (name: string, pick: (p: Phase) => number | undefined, digits = 0) => {
    const s = mid(single, pick)
    const c = mid(cluster, pick)
    return [name, fmt(s, digits), fmt(c, digits), ratio(c, s)]
  }
  const summary: Array<Array<string>> = [
    ["", single.label, cluster.label, `${cluster.key} / single`],
    cmp("**CPU µs per ping** (services + their PostgreSQL backends)", (p) => p.cpu.totalUs),
    cmp("service processes, µs per ping", (p) => p.cpu.servicesUs),
    cmp("PostgreSQL backends of their database, µs per ping", (p) => p.cpu.backendsUs),
    cmp("whole PostgreSQL server, µs per ping", (p) => p.cpu.pgServerUs),
    cmp("commits per ping", (p) => p.cpu.commitsPerPing, 3),
    cmp("pings/s taken (offered " + fmt(offered) + ")", (p) => p.result.rps),
    cmp("latency p50, ms", (p) => steadyOf(p).p50, 1),
    cmp("latency p99, ms", (p) => steadyOf(p).p99, 1),
    cmp("PostgreSQL backends", (p) => p.cpu.backends),
    ...(settings.sampleQueries
      ? [
        cmp("PostgreSQL sessions active, on average", (p) => p.activity?.busy, 2),
        cmp("… of them waiting on Lock:object (the NOTIFY queue's lock)", (p) => p.activity?.lockWaits, 2)
      ]
      : []),
    (() => {
      const med = (xs: ReadonlyArray<number>) => quantile([...xs].sort((a, b) => a - b), 0.5)
      const sm = med(startTimes.single)
      const cm = med(startTimes.cluster)
      return [`start: spawn → healthy (${n} instances: one after the other, until balanced), ms, median`, fmt(sm), fmt(cm), ratio(cm, sm)]
    })()
  ]
  const roundsTable: Array<Array<string>> = [
    ["phase", "pings/s", "p50 ms", "p99 ms", "services µs/ping", "backends µs/ping", "total µs/ping", "PostgreSQL server µs/ping", "commits/ping", "cores busy", "other work (cores)", "acked / missing"],
    ...phases.map((p) => [
      p.round < 0 ? `${p.setup.label}, warm-up ${-p.round}` : `${p.setup.label}, round ${p.round}`,
      fmt(p.result.rps),
      fmt(steadyOf(p).p50, 1),
      fmt(steadyOf(p).p99, 1),
      fmt(p.cpu.servicesUs),
      fmt(p.cpu.backendsUs),
      fmt(p.cpu.totalUs),
      fmt(p.cpu.pgServerUs),
      fmt(p.cpu.commitsPerPing, 3),
      `${fmt((p.cpu.machineBusy ?? NaN) * 100)} %`,
      fmt(p.cpu.otherCores, 2),
      `${fmt(p.runIds)} / ${p.missingRunIds}`
    ])
  ]
  const failoverRows: Array<Array<string>> = [["", "median", "worst", "each"]]
  const spread = (xs: ReadonlyArray<number>) => {
    const s = [...xs].sort((a, b) => a - b)
    return [ms(quantile(s, 0.5)), ms(s[s.length - 1]), xs.map((x) => fmt(x)).join(", ")]
  }
  if (kills.length > 0) {
    failoverRows.push(
      ["**kill -9 → the survivors hold every shard**", ...spread(kills.map((k) => k.takeoverMs))],
      ["restart (same ports) → /healthz 200", ...spread(kills.map((k) => k.restartHealthyMs))],
      ["its /healthz 200 → balanced again", ...spread(kills.map((k) => k.rejoinMs))]
    )
  }
  if (joins.length > 0) {
    failoverRows.push(
      ["SIGTERM → the other two hold every shard", ...spread(joins.map((j) => j.handoverMs))],
      ["**new instance: spawn → balanced**", ...spread(joins.map((j) => j.fromSpawnMs))],
      ["new instance: /healthz 200 → balanced", ...spread(joins.map((j) => j.fromHealthyMs))],
      ["new instance: spawn → /healthz 200", ...spread(joins.map((j) => j.spawnHealthyMs))]
    )
  }
  const newsRows: Array<Array<string>> = settings.probes === 0
    ? []
    : [
      ["fail ping answered 200 → its FAIL incident listed", "probes", "p50", "p90", "max"],
      ["through an instance that does not own the monitor", String(newsStats.other.n), ms(newsStats.other.p50), ms(newsStats.other.p90), ms(newsStats.other.max)],
      ["through the monitor's owner", String(newsStats.owner.n), ms(newsStats.owner.p50), ms(newsStats.owner.p90), ms(newsStats.owner.max)],
      ["one instance", String(newsStats.single.n), ms(newsStats.single.p50), ms(newsStats.single.p90), ms(newsStats.single.max)]
    ]

  const activityLines = settings.sampleQueries
    ? [single, cluster].map((setup) => {
      const last = of(setup).at(-1)
      return last?.activity === undefined ? "" : `${setup.label}, round ${last.round}: ${activityText(last.activity)}`
    }).filter((line) => line !== "")
    : []
  const notes: Array<string> = []
  notes.push(`Machine: ${machineLine}.`)
  const busiestPhase = Math.max(...measured.map((p) => p.cpu.otherCores ?? 0))
  notes.push(
    `Other work on the machine: the cores were ${fmt((background ?? NaN) * 100)} % busy before the run; during the measured phases other processes (other helpers' tests and builds; on a shared PostgreSQL server its other sessions) used ${fmt(Math.min(...measured.map((p) => p.cpu.otherCores ?? 0)), 2)}–${fmt(busiestPhase, 2)} cores ("other work" above). Rates and latencies move with that; CPU per ping much less.`
  )
  notes.push(
    `${connectionsNote}.${refusedStarts.length === 0 ? "" : ` ${refusedStarts.length} starts of an instance were refused by PostgreSQL for want of connections ("too many clients already": ${refusedStarts.join(", ")}) and tried again 2 s later.`}`
  )
  if (single.database.setup === "url") {
    notes.push(
      "The PostgreSQL server is shared: its whole-server CPU includes other databases' sessions, so the judged figure counts the backends serving each setup's own database (its service's pool, LISTEN and lock connections, autovacuum of that database)."
    )
  }
  if (failoverPings !== undefined) {
    notes.push(
      `During the kills and joins, ${settings.failoverRate} success pings a second went to the live instances in turn from the benchmark (a request failing on a connection error was sent to the next live instance, as a load balancer retries): ${fmt(failoverPings.acked.length)} acknowledged, ${failoverMissing} of them without a row, ${failoverPings.retried} sent again, ${failoverPings.lost} never answered${Object.keys(failoverPings.refused).length === 0 ? "" : `, refused ${JSON.stringify(failoverPings.refused)}`}.`
    )
  }
  keepLogs = troubles.length > 0
  if (troubles.length > 0) {
    notes.push(
      `The instances logged (LOG_LEVEL=warn; the kills and stops included): ${summarizeTroubles(troubles)}.`
    )
  }
  if (settings.note !== "") notes.push(settings.note)

  const textTable = (rows: ReadonlyArray<ReadonlyArray<string>>) => {
    const plain = rows.map((r) => r.map((c) => c.replace(/\*\*/g, "")))
    const widths = plain[0]!.map((_, i) => Math.max(...plain.map((r) => (r[i] ?? "").length)))
    return plain.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n")
  }
  const mdTable = (rows: ReadonlyArray<ReadonlyArray<string>>) =>
    [`| ${rows[0]!.join(" | ")} |`, `|${rows[0]!.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`, ...rows.slice(1).map((r) => `| ${r.join(" | ")} |`)].join("\n")
  const settingsLine = `${fmt(offered)} success pings/s evenly paced over ${settings.connections} connections (with ${n} instances, ${settings.connections / n} to each) for ${settings.seconds} s per phase after a ${settings.warmupSeconds} s warm-up, ${settings.rounds} rounds in alternating order, ${fmt(settings.monitors)} monitors every ${settings.every}; ${settings.kills} kills, ${settings.joins} joins, ${settings.probes} news probes of each kind; ${TIMERS}`

  console.log("")
  console.log(`Several instances — ${started.toISOString()} — ${codeVersion()}`)
  console.log(textTable(summary))
  console.log("")
  console.log(textTable(roundsTable))
  if (failoverRows.length > 1) console.log(`\n${textTable(failoverRows)}`)
  if (newsRows.length > 0) console.log(`\n${textTable(newsRows)}`)
  console.log("")
  for (const line of activityLines) console.log(`backends: ${line}`)
  for (const c of checks) console.log(`${c.pass ? "PASS" : "FAIL"}  ${c.name} — ${c.detail}`)
  for (const note of notes) console.log(`note: ${note}`)

  if (settings.writeDocs) {
    const file = env("BENCH_DOCS_FILE", path.join(ROOT, "docs", "performance.md"))
    const title = single.database.setup === "embedded" ? "embedded PostgreSQL (no DATABASE_URL)" : "PostgreSQL at DATABASE_URL"
    const block = [
      `### Latest run: ${title}`,
      "",
      `${date} · ${machineLine}`,
      "",
      `Code: ${codeVersion()}. Settings: ${settingsLine}.`,
      "",
      mdTable(summary),
      "",
      "Each phase (medians above):",
      "",
      mdTable(roundsTable),
      ...(failoverRows.length > 1 ? ["", mdTable(failoverRows)] : []),
      ...(newsRows.length > 0 ? ["", mdTable(newsRows)] : []),
      ...(activityLines.length === 0
        ? []
        : ["", "What the PostgreSQL backends were doing (pg_stat_activity every 50 ms; sessions active on average, by statement and wait event):", "", ...activityLines.map((line) => `- ${line}`)]),
      "",
      ...checks.map((c) => `- **${c.pass ? "PASS" : "FAIL"}** ${c.name} — ${c.detail}`),
      "",
      ...notes.map((note) => `- ${note}`)
    ].join("\n")
    replaceDocsBlock(file, { heading: SECTION, intro: INTRO, kind: "cluster", setup: single.database.setup, block })
    log(`results written to ${path.relative(process.cwd(), file)} ("${SECTION}", ${single.database.setup} block)`)
  }

  if (missing > 0 || countMismatch > 0) return 1
  if (settings.strict && checks.some((c) => !c.pass)) return 1
  return 0
}

const SECTION = "Several instances (npm run bench:cluster)"

const INTRO = `## ${SECTION}

\`npm run bench:cluster\` (bench/cluster.ts; not part of \`npm test\`; 5–8 minutes) compares one
instance with three in cluster mode (docs/operations.md, "Several instances") on the same machine,
and times the cluster's failover and rebalance with the default lock timers
(\`CLUSTER_LOCK_REFRESH_MS\` 1000, \`CLUSTER_LOCK_EXPIRATION_MS\` 5000).

- **Setups.** Two fresh databases on one PostgreSQL server (\`DATABASE_URL\`'s, or an embedded
  PostgreSQL 17 with \`max_connections\` 200), one per setup, each with 1,000 monitors (interval 2
  minutes: no deadline falls due while they are pinged) and a ping token, made through the API. One
  setup runs at a time: under the load each instance's pool grows to its 20 connections, and three
  instances with their LISTEN and lock connections take about 70, so both at once would not fit a
  shared server's 100.
- **CPU per ping.** Rounds (3): start the setup (the three instances one after the other, until
  \`GET /api/cluster\` on each shows every shard held once), a 5 s warm-up, 15 s of success pings
  at a fixed rate evenly paced over 96 connections by the load driver (bench/support/driver.ts, a
  process of its own; with three instances the connections are dealt out in turn, 32 to each, as a
  load balancer keeping connections alive would), stop it; the order alternates every round. CPU
  from \`/proc\`: the service processes, and the PostgreSQL backends serving the setup's database
  (its pools, LISTEN and lock sessions, its autovacuum); the whole PostgreSQL server is shown too (on
  a shared server it includes other databases' sessions). Judged: the median of the rounds' ratios
  three / one, target ≤ 1.25. Latency from the instant each ping was due, after the first second.
  \`pg_stat_activity\` is sampled every 50 ms: sessions active, and what they wait on.
- **Nothing lost, nothing false.** The run id of every 200 is looked up in \`runs\` (and each
  phase's new rows must equal its acknowledged pings); no incident may open on the pinged monitors;
  each monitor's \`lastPingAt\`, which its owner writes from what it hears (pings taken by another
  instance reach it through \`NOTIFY\`), must equal its latest run's finish.
- **News latency.** A fail ping to an instance that does not own the monitor, until
  \`GET /api/incidents?monitorId=\` on that instance lists the FAIL incident the owner raised
  (polled every 5 ms); the same through the owner, and on one instance.
- **Failover and rebalance.** Five times: \`kill -9\` of one of the three (in turn), the time until
  the two survivors hold every shard by their \`GET /api/cluster\` (polled every 50 ms; the time of
  the first balanced answer), restart it on the same ports, wait until balanced. Then twice: SIGTERM
  the third (handover), start a new instance (new ports), time until balanced from its spawn and from
  its first \`/healthz\` 200. Meanwhile 100 pings a second go to the live instances from the
  benchmark (one failing on a connection error is sent to the next live instance), their run ids
  checked too.

Knobs: \`BENCH_CLUSTER_RATE\` (1000), \`BENCH_CLUSTER_CONNECTIONS\` (96), \`BENCH_CLUSTER_SECONDS\` (15),
\`BENCH_CLUSTER_WARMUP_SECONDS\` (5), \`BENCH_CLUSTER_ROUNDS\` (3), \`BENCH_CLUSTER_MONITORS\` (1000),
\`BENCH_CLUSTER_INTERVAL\` (\`2m\`), \`BENCH_CLUSTER_KILLS\` (5), \`BENCH_CLUSTER_JOINS\` (2),
\`BENCH_CLUSTER_PROBES\` (20), \`BENCH_CLUSTER_FAILOVER_RATE\` (100), \`BENCH_CLUSTER_SAMPLE_QUERIES\` (1),
\`BENCH_WRITE_DOCS\` (1: update this section), \`BENCH_DOCS_FILE\`, \`BENCH_CODE_LABEL\`, \`BENCH_NOTE\`,
\`BENCH_STRICT\` (1: exit 1 when a target is missed; an acknowledged ping without its row always
exits 1).
`

await runBench("bench:cluster", main)
