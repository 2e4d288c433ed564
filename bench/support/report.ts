import * as fs from "node:fs"
import * as path from "node:path"
import type { Accounting } from "./accounting.js"
import type { ProfileSummary } from "./profile.js"
import type { DriverResult } from "./protocol.js"

/** The results table (console and markdown) and the "Ping intake" section of docs/performance.md. */

/** CPU time per request (µs) by process, from /proc, and how busy all cores were (0–1). */
export interface CpuCost {
  readonly serverUs: number
  readonly postgresUs: number | undefined
  /** Every process of the PostgreSQL server (WAL writer, checkpointer, autovacuum, … and, on a shared server, other sessions). */
  readonly postgresServerUs?: number | undefined
  /** WAL written per ping, bytes (cluster-wide). */
  readonly walBytes?: number | undefined
  readonly driverUs: number
  readonly machineBusy: number | undefined
  /** CPU used meanwhile by every other process (other work, PostgreSQL's background processes), in cores. */
  readonly otherCores: number | undefined
}

export interface PhaseRow {
  readonly label: string
  readonly target: "bare" | "floor" | "intake"
  readonly result: DriverResult
  readonly cpu?: CpuCost | undefined
  readonly accounting?: Accounting | undefined
  /** intake rps / bare rps at the same connection count. */
  readonly ratio?: number | undefined
}

export interface Check {
  readonly name: string
  readonly pass: boolean
  readonly detail: string
}

export interface Machine {
  readonly cores: number
  readonly cpu: string
  readonly memoryGb: number
  readonly node: string
  readonly os: string
  readonly postgres: string
  readonly database: string
}

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? "–" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

const columns = ["phase", "conns", "pings/s", "p50 ms", "p99 ms", "2xx", "non-2xx", "rows written", "missing", "vs bare"] as const

const cells = (row: PhaseRow): Array<string> => {
  const r = row.result
  const a = row.accounting
  const non2xx = r.non2xx === 0
    ? "0"
    : `${r.non2xx} (${Object.entries(r.statusCodes).filter(([s]) => !s.startsWith("2")).map(([s, c]) => `${s}×${c}`).join(" ")})`
  return [
    row.label,
    String(r.connections),
    fmt(r.rps),
    fmt(r.latency.p50, 1),
    fmt(r.latency.p99, 1),
    fmt(r.count2xx),
    non2xx,
    a === undefined ? "–" : fmt(a.newRuns) + (r.mode === "pairs" ? ` (${fmt(a.newSuccess)} closed)` : ""),
    a === undefined ? "–" : String(a.missing),
    row.ratio === undefined ? "–" : row.ratio.toFixed(2)
  ]
}

const cpuColumns = ["phase", "conns", "server µs/ping", "PostgreSQL backends µs/ping", "PostgreSQL, all processes µs/ping", "WAL bytes/ping", "driver µs/ping", "cores busy", "other processes (cores)"] as const

const cpuCells = (row: PhaseRow): Array<string> => {
  const c = row.cpu
  return [
    row.label,
    String(row.result.connections),
    c === undefined ? "–" : fmt(c.serverUs),
    c?.postgresUs === undefined ? "–" : fmt(c.postgresUs),
    c?.postgresServerUs === undefined ? "–" : fmt(c.postgresServerUs),
    c?.walBytes === undefined ? "–" : fmt(c.walBytes),
    c === undefined ? "–" : fmt(c.driverUs),
    c?.machineBusy === undefined ? "–" : `${fmt(c.machineBusy * 100)} %`,
    c?.otherCores === undefined ? "–" : c.otherCores.toFixed(2)
  ]
}

const textTable = (head: ReadonlyArray<string>, body: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = head.map((c, i) => Math.max(c.length, ...body.map((r) => r[i]!.length)))
  const line = (values: ReadonlyArray<string>) => values.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join("  ")
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

const mdTable = (head: ReadonlyArray<string>, body: ReadonlyArray<ReadonlyArray<string>>): string =>
  [
    `| ${head.join(" | ")} |`,
    `|${head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`,
    ...body.map((r) => `| ${r.join(" | ")} |`)
  ].join("\n")

export const consoleTable = (rows: ReadonlyArray<PhaseRow>): string =>
  `${textTable(columns, rows.map(cells))}\n\n${textTable(cpuColumns, rows.map(cpuCells))}`

const markdownTable = (rows: ReadonlyArray<PhaseRow>): string =>
  `${mdTable(columns, rows.map(cells))}\n\nCPU time per ping (from /proc; the server is the service or the bare node:http process):\n\n${mdTable(cpuColumns, rows.map(cpuCells))}`

export const checksText = (checks: ReadonlyArray<Check>): string =>
  checks.map((c) => `${c.pass ? "PASS" : "FAIL"}  ${c.name} — ${c.detail}`).join("\n")

export const profileText = (profile: ProfileSummary, frames = 15): string =>
  [
    `CPU profile of the service (${profile.file}): ${fmt(profile.busyMs)} ms busy of ${fmt(profile.totalMs)} ms`,
    "  self time by origin:",
    ...profile.byOrigin.map((l) => `    ${l.percent.toFixed(1).padStart(5)}%  ${l.name}`),
    "  top frames by self time:",
    ...profile.topFrames.slice(0, frames).map((l) => `    ${l.percent.toFixed(1).padStart(5)}%  ${l.name}`)
  ].join("\n")

export interface Report {
  readonly setup: "embedded" | "url"
  readonly date: string
  readonly machine: Machine
  readonly code: string
  readonly settings: string
  readonly rows: ReadonlyArray<PhaseRow>
  readonly checks: ReadonlyArray<Check>
  readonly notes: ReadonlyArray<string>
  readonly profile?: ProfileSummary | undefined
  readonly profiledConnections?: number | undefined
}

const block = (report: Report): string => {
  const m = report.machine
  const title = report.setup === "embedded" ? "embedded PostgreSQL (no DATABASE_URL)" : "PostgreSQL at DATABASE_URL"
  const lines = [
    `### Latest run: ${title}`,
    "",
    `${report.date} · ${m.cores} cores (${m.cpu}), ${m.memoryGb} GB · Node ${m.node} · ${m.os} · ${m.postgres} · ${m.database}`,
    "",
    `Code: ${report.code}. Settings: ${report.settings}.`,
    "",
    markdownTable(report.rows),
    "",
    ...report.checks.map((c) => `- **${c.pass ? "PASS" : "FAIL"}** ${c.name} — ${c.detail}`),
    ...(report.notes.length === 0 ? [] : ["", ...report.notes.map((n) => `- ${n}`)])
  ]
  if (report.profile !== undefined) {
    const p = report.profile
    lines.push(
      "",
      `CPU profile of the service during a ${report.profiledConnections ?? ""}-connection success phase (\`node --cpu-prof\`, a separate run with the profiler on; ${fmt(p.busyMs)} ms busy of ${fmt(p.totalMs)} ms sampled), self time:`,
      "",
      "| share of busy time | origin |",
      "|---:|---|",
      ...p.byOrigin.slice(0, 10).map((l) => `| ${l.percent.toFixed(1)} % | ${l.name} |`),
      "",
      "| share of busy time | frame |",
      "|---:|---|",
      ...p.topFrames.slice(0, 15).map((l) => `| ${l.percent.toFixed(1)} % | \`${l.name.replace(/\|/g, "\\|")}\` |`)
    )
  }
  return lines.join("\n")
}

const SECTION = "## Ping intake"

const INTRO = `${SECTION}

\`npm run bench\` (\`bench/intake.ts\`; not part of \`npm test\`) measures the durable ping intake end to end:
it starts the real service (\`node bin/jobmon.js serve\`) as a child process on a fresh database
(\`jobmon_bench_<random>\` on the server of \`DATABASE_URL\`, or on an embedded PostgreSQL in a temporary
directory; \`synchronous_commit\` stays on, so every 200 follows a durable COMMIT), creates 1,000 monitors
and a ping-scoped token through the API, and drives the ping routes with autocannon from another
process (\`bench/support/driver.ts\`). The baseline is a bare \`node:http\` server
(\`bench/support/bare-server.ts\`) that reads the body and answers \`{"received":true,"runId":"<uuid>"}\`,
measured in the same run with the same driver, connections and paths.

Phases (success phases first: a success without \`runId\` closes an open run): a warm-up of each
server; rounds (three by default) of bare \`node:http\`, the durable floor (\`bench/support/floor-server.ts\`: node:http plus group
commit into a minimal table, no product logic) and the intake in turn at each connection count (the order reversed every other round; the
ratio judged is the median of the rounds' own ratios, intake / bare of the same round), with success pings
(\`{"durationMs": n, "output": "ok …"}\`, rotating over the monitors); a fixed rate of 5,000 pings/s,
evenly paced over 256 connections with latency counted from the instant each ping was due (and, for
comparison, autocannon's own \`overallRate\`, which sends each connection's quota in a burst at the
start of every second); start/success pairs (the success carries the \`runId\` the start returned).
Each phase sends for its seconds and then waits for every answer, so the rows it added to \`runs\`
must equal its acknowledged pings exactly (pairs: new runs = acknowledged starts, newly closed runs
= acknowledged successes). Non-2xx answers are shown, not hidden.

Rates depend on everything else the cores are doing, so each phase also reports CPU time per ping
from \`/proc\`: the server process (the service or the bare server), the PostgreSQL backends serving
the service's connections, the whole PostgreSQL server (backends, WAL writer, checkpointer,
autovacuum; on a shared server also other sessions), WAL bytes, the load driver, and the CPU every
other process used meanwhile (in cores). These costs move much less with the machine's load than
the rates do (batches shrink and caches suffer on a crowded machine, so they do rise).

Knobs (environment): \`BENCH_SECONDS\` (10), \`BENCH_CONNECTIONS\` (\`64,256\`), \`BENCH_RATE\` (5000),
\`BENCH_RATE_CONNECTIONS\` (256), \`BENCH_WARMUP_SECONDS\` (3), \`BENCH_ROUNDS\` (3), \`BENCH_MONITORS\` (1000),
\`BENCH_PROFILE\` (\`auto\`: profile the service with \`node --cpu-prof\` when the ratio to bare
\`node:http\` is below 0.5; \`always\`, \`never\`), \`BENCH_WRITE_DOCS\` (1: update this section),
\`BENCH_DOCS_FILE\` (where this section lives), \`BENCH_CODE_LABEL\` (the "Code:" line; by default the
git commit), \`BENCH_STRICT\` (1: exit 1 when a performance target is missed; a missing acknowledged
ping always exits 1).

Targets: intake with every ping committed ≥ 0.5 × the bare \`node:http\` rate of the same run; p99
under 50 ms at 5,000 pings/s (after the first second, in which the driver opens its connections);
zero acknowledged pings missing.
`

/**
 * Replaces one marked block (`<!-- bench:<kind>:<setup>:begin/end -->`) in a `## <heading>` section
 * of docs/performance.md. A missing section is created with `intro`; an existing one keeps its text
 * (analysis written by hand) and only the block changes.
 */
export const replaceDocsBlock = (
  file: string,
  options: { heading: string; intro: string; kind: string; setup: string; block: string }
): void => {
  const begin = `<!-- bench:${options.kind}:${options.setup}:begin -->`
  const end = `<!-- bench:${options.kind}:${options.setup}:end -->`
  const content = `${begin}\n${options.block}\n${end}`
  let text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "# Performance\n"
  const escaped = options.heading.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  const heading = new RegExp(`^## ${escaped}[ \\t]*$`, "m").exec(text)
  if (heading === null) {
    text = `${text.trimEnd()}\n\n${options.intro}\n${content}\n`
  } else {
    const sectionStart = heading.index
    const next = /^## /m.exec(text.slice(sectionStart + heading[0].length))
    const sectionEnd = next === null ? text.length : sectionStart + heading[0].length + next.index
    let section = text.slice(sectionStart, sectionEnd)
    const b = section.indexOf(begin)
    const e = section.indexOf(end)
    section = b >= 0 && e > b
      ? section.slice(0, b) + content + section.slice(e + end.length)
      : `${section.trimEnd()}\n\n${content}\n${sectionEnd < text.length ? "\n" : ""}`
    text = text.slice(0, sectionStart) + section + text.slice(sectionEnd)
  }
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text.endsWith("\n") ? text : `${text}\n`)
}

/** Replaces this setup's block in the "Ping intake" section of docs/performance.md (creating what is missing). */
export const writeDocs = (file: string, report: Report): void =>
  replaceDocsBlock(file, { heading: "Ping intake", intro: INTRO, kind: "intake", setup: report.setup, block: block(report) })
