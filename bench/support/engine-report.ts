import { type Check, type Machine, replaceDocsBlock } from "./report.js"

/** The results of `npm run bench:engine`: a console table and the "Incident engine" section of docs/performance.md. */

export interface LatencyStats {
  readonly planted: number
  readonly seen: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

export interface EngineReport {
  readonly setup: "embedded" | "url"
  readonly date: string
  readonly machine: Machine
  readonly rows: ReadonlyArray<readonly [string, string]>
  readonly checks: ReadonlyArray<Check>
  readonly notes: ReadonlyArray<string>
}

export const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? "–" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

export const mb = (bytes: number | undefined) => (bytes === undefined ? "–" : `${fmt(bytes / 2 ** 20)} MB`)

/** Interpolated quantile of sorted values (as percentile_cont). */
export const quantile = (sorted: ReadonlyArray<number>, p: number): number => {
  if (sorted.length === 0) return NaN
  const rank = p * (sorted.length - 1)
  const low = Math.floor(rank)
  const high = Math.ceil(rank)
  return sorted[low]! + (rank - low) * (sorted[high]! - sorted[low]!)
}

export const median = (values: ReadonlyArray<number>) => quantile([...values].sort((a, b) => a - b), 0.5)

export const latencyStats = (planted: number, latencies: ReadonlyArray<number>): LatencyStats => {
  const sorted = [...latencies].sort((a, b) => a - b)
  return { planted, seen: sorted.length, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] ?? NaN }
}

export const consoleText = (report: EngineReport): string => {
  const width = Math.max(...report.rows.map(([k]) => k.length))
  return [
    ...report.rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`),
    "",
    ...report.checks.map((c) => `${c.pass ? "PASS" : "FAIL"}  ${c.name} — ${c.detail}`),
    ...report.notes.map((n) => `note: ${n}`)
  ].join("\n")
}

const block = (report: EngineReport): string => {
  const m = report.machine
  const title = report.setup === "embedded" ? "embedded PostgreSQL (no DATABASE_URL)" : "PostgreSQL at DATABASE_URL"
  return [
    `### Latest run: ${title}`,
    "",
    `${report.date} · ${m.cores} cores (${m.cpu}), ${m.memoryGb} GB · Node ${m.node} · ${m.os} · ${m.postgres} · ${m.database}`,
    "",
    "| measure | result |",
    "|---|---:|",
    ...report.rows.map(([k, v]) => `| ${k} | ${v} |`),
    "",
    ...report.checks.map((c) => `- **${c.pass ? "PASS" : "FAIL"}** ${c.name} — ${c.detail}`),
    ...(report.notes.length === 0 ? [] : ["", ...report.notes.map((n) => `- ${n}`)])
  ].join("\n")
}

const SECTION = "## Incident engine"

const INTRO = `${SECTION}

\`npm run bench:engine\` (\`bench/engine.ts\`; not part of \`npm test\`) measures the incident engine
(\`src/Engine/Engine.ts\`) at 100,000 monitors in one process, against the targets: idle RSS ≤ 512 MB;
every monitor actor rebuilt from the database in ≤ 10 s at start-up; a MISSED or LATE incident
written ≤ 1 s after its deadline with 100,000 monitors loaded.

How: a fresh database (\`jobmon_bench_engine_<random>\` on the server of \`DATABASE_URL\`, or on an
embedded PostgreSQL in a temporary directory), migrated and bootstrapped by starting the service
once and stopping it. Then, straight in SQL (\`bench/support/engine-seed.ts\`): 100,000 monitors in
one \`insert … select generate_series\` — by sixths \`5m\`, \`1h\`, \`1d\` intervals and \`*/5 * * * *\`,
\`0 * * * *\`, \`30 2 * * *\` cron in UTC, London, New York, Kolkata and Sydney; grace 60 s; 1 % paused,
2 % never pinged, 10 % with \`maxRuntimeSeconds\`, 5 % with an SLA; every expected time 15–75 minutes
ahead, so nothing falls due during the run — plus 3,000 open RUNNING runs (most with a LATE limit
learned from 30 past successful runs each, which the rebuild loads eagerly) and 300 active
incidents (MISSED, FAIL, LATE on open runs; a quarter acknowledged).

The service (\`node bin/jobmon.js serve\`, \`LOG_LEVEL=info\`) is started as a child process and
timed from the spawn to the first 200 of \`/healthz\` (polled every 20 ms); the engine's own
measurement comes from its log line "incident engine: N monitor actors rebuilt in M ms". After 15 s
idle, \`VmRSS\` of the child is read from \`/proc/<pid>/status\` five times, a second apart (the
median is reported; \`VmHWM\` is the peak, reached during the rebuild).

Deadline latency (\`bench/support/engine-deadlines.ts\`), with the 100,000 monitors loaded: monitors
created through the API while the service runs, whose deadline falls 20–40 s later — 200 MISSED (120
interval schedules of 10–20 s with the rest of the delay as grace; 80 \`* * * * *\` cron monitors in
five zones, their graces spreading the deadlines over 20 s from the next minute boundary when that
is later, four sharing each deadline to the millisecond) and 100 LATE (\`maxRuntimeSeconds\` 20–39,
a start ping right after creation). Each deadline is read back from the database right after its
monitor is created (next expected time + grace; run start + limit); the engine dates each incident
at its deadline, and the benchmark checks that \`created_at\` equals it. \`select monitor_id, type
from incidents\` runs every 50 ms and dates the first poll that sees each row with the server's
\`clock_timestamp()\`: latency = first seen − deadline, an upper bound (at most one poll interval
plus a query above the commit). Each planted monitor must have exactly one incident of its kind and
no other; the idle fleet must raise none. Then, beyond the targets, a burst: 1,000 monitors (a daily
cron at one UTC minute) sharing one MISSED deadline, as when every job of a host stops at once.

Knobs (environment): \`BENCH_ENGINE_MONITORS\` (100000), \`BENCH_ENGINE_OPEN_RUNS\` (3000),
\`BENCH_ENGINE_INCIDENTS\` (300), \`BENCH_ENGINE_MISSED\` (200), \`BENCH_ENGINE_LATE\` (100),
\`BENCH_ENGINE_BURST\` (1000; 0 skips it), \`BENCH_ENGINE_IDLE_SECONDS\` (15), \`BENCH_WRITE_DOCS\` (1: update
this section), \`BENCH_STRICT\` (1: exit 1 when a target is missed; a wrong incident count, or a
service that exits, always exits 1).
`

/** Replaces this setup's block in the "Incident engine" section of docs/performance.md. */
export const writeEngineDocs = (file: string, report: EngineReport): void =>
  replaceDocsBlock(file, { heading: "Incident engine", intro: INTRO, kind: "engine", setup: report.setup, block: block(report) })
