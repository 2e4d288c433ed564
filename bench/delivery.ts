/**
 * `npm run bench:delivery`: outbound webhook delivery, the real service on the real PostgreSQL.
 *
 * A fresh database (DATABASE_URL's server, or an embedded PostgreSQL); the service as a child
 * process with ALLOW_PRIVATE_TARGETS=true; 200 webhooks, each for its own monitor, posting to its
 * own path on local receivers (a child process, several ports on 127.0.0.1).
 *
 * 1. Throughput: a stream of `monitor.updated` events (each for one monitor, so one delivery each) is
 *    written to the events table at BENCH_DELIVERY_RATE a second for BENCH_DELIVERY_SECONDS (3,000
 *    for 6 s: more than the target, so the result shows capacity); the attempts table is counted
 *    until every delivery has its attempt. Deliveries/s = attempts recorded from the first event to
 *    the last attempt. 90 per endpoint: under the 100 a minute limit.
 * 2. Latency: one fail ping per monitor, 25 ms apart; each opens a FAIL incident, whose
 *    incident.opened goes to that monitor's webhook. Latency = when the receiver got it − the
 *    incident's created_at (the same machine clock). No rate limit is in play.
 *
 * Bounded: it stops by itself (at most about two minutes past the stream). Results go to
 * docs/performance.md ("Alert delivery"). Targets: ≥ 1,000 deliveries/s with every attempt
 * recorded; alert p99 ≤ 1 s after its incident.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import pg from "pg"
import { installSignalHandlers, onCleanup, spawnChild, stopChild, runBench } from "./support/children.js"
import { backgroundBusy, cpuBetween, sampleCpu } from "./support/cpu.js"
import { BenchDb, openBenchDatabase } from "./support/database.js"
import { fmt, latencyStats } from "./support/engine-report.js"
import { mainThreadProfile, summarizeProfile } from "./support/profile.js"
import { replaceDocsBlock } from "./support/report.js"
import { createMonitors, createPingToken, newBootstrapToken, ROOT, startService, stopServer } from "./support/servers.js"
import { env, whole } from "./support/settings.js"


const settings = {
  endpoints: whole("BENCH_DELIVERY_ENDPOINTS", 200),
  ports: whole("BENCH_DELIVERY_PORTS", 8),
  rate: whole("BENCH_DELIVERY_RATE", 3000),
  seconds: whole("BENCH_DELIVERY_SECONDS", 6),
  incidents: whole("BENCH_DELIVERY_INCIDENTS", 200),
  writeDocs: env("BENCH_WRITE_DOCS", "1") !== "0",
  strict: env("BENCH_STRICT", "0") === "1",
  note: env("BENCH_NOTE", ""),
  /** Profile the service (node --cpu-prof) and print where its time went. */
  profile: env("BENCH_PROFILE", "0") === "1"
}

const THROUGHPUT_TARGET = 1_000
const LATENCY_TARGET_MS = 1_000
const TICK_MS = 50
const DRAIN_LIMIT_MS = 120_000

const log = (message: string) => console.log(`[bench:delivery] ${message}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Stats {
  readonly requests: number
  readonly byPath: Record<string, number>
  readonly arrivals: ReadonlyArray<[string, number]>
}

const startReceivers = async () => {
  let resolvePorts: (ports: Array<number>) => void = () => {}
  const listening = new Promise<Array<number>>((resolve) => (resolvePorts = resolve))
  const child = spawnChild("receivers", process.execPath, ["--import", "tsx", "bench/support/delivery-receivers.ts", String(settings.ports)], {
    cwd: ROOT,
    onStdout: (text) => {
      const m = /listening ([\d,]+)/.exec(text)
      if (m !== null) resolvePorts(m[1]!.split(",").map(Number))
    }
  })
  onCleanup(() => stopChild(child, 5_000))
  const ports = await Promise.race([listening, sleep(30_000).then(() => Promise.reject(new Error("the receivers did not listen within 30 s")))])
  const stats = async (): Promise<Stats> => (await fetch(`http://127.0.0.1:${ports[0]}/_stats`)).json() as Promise<Stats>
  return { child, ports, stats }
}

const count = async (client: pg.Client, sql: string) => Number((await client.query<{ n: string }>(sql)).rows[0]!.n)

const main = async (): Promise<number> => {
  installSignalHandlers()
  const started = new Date()
  const busy = await backgroundBusy(2000)
  const database = await openBenchDatabase("jobmon_bench_delivery")
  log(`database: ${database.describe}`)
  const receivers = await startReceivers()
  log(`receivers on ports ${receivers.ports.join(", ")}`)
  process.env.ALLOW_PRIVATE_TARGETS = "true"
  const token = newBootstrapToken()
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-bench-delivery-"))
  onCleanup(async () => fs.rmSync(logDir, { recursive: true, force: true }))
  const profileDir = settings.profile ? path.join(logDir, "profile") : undefined
  const service = await startService({
    databaseUrl: database.url,
    bootstrapToken: token,
    logFile: path.join(logDir, "service.log"),
    cpuProfileDir: profileDir
  })
  onCleanup(() => stopServer(service))
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  onCleanup(() => client.end())
  const db = await BenchDb.connect(database.url)
  onCleanup(() => db.close())
  const facts = await db.serverFacts()

  // 200 monitors, and a webhook for each on its own path
  const monitors = await createMonitors(service.url, token, settings.endpoints)
  for (const [i, monitorId] of monitors.entries()) {
    const r = await fetch(`${service.url}/api/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        url: `http://127.0.0.1:${receivers.ports[i % receivers.ports.length]}/hooks/${i}`,
        events: ["monitor.updated", "incident.opened"],
        filters: { monitorIds: [monitorId] }
      })
    })
    if (r.status !== 201) throw new Error(`webhook creation answered ${r.status}: ${await r.text()}`)
  }
  const orgId = (await client.query<{ id: string }>(`select id from organizations where slug = 'default'`)).rows[0]!.id
  log(`${settings.endpoints} monitors and webhooks; streaming ${fmt(settings.rate)} events/s for ${settings.seconds} s`)

  // 1. Throughput
  const total = settings.rate * settings.seconds
  const perTick = Math.round((settings.rate * TICK_MS) / 1000)
  const cpuPids = [service.child.process.pid!, receivers.child.process.pid!]
  const cpuBefore = sampleCpu(cpuPids)
  const t0 = performance.now()
  const samples: Array<{ t: number; attempts: number }> = []
  let written = 0
  const writer = (async () => {
    for (let tick = 0; written < total; tick++) {
      const due = t0 + tick * TICK_MS
      if (performance.now() < due) await sleep(due - performance.now())
      const n = Math.min(perTick, total - written)
      await client.query(
        `insert into events (org_id, type, created_at, data, monitor_ids)
         select $1, 'monitor.updated', now(), jsonb_build_object('bench', g), array[($2::uuid[])[1 + g % cardinality($2::uuid[])]]
         from generate_series($3::int, $4::int) as g`,
        [orgId, monitors, written, written + n - 1]
      )
      written += n
    }
  })()
  const sampler = new pg.Client({ connectionString: database.url })
  await sampler.connect()
  onCleanup(() => sampler.end())
  let attempts = 0
  const deadline = t0 + settings.seconds * 1000 + DRAIN_LIMIT_MS
  while (attempts < total && performance.now() < deadline) {
    await sleep(250)
    attempts = await count(sampler, "select count(*) as n from webhook_delivery_attempts")
    samples.push({ t: performance.now() - t0, attempts })
  }
  await writer
  const streamMs = settings.seconds * 1000
  const cpuUs = cpuBetween(cpuBefore, sampleCpu(cpuPids), [service.child.process.pid!])
  const span = (await client.query<{ first: Date; last: Date }>(
    `select (select min(created_at) from events where type = 'monitor.updated') as first,
            (select max(at) from webhook_delivery_attempts) as last`
  )).rows[0]!
  const spanMs = span.last.getTime() - span.first.getTime()
  const succeeded = await count(client, "select count(*) as n from webhook_deliveries where status = 'succeeded' and event_type = 'monitor.updated'")
  const deliveries = await count(client, "select count(*) as n from webhook_deliveries where event_type = 'monitor.updated'")
  const stats1 = await receivers.stats()
  const throughput = attempts / (spanMs / 1000)
  // the best whole second, and the rate while the stream ran
  let peak = 0
  for (const [i, s] of samples.entries()) {
    let j = i
    while (j > 0 && s.t - samples[j]!.t < 1000) j--
    const back = samples[j]!
    if (s.t - back.t >= 1000) peak = Math.max(peak, ((s.attempts - back.attempts) * 1000) / (s.t - back.t))
  }
  const atStreamEnd = samples.find((s) => s.t >= streamMs) ?? samples[samples.length - 1]!
  log(
    `${fmt(attempts)} attempts recorded for ${fmt(total)} events (${fmt(deliveries)} deliveries, ${fmt(succeeded)} succeeded; receivers answered ${fmt(stats1.requests)}) in ${fmt(spanMs / 1000, 2)} s: ${fmt(throughput)} deliveries/s; best second ${fmt(peak)}/s`
  )

  // 2. Latency: incident → alert
  const pingToken = await createPingToken(service.url, token)
  const pinged = new Map<string, number>()
  for (const monitorId of monitors.slice(0, settings.incidents)) {
    const sent = Date.now()
    const r = await fetch(`${service.url}/api/ping/${monitorId}/fail`, {
      method: "POST",
      headers: { authorization: `Bearer ${pingToken}`, "content-type": "application/json" },
      body: JSON.stringify({ exitCode: 1, output: "bench" })
    })
    if (r.status !== 200) throw new Error(`fail ping answered ${r.status}: ${await r.text()}`)
    pinged.set(monitorId, sent)
    await sleep(25)
  }
  const latencyDeadline = Date.now() + 30_000
  let stats2 = await receivers.stats()
  while (stats2.arrivals.length < settings.incidents && Date.now() < latencyDeadline) {
    await sleep(200)
    stats2 = await receivers.stats()
  }
  const incidents = new Map(
    (await client.query<{ id: string; monitor_id: string; created_at: Date }>(`select id, monitor_id, created_at from incidents`)).rows.map((r) => [r.id, r])
  )
  const fromIncident: Array<number> = []
  const fromPing: Array<number> = []
  for (const [id, at] of stats2.arrivals) {
    const incident = incidents.get(id)
    if (incident === undefined) continue
    fromIncident.push(at - incident.created_at.getTime())
    const sent = pinged.get(incident.monitor_id)
    if (sent !== undefined) fromPing.push(at - sent)
  }
  const latency = latencyStats(settings.incidents, fromIncident)
  const pingLatency = latencyStats(settings.incidents, fromPing)
  log(`incident → alert: ${latency.seen}/${latency.planted} arrived; p50 ${fmt(latency.p50)} ms, p99 ${fmt(latency.p99)} ms, max ${fmt(latency.max)} ms`)
  const failedAttempts = await count(client, "select count(*) as n from webhook_delivery_attempts where status_code is null or status_code <> 200")

  if (profileDir !== undefined) {
    await stopServer(service)
    const file = mainThreadProfile(profileDir)
    if (file !== undefined) {
      const summary = summarizeProfile(file, { top: 30 })
      log(`service profile: ${fmt(summary.busyMs)} ms busy of ${fmt(summary.totalMs)} ms`)
      for (const line of [...summary.byOrigin, ...summary.topFrames]) log(`  ${String(line.percent).padStart(5)} %  ${line.name}`)
    }
  }

  const checks = [
    { name: `≥ ${fmt(THROUGHPUT_TARGET)} deliveries/s, every attempt recorded`, pass: throughput >= THROUGHPUT_TARGET && attempts === total && stats1.requests >= total, detail: `${fmt(throughput)}/s; ${fmt(attempts)} attempt rows for ${fmt(total)} events` },
    { name: `incident → alert p99 ≤ ${fmt(LATENCY_TARGET_MS)} ms`, pass: latency.seen === latency.planted && latency.p99 <= LATENCY_TARGET_MS, detail: `p99 ${fmt(latency.p99)} ms, max ${fmt(latency.max)} ms, ${latency.seen}/${latency.planted} arrived` }
  ]
  const machine = `${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim() ?? "?"}), Node ${process.version}, PostgreSQL ${facts.version} (${database.setup === "url" ? "DATABASE_URL" : "embedded"})`
  const rows: Array<[string, string]> = [
    ["events streamed", `${fmt(total)} (${fmt(settings.rate)}/s for ${settings.seconds} s, ${settings.endpoints} endpoints on ${settings.ports} ports)`],
    ["attempts recorded / receiver requests", `${fmt(attempts)} / ${fmt(stats1.requests)} (${fmt(succeeded)} deliveries succeeded, ${fmt(failedAttempts)} attempts not 200)`],
    ["first event → last attempt", `${fmt(spanMs / 1000, 2)} s`],
    ["**deliveries/s** (sustained, end to end)", `**${fmt(throughput)}**`],
    ["best second", `${fmt(peak)}/s`],
    ["attempts when the stream ended", `${fmt(atStreamEnd.attempts)} of ${fmt(total)} at ${fmt(atStreamEnd.t / 1000, 1)} s`],
    ["service CPU per delivery", `${fmt(cpuUs / Math.max(1, attempts))} µs`],
    ["**incident → alert** p50 / p99 / max", `**${fmt(latency.p50)} / ${fmt(latency.p99)} / ${fmt(latency.max)} ms** (${latency.seen}/${latency.planted})`],
    ["fail ping sent → alert p50 / p99 / max", `${fmt(pingLatency.p50)} / ${fmt(pingLatency.p99)} / ${fmt(pingLatency.max)} ms`]
  ]
  const notes = [
    `Machine: ${machine}; ${fmt((busy ?? 0) * 100)} % of all cores busy before the run.`,
    ...(settings.note === "" ? [] : [settings.note])
  ]
  const block = [
    `Run ${started.toISOString().slice(0, 16).replace("T", " ")} UTC.`,
    "",
    "| | |",
    "|---|---|",
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    "",
    ...checks.map((c) => `- ${c.pass ? "✅" : "❌"} ${c.name}: ${c.detail}`),
    "",
    ...notes.map((n) => `> ${n}`)
  ].join("\n")
  console.log(`\n${block}\n`)
  if (settings.writeDocs) {
    const file = path.join(ROOT, "docs", "performance.md")
    replaceDocsBlock(file, {
      heading: "Alert delivery",
      intro: INTRO,
      kind: "delivery",
      setup: database.setup,
      block
    })
    log(`results written to docs/performance.md ("Alert delivery", ${database.setup} block)`)
  }
  if (attempts !== total) return 1
  if (settings.strict && checks.some((c) => !c.pass)) return 1
  return 0
}

const INTRO = `## Alert delivery

\`npm run bench:delivery\` (bench/delivery.ts): the service as a child process on a fresh database,
200 outbound webhooks (one per monitor) posting to their own paths on local receivers (a child
process, 8 ports on 127.0.0.1, \`ALLOW_PRIVATE_TARGETS=true\`). **Throughput**: \`monitor.updated\`
events are written to the events table at 3,000 a second for 6 s (one delivery each, 90 per
endpoint: under the 100 a minute limit; more than the target, so the result shows capacity);
deliveries/s = attempt rows recorded ÷ the time from the
first event to the last attempt. **Latency**: 200 fail pings, 25 ms apart, each opening a FAIL
incident; latency = receiver arrival − the incident's \`created_at\`. Settings:
\`BENCH_DELIVERY_RATE\`, \`BENCH_DELIVERY_SECONDS\`, \`BENCH_DELIVERY_ENDPOINTS\`,
\`BENCH_DELIVERY_INCIDENTS\`, \`BENCH_NOTE\`, \`BENCH_PROFILE=1\` (prints where the service's CPU
went), \`BENCH_WRITE_DOCS=0\`, \`BENCH_STRICT=1\`.

What the profile led to (same machine, same load level): the worker first fanned out every waiting
event before sending anything, so under a stream it sent almost nothing until the stream ended
(1,109/s end to end); fanning out the next batch beside the sending of the previous one gave
1,807/s. Sending a batch's POSTs from one promise pool instead of a fiber each, and not reading the
delivery rows back after recording the attempts, cut the service's CPU for the same run by a third
(30 s → 20 s). What is left is mostly Node's HTTP client (\`writev\` per request) and garbage
collection. The machine is shared: with the other helpers' work on the same 2 cores the result
moves between about 900 and 2,000 deliveries/s from one run to the next (after the changes above;
below 1,000 only in the most loaded run).
`

await runBench("bench:delivery", main)
