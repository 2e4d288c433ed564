import type pg from "pg"

/**
 * Deadlines planted in a running service for `npm run bench:engine`, and the watch for the
 * incidents they must produce. Two phases, one after the other, so that neither disturbs the other:
 *
 * - spread: monitors created through the API whose deadline falls 20–40 s after the phase starts.
 *   MISSED: interval schedules of 10–20 s with the rest of the delay as grace, and `* * * * *` cron
 *   monitors in several zones whose grace spreads their deadlines over 20 s from the next minute
 *   boundary or 20 s, whichever is later (a few share each deadline to the millisecond). LATE:
 *   `maxRuntimeSeconds` 20–39 and a start ping right after creation.
 * - burst: monitors that all share one MISSED deadline: a daily cron at one minute (UTC), far
 *   enough ahead for all of them to be created first, as when every job of a host stops at once.
 *
 * Each deadline is read back from the database right after its monitor is created (next expected
 * time + grace; run start + maxRuntimeSeconds), and the engine's incident `created_at` must equal
 * it (the rules date an incident at its deadline).
 *
 * Latency is measured from outside: `select monitor_id, type from incidents` every POLL_MS, and the
 * first poll that sees a row dates it with the server's clock_timestamp(); latency = first seen −
 * deadline (an upper bound: at most one poll interval plus a query above the commit).
 */

export type Kind = "MISSED" | "LATE"
export type Group = "spread" | "burst"

export interface Planted {
  readonly id: string
  readonly kind: Kind
  readonly group: Group
  readonly schedule: string
  /** Epoch ms, from the database. */
  readonly deadline: number
}

interface Api {
  readonly url: string
  readonly token: string
}

const call = async (api: Api, method: string, route: string, body?: unknown) => {
  const response = await fetch(`${api.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, text, json: (): any => JSON.parse(text) }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const CRON_ZONES = ["UTC", "Asia/Kolkata", "Pacific/Chatham", "America/New_York", "Europe/Berlin"] as const

interface Plan {
  readonly kind: Kind
  readonly group: Group
  readonly schedule: { readonly type: "interval" | "cron"; readonly expression: string; readonly timezone?: string }
  readonly graceSeconds: number
  readonly maxRuntimeSeconds?: number
}

const describe = (s: Plan["schedule"]) => (s.type === "cron" ? `cron ${s.expression} ${s.timezone}` : `interval ${s.expression}`)

/** `missed` MISSED monitors (60 % interval, 40 % cron) and `late` LATE ones, deadlines 20–40 s after `at`. */
const spreadPlans = (missed: number, late: number, at: number): Array<Plan> => {
  const out: Array<Plan> = []
  const intervals = Math.round(missed * 0.6)
  for (let i = 0; i < intervals; i++) {
    const total = 20 + Math.floor((i * 20) / intervals)
    const every = 10 + (i % 11)
    out.push({ kind: "MISSED", group: "spread", schedule: { type: "interval", expression: `${every}s` }, graceSeconds: Math.max(0, total - every) })
  }
  // Cron `* * * * *`: T is the next minute boundary; the grace spreads T + grace over 20 s from
  // 20 s after `at` (or from T, when T is later than that): a few monitors per whole second.
  const nextMinute = Math.ceil((at + 1) / 60_000) * 60_000
  const from = Math.max(at + 20_000, nextMinute)
  const crons = missed - intervals
  for (let i = 0; i < crons; i++) {
    const target = from + Math.floor((i * 20) / crons) * 1000
    out.push({
      kind: "MISSED",
      group: "spread",
      schedule: { type: "cron", expression: "* * * * *", timezone: CRON_ZONES[i % CRON_ZONES.length]! },
      graceSeconds: Math.max(0, Math.round((target - nextMinute) / 1000))
    })
  }
  for (let i = 0; i < late; i++) {
    out.push({
      kind: "LATE",
      group: "spread",
      schedule: { type: "interval", expression: "1h" },
      graceSeconds: 60,
      maxRuntimeSeconds: 20 + Math.floor((i * 20) / late)
    })
  }
  return out
}

export interface PlantResult {
  readonly planted: ReadonlyArray<Planted>
  /** How long creating the monitors (and sending the start pings) took, ms. */
  readonly ms: number
}

/** Creates the monitors of `plans` through the API (`concurrency` at a time) and reads back each deadline. */
const create = async (api: Api, client: pg.Pool, plans: ReadonlyArray<Plan>, concurrency: number): Promise<PlantResult> => {
  const started = Date.now()
  const planted: Array<Planted> = new Array(plans.length)
  let next = 0
  const worker = async () => {
    while (next < plans.length) {
      const i = next++
      const plan = plans[i]!
      const created = await call(api, "POST", "/api/monitors", {
        name: `planted ${plan.kind} ${plan.group} ${i + 1}`,
        schedule: plan.schedule,
        graceSeconds: plan.graceSeconds,
        ...(plan.maxRuntimeSeconds === undefined ? {} : { maxRuntimeSeconds: plan.maxRuntimeSeconds })
      })
      if (created.status !== 201) throw new Error(`creating a planted monitor answered ${created.status}: ${created.text}`)
      const id = created.json().id as string
      let row: { deadline: string; now: string } | undefined
      if (plan.kind === "LATE") {
        const ping = await call(api, "POST", `/api/ping/${id}/start`)
        if (ping.status !== 200) throw new Error(`the start ping answered ${ping.status}: ${ping.text}`)
        const runId = ping.json().runId as string
        const r = await client.query<{ deadline: string; now: string }>(
          `select (extract(epoch from r.started_at) * 1000)::bigint + m.max_runtime_seconds * 1000 as deadline,
                  (extract(epoch from clock_timestamp()) * 1000)::bigint as now
           from runs r join monitors m on m.id = r.monitor_id where r.id = $1 and r.monitor_id = $2`,
          [runId, id]
        )
        row = r.rows[0]
      } else {
        const r = await client.query<{ deadline: string; now: string }>(
          `select (extract(epoch from next_expected_at) * 1000)::bigint + grace_seconds * 1000 as deadline,
                  (extract(epoch from clock_timestamp()) * 1000)::bigint as now
           from monitors where id = $1`,
          [id]
        )
        row = r.rows[0]
      }
      if (row === undefined) throw new Error(`planted monitor ${id} (${plan.kind}) has no deadline in the database`)
      if (Number(row.deadline) <= Number(row.now)) {
        throw new Error(`a planted ${plan.kind} deadline had passed when it was read back (${describe(plan.schedule)}): creating the monitors took too long`)
      }
      planted[i] = { id, kind: plan.kind, group: plan.group, schedule: describe(plan.schedule), deadline: Number(row.deadline) }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { planted, ms: Date.now() - started }
}

export const plantSpread = async (
  api: Api,
  client: pg.Pool,
  o: { readonly missed: number; readonly late: number; readonly concurrency: number }
): Promise<PlantResult> => {
  // Not within 2 s of a minute boundary: the cron monitors' T must be the minute the plan assumed.
  while (60_000 - (Date.now() % 60_000) < 2_000) await sleep(250)
  return create(api, client, spreadPlans(o.missed, o.late, Date.now()), o.concurrency)
}

/**
 * `count` monitors sharing one MISSED deadline: a daily cron (UTC) at the first minute boundary
 * after they can all be created (at `ratePerSecond`, with a safety factor of 2, and 10 s more).
 */
export const plantBurst = async (
  api: Api,
  client: pg.Pool,
  o: { readonly count: number; readonly ratePerSecond: number; readonly concurrency: number }
): Promise<PlantResult> => {
  const needed = 10_000 + (2 * o.count * 1000) / Math.max(1, o.ratePerSecond)
  const at = new Date(Math.ceil((Date.now() + needed) / 60_000) * 60_000)
  const schedule = { type: "cron" as const, expression: `${at.getUTCMinutes()} ${at.getUTCHours()} * * *`, timezone: "UTC" }
  const plans = Array.from({ length: o.count }, (): Plan => ({ kind: "MISSED", group: "burst", schedule, graceSeconds: 0 }))
  const result = await create(api, client, plans, o.concurrency)
  const instants = new Set(result.planted.map((p) => p.deadline))
  if (instants.size !== 1 || !instants.has(at.getTime())) {
    throw new Error(`the burst monitors do not all expect ${at.toISOString()} (${instants.size} instants): creating them took too long`)
  }
  return result
}

/** Deletes planted monitors through the API (their actors stop: no more repeated occurrences). */
export const retire = async (api: Api, planted: ReadonlyArray<Planted>, concurrency: number): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < planted.length) {
      const p = planted[next++]!
      const r = await call(api, "DELETE", `/api/monitors/${p.id}`)
      if (r.status !== 204 && r.status !== 200) throw new Error(`deleting a planted monitor answered ${r.status}: ${r.text}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

export interface Seen {
  readonly id: string
  readonly kind: Kind
  readonly group: Group
  readonly schedule: string
  readonly deadline: number
  /** Server clock of the first poll that saw the incident, epoch ms. */
  readonly firstSeen: number
  /** The incident's created_at (must equal the deadline). */
  readonly createdAt: number
  readonly latencyMs: number
}

export interface WatchResult {
  readonly seen: ReadonlyArray<Seen>
  /** Incident rows of the watched monitors by (monitor, type). */
  readonly rows: ReadonlyArray<{ readonly id: string; readonly type: string; readonly n: number }>
  readonly polls: number
  /** Mean time between polls and the longest, ms. */
  readonly meanPollMs: number
  readonly maxPollGapMs: number
}

export const POLL_MS = 50

/** Polls the incidents of the planted monitors until each has its incident or `graceMs` after the last deadline. */
export const watchIncidents = async (client: pg.Client, planted: ReadonlyArray<Planted>, graceMs: number): Promise<WatchResult> => {
  const byId = new Map(planted.map((p) => [p.id, p]))
  const ids = planted.map((p) => p.id)
  const firstSeen = new Map<string, { at: number; createdAt: number }>()
  const lastDeadline = Math.max(...planted.map((p) => p.deadline))
  let polls = 0
  let previous: number | undefined
  let maxGap = 0
  const begin = Date.now()
  for (;;) {
    const tick = Date.now()
    if (previous !== undefined) maxGap = Math.max(maxGap, tick - previous)
    previous = tick
    const r = await client.query<{ at: string; monitor_id: string; type: string; created_ms: string }>(
      `select (extract(epoch from (select clock_timestamp())) * 1000)::text as at, monitor_id, type,
              (extract(epoch from created_at) * 1000)::text as created_ms
       from incidents where monitor_id = any($1::uuid[])`,
      [ids]
    )
    polls++
    for (const row of r.rows) {
      const p = byId.get(row.monitor_id)!
      if (row.type !== p.kind || firstSeen.has(row.monitor_id)) continue
      firstSeen.set(row.monitor_id, { at: Number(row.at), createdAt: Number(row.created_ms) })
    }
    if (firstSeen.size === planted.length || Date.now() > lastDeadline + graceMs) break
    const wait = POLL_MS - (Date.now() - tick)
    if (wait > 0) await sleep(wait)
  }
  const end = Date.now()
  // A last look at every incident row of the planted monitors, once duplicates would have been written.
  await sleep(1000)
  const rows = await client.query<{ monitor_id: string; type: string; n: string }>(
    `select monitor_id, type, count(*)::text as n from incidents where monitor_id = any($1::uuid[]) group by 1, 2`,
    [ids]
  )
  const seen: Array<Seen> = []
  for (const p of planted) {
    const s = firstSeen.get(p.id)
    if (s === undefined) continue
    seen.push({ id: p.id, kind: p.kind, group: p.group, schedule: p.schedule, deadline: p.deadline, firstSeen: s.at, createdAt: s.createdAt, latencyMs: s.at - p.deadline })
  }
  return {
    seen,
    rows: rows.rows.map((r) => ({ id: r.monitor_id, type: r.type, n: Number(r.n) })),
    polls,
    meanPollMs: polls > 1 ? (end - begin) / polls : 0,
    maxPollGapMs: maxGap
  }
}
