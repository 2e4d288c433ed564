import type pg from "pg"

/**
 * Deadlines planted in a running service for `npm run bench:engine`, and the watch for the
 * incidents they must produce.
 *
 * MISSED: monitors created through the API whose grace deadline (next expected time + grace) falls
 * 20–40 s later: interval schedules of 10–20 s with the rest of the delay as grace, and
 * `* * * * *` cron monitors in several zones whose grace puts the deadline in the window (these
 * share deadlines to the millisecond, a few monitors per instant). LATE: monitors with
 * `maxRuntimeSeconds` 20–39 and a start ping right after creation. The exact deadlines are read
 * back from the database (next_expected_at + grace; started_at + maxRuntimeSeconds), and the
 * engine's incident `created_at` must equal them (the rules date an incident at its deadline).
 *
 * Latency is measured from outside: `select monitor_id, type from incidents` every POLL_MS, and
 * the first poll that sees a row dates it with the server's clock_timestamp(); latency = first
 * seen − deadline (an upper bound, at most one poll interval plus a query above the commit).
 */

export type Kind = "MISSED" | "LATE"

export interface Planted {
  readonly id: string
  readonly kind: Kind
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

const CRON_ZONES = ["UTC", "Asia/Kolkata", "Pacific/Chatham", "America/New_York", "Europe/Berlin"] as const

interface Plan {
  readonly kind: Kind
  readonly schedule: { type: "interval" | "cron"; expression: string; timezone?: string }
  readonly graceSeconds: number
  readonly maxRuntimeSeconds?: number
}

/** What to create: `missed` MISSED monitors (60 % interval, 40 % cron) and `late` LATE ones, deadlines 20–40 s after `plantAt`. */
const plans = (missed: number, late: number, plantAt: number): Array<Plan> => {
  const out: Array<Plan> = []
  const intervals = Math.round(missed * 0.6)
  for (let i = 0; i < intervals; i++) {
    const total = 20 + Math.floor((i * 20) / intervals)
    const every = 10 + (i % 11)
    out.push({ kind: "MISSED", schedule: { type: "interval", expression: `${every}s` }, graceSeconds: Math.max(0, total - every) })
  }
  // Cron `* * * * *`: the next minute boundary T; grace so that T + grace lands 20–40 s after plantAt.
  const nextMinute = Math.ceil((plantAt + 1) / 60_000) * 60_000
  const crons = missed - intervals
  for (let i = 0; i < crons; i++) {
    const target = plantAt + 20_000 + Math.floor((i * 20) / crons) * 1000
    out.push({
      kind: "MISSED",
      schedule: { type: "cron", expression: "* * * * *", timezone: CRON_ZONES[i % CRON_ZONES.length]! },
      graceSeconds: Math.max(0, Math.round((target - nextMinute) / 1000))
    })
  }
  for (let i = 0; i < late; i++) {
    out.push({
      kind: "LATE",
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

export const plantDeadlines = async (
  api: Api,
  client: pg.Client,
  o: { readonly missed: number; readonly late: number; readonly concurrency: number }
): Promise<PlantResult> => {
  // Not within 2 s of a minute boundary: the cron monitors' T must be the minute the plan assumed.
  while (60_000 - (Date.now() % 60_000) < 2_000) await new Promise((resolve) => setTimeout(resolve, 250))
  const started = Date.now()
  const todo = plans(o.missed, o.late, started)
  const ids: Array<{ id: string; plan: Plan }> = new Array(todo.length)
  let next = 0
  const worker = async () => {
    while (next < todo.length) {
      const i = next++
      const plan = todo[i]!
      const created = await call(api, "POST", "/api/monitors", {
        name: `planted ${plan.kind} ${i + 1}`,
        schedule: plan.schedule,
        graceSeconds: plan.graceSeconds,
        ...(plan.maxRuntimeSeconds === undefined ? {} : { maxRuntimeSeconds: plan.maxRuntimeSeconds })
      })
      if (created.status !== 201) throw new Error(`creating a planted monitor answered ${created.status}: ${created.text}`)
      const id = created.json().id as string
      if (plan.kind === "LATE") {
        const ping = await call(api, "POST", `/api/ping/${id}/start`)
        if (ping.status !== 200) throw new Error(`the start ping answered ${ping.status}: ${ping.text}`)
      }
      ids[i] = { id, plan }
    }
  }
  await Promise.all(Array.from({ length: o.concurrency }, worker))
  const ms = Date.now() - started

  const missedIds = ids.filter((x) => x.plan.kind === "MISSED").map((x) => x.id)
  const lateIds = ids.filter((x) => x.plan.kind === "LATE").map((x) => x.id)
  const missedRows = await client.query<{ id: string; deadline: string }>(
    `select id, (extract(epoch from next_expected_at) * 1000 + grace_seconds * 1000)::bigint::text as deadline
     from monitors where id = any($1::uuid[])`,
    [missedIds]
  )
  const lateRows = await client.query<{ monitor_id: string; deadline: string }>(
    `select r.monitor_id, (extract(epoch from r.started_at) * 1000 + m.max_runtime_seconds * 1000)::bigint::text as deadline
     from runs r join monitors m on m.id = r.monitor_id
     where r.monitor_id = any($1::uuid[]) and r.status = 'RUNNING'`,
    [lateIds]
  )
  const deadlineOf = new Map<string, number>()
  for (const r of missedRows.rows) deadlineOf.set(r.id, Number(r.deadline))
  for (const r of lateRows.rows) deadlineOf.set(r.monitor_id, Number(r.deadline))
  const planted: Array<Planted> = ids.map(({ id, plan }) => {
    const deadline = deadlineOf.get(id)
    if (deadline === undefined) throw new Error(`planted monitor ${id} (${plan.kind}) has no deadline in the database`)
    const s = plan.schedule
    return { id, kind: plan.kind, schedule: s.type === "cron" ? `cron ${s.expression} ${s.timezone}` : `interval ${s.expression}`, deadline }
  })
  const readAt = Date.now()
  const early = planted.filter((p) => p.deadline <= readAt)
  if (early.length > 0) throw new Error(`${early.length} planted deadlines had passed before they were read back: planting took too long`)
  return { planted, ms }
}

export interface Seen {
  readonly id: string
  readonly kind: Kind
  readonly deadline: number
  /** Server clock of the first poll that saw the incident, epoch ms. */
  readonly firstSeen: number
  /** The incident's created_at (must equal the deadline). */
  readonly createdAt: number
  readonly latencyMs: number
}

export interface WatchResult {
  readonly seen: ReadonlyArray<Seen>
  /** Incident rows of planted monitors by (monitor, type): [kind planted, type seen, rows]. */
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
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  }
  const end = Date.now()
  // A last look: every incident row of the planted monitors, once the engine had time to write duplicates.
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const rows = await client.query<{ monitor_id: string; type: string; n: string }>(
    `select monitor_id, type, count(*)::text as n from incidents where monitor_id = any($1::uuid[]) group by 1, 2`,
    [ids]
  )
  const seen: Array<Seen> = []
  for (const p of planted) {
    const s = firstSeen.get(p.id)
    if (s === undefined) continue
    seen.push({ id: p.id, kind: p.kind, deadline: p.deadline, firstSeen: s.at, createdAt: s.createdAt, latencyMs: s.at - p.deadline })
  }
  return {
    seen,
    rows: rows.rows.map((r) => ({ id: r.monitor_id, type: r.type, n: Number(r.n) })),
    polls,
    meanPollMs: polls > 1 ? (end - begin) / polls : 0,
    maxPollGapMs: maxGap
  }
}
