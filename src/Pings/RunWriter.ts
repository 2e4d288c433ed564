import type pg from "pg"
import { EVENTS_LOCK_KEY } from "../Events/EventsRepo.js"
import { pingReceived } from "../Events/Payloads.js"
import type { RunRow } from "./Pairing.js"

/**
 * The group-commit writer. Rows from many monitors collect while the previous batch is being
 * written and go to PostgreSQL in one prepared statement (multi-row `unnest` upsert) the moment that
 * batch commits: no timer, batches grow with load. Only runs are written here; what a ping changes
 * on its monitor (lastPingAt, status) is written by the engine, coalesced (src/Engine/Engine.ts). Every caller is answered after the commit that
 * holds its row, so an acknowledged ping is durable. Plain callbacks, no fibers: this is the hot path.
 */

export const MAX_BATCH = 2000

const UPSERT = `
with input as (
  select * from unnest(
    $1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::float8[], $6::bool[], $7::float8[], $8::int8[],
    $9::int4[], $10::text[], $11::bool[], $12::int4[]
  ) as t(id, monitor_id, org_id, status, started_ms, start_inferred, finished_ms, duration_ms,
         exit_code, output, output_truncated, output_bytes)
)
insert into runs (id, monitor_id, org_id, status, started_at, start_inferred, finished_at, duration_ms,
                  exit_code, output, output_truncated, output_bytes)
select id, monitor_id, org_id, status, to_timestamp(started_ms / 1000.0), start_inferred,
       to_timestamp(finished_ms / 1000.0), duration_ms, exit_code, output, output_truncated, output_bytes
from input
on conflict (id, started_at) do update set
  status = excluded.status, finished_at = excluded.finished_at, duration_ms = excluded.duration_ms,
  exit_code = excluded.exit_code, output = excluded.output, output_truncated = excluded.output_truncated,
  output_bytes = excluded.output_bytes`

/**
 * The same, also recording one `ping.received` event per ping (docs/events.md) in the same
 * statement, under the events table's ordering lock (src/Events/EventsRepo.ts).
 */
const UPSERT_WITH_EVENTS = UPSERT.replace(
  "\n)\ninsert into runs",
  `
), ping_events as (
  insert into events (org_id, type, created_at, data, monitor_ids)
  select e.org_id, 'ping.received', e.created_at, e.data, array[e.monitor_id]
  from (select pg_advisory_xact_lock(${EVENTS_LOCK_KEY})) lock,
       jsonb_to_recordset($13::jsonb) as e(org_id uuid, monitor_id uuid, created_at timestamptz, data jsonb)
  returning 1
)
insert into runs`
)

/** One ping's event row; the payload is pingReceived's (src/Events/Payloads.ts). */
const pingEvent = (row: RunRow) => {
  const input = pingReceived(row.orgId, {
    monitorId: row.monitorId,
    runId: row.id,
    kind: row.status === "RUNNING" ? "start" : row.status === "SUCCESS" ? "success" : "fail",
    at: row.pingAt,
    status: row.status,
    durationMs: row.durationMs,
    exitCode: row.exitCode
  })
  return { org_id: row.orgId, monitor_id: row.monitorId, created_at: new Date(row.pingAt).toISOString(), data: input.data }
}

export type WriteCallback = (error: Error | undefined) => void

interface Pending {
  readonly row: RunRow
  readonly done: WriteCallback
}

export interface RunWriterStats {
  batches: number
  rows: number
  largestBatch: number
}

export class RunWriter {
  private pending: Array<Pending> = []
  private flushing = false
  private closed = false
  private idleWaiters: Array<() => void> = []
  readonly stats: RunWriterStats = { batches: 0, rows: 0, largestBatch: 0 }
  /** Record a ping.received event per ping (only while someone subscribes: it is high volume). */
  pingEvents = false

  constructor(private readonly pool: pg.Pool) {}

  write(row: RunRow, done: WriteCallback): void {
    if (this.closed) return done(new Error("the run writer is shut down"))
    this.pending.push({ row, done })
    if (!this.flushing) this.flush()
  }

  /** Resolves once everything accepted so far is committed (or failed). */
  drain(): Promise<void> {
    if (!this.flushing && this.pending.length === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  close(): Promise<void> {
    this.closed = true
    return this.drain()
  }

  private flush(): void {
    const batch = this.pending.length <= MAX_BATCH ? this.pending : this.pending.slice(0, MAX_BATCH)
    this.pending = this.pending.length <= MAX_BATCH ? [] : this.pending.slice(MAX_BATCH)
    this.flushing = true
    // One row per run: a start and its success in the same batch collapse to the later state
    // (rows carry the run's whole state, so the last one is the truth).
    const byId = new Map<string, RunRow>()
    for (const { row } of batch) byId.set(row.id, row)
    const rows = [...byId.values()]
    const n = rows.length
    const cols: Array<Array<unknown>> = Array.from({ length: 12 }, () => new Array(n))
    for (let i = 0; i < n; i++) {
      const r = rows[i]!
      cols[0]![i] = r.id
      cols[1]![i] = r.monitorId
      cols[2]![i] = r.orgId
      cols[3]![i] = r.status
      cols[4]![i] = r.startedAt
      cols[5]![i] = r.startInferred
      cols[6]![i] = r.finishedAt
      cols[7]![i] = r.durationMs
      cols[8]![i] = r.exitCode
      cols[9]![i] = r.output
      cols[10]![i] = r.outputTruncated
      cols[11]![i] = r.outputBytes
    }
    const query = this.pingEvents
      ? { name: "jobmon_runs_upsert_events", text: UPSERT_WITH_EVENTS, values: [...cols, JSON.stringify(batch.map(({ row }) => pingEvent(row)))] }
      : { name: "jobmon_runs_upsert", text: UPSERT, values: cols }
    this.pool.query(query).then(
      () => this.settle(batch, undefined, n),
      (error: Error) => this.settle(batch, error, 0)
    )
  }

  private settle(batch: ReadonlyArray<Pending>, error: Error | undefined, rows: number): void {
    if (error === undefined) {
      this.stats.batches++
      this.stats.rows += rows
      if (rows > this.stats.largestBatch) this.stats.largestBatch = rows
    }
    for (const p of batch) {
      try {
        p.done(error)
      } catch {
        // a caller's callback must not stop the writer
      }
    }
    this.flushing = false
    if (this.pending.length > 0) this.flush()
    else {
      const waiters = this.idleWaiters
      this.idleWaiters = []
      for (const w of waiters) w()
    }
  }
}
