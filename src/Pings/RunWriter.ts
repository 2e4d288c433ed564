import { performance } from "node:perf_hooks"
import type pg from "pg"
import { encodePingNews, NEWS_CHANNEL } from "../Cluster/News.js"
import { PING_EVENTS_LOCK_KEY } from "../Events/EventsRepo.js"
import type { RunRow } from "./Pairing.js"

/**
 * The group-commit writer. Rows from many monitors collect while the previous batch of their lane
 * is being written and go to PostgreSQL in one prepared statement (multi-row `unnest` upsert) the
 * moment that batch commits; an idle lane waits only for the end of the event-loop turn, so the
 * pings that arrived together share a batch. No timer: batches grow with load. Only runs (and, while
 * subscribed, ping events) are written here; what a ping changes on its monitor (lastPingAt,
 * status) is written by the engine, coalesced (src/Engine/MonitorWriter.ts). Every caller is answered after
 * the commit that holds its row, so an acknowledged ping is durable. Plain callbacks, no fibers:
 * this is the hot path.
 */

export const MAX_BATCH = 2000

const RUN_COLUMNS_SQL = `id, monitor_id, org_id, status, started_at, start_inferred, finished_at, duration_ms,
                  exit_code, output, output_truncated, output_bytes`
const RUN_VALUES_SQL = `id, monitor_id, org_id, status, to_timestamp(started_ms / 1000.0), start_inferred,
       to_timestamp(finished_ms / 1000.0), duration_ms, exit_code, output, output_truncated, output_bytes`

/**
 * The batch's runs. A row that starts a run (a start, or a finish whose start is inferred) is new:
 * its id was made by this ping, so it goes in with a plain INSERT; only a finish of a run started
 * earlier goes through `ON CONFLICT … DO UPDATE`, whose speculative insertion made the statement
 * measurably slower when every row took it (docs/performance.md#figures-behind-code-comments). A start and its
 * finish in one batch are one row here (the finish), which the upsert inserts. `extra` adds CTEs
 * after `input` (the ping events).
 */
const runsStatement = (extra: string, newsParam?: number) => `
with input as (
  select t.* from unnest(
    $1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::float8[], $6::bool[], $7::float8[], $8::int8[],
    $9::int4[], $10::text[], $11::bool[], $12::int4[]
  ) as t(id, monitor_id, org_id, status, started_ms, start_inferred, finished_ms, duration_ms,
         exit_code, output, output_truncated, output_bytes)${newsParam === undefined ? "" : `
  cross join (select count(pg_notify('${NEWS_CHANNEL}', n)) from unnest($${newsParam}::text[]) as n) as news`}
)${extra}, fresh as (
  insert into runs (${RUN_COLUMNS_SQL})
  select ${RUN_VALUES_SQL}
  from input
  where status = 'RUNNING' or start_inferred
)
insert into runs (${RUN_COLUMNS_SQL})
select ${RUN_VALUES_SQL}
from input
where not (status = 'RUNNING' or start_inferred)
on conflict (id, started_at) do update set
  status = excluded.status, finished_at = excluded.finished_at, duration_ms = excluded.duration_ms,
  exit_code = excluded.exit_code, output = excluded.output, output_truncated = excluded.output_truncated,
  output_bytes = excluded.output_bytes`

const UPSERT = runsStatement("")

/**
 * Cluster mode: the same statements, also notifying the other instances of the runs they commit
 * (src/Cluster/News.ts), in the same transaction: the notifications go out at commit, in commit
 * order, and never for a batch that rolled back. The extra parameter is the payloads' text array.
 */
const UPSERT_NEWS = runsStatement("", 13)

/**
 * The same, also recording one `ping.received` event per ping (docs/events.md) in the same
 * statement: a narrow row of `ping_events` (sql/0011_ping_events.sql) from seven array columns of
 * the pings in arrival order ($13…$19). The payload is built when the event is read (the view
 * `ping_received_events`), not per ping. The rows are drawn under a lock of their own held until
 * commit, so `seq` becomes visible in order (the webhook feed reads "seq > N") even with several
 * writer lanes.
 */
const pingEventsCte = `, recorded as (
  insert into ping_events (org_id, monitor_id, run_id, status, at, duration_ms, exit_code)
  select e.org_id, e.monitor_id, e.run_id, e.status, to_timestamp(e.at_ms / 1000.0), e.duration_ms, e.exit_code
  from (select pg_advisory_xact_lock(${PING_EVENTS_LOCK_KEY})) lock,
       unnest($13::uuid[], $14::uuid[], $15::uuid[], $16::text[], $17::float8[], $18::int8[], $19::int4[])
         with ordinality as e(run_id, monitor_id, org_id, status, at_ms, duration_ms, exit_code, ord)
  order by e.ord
  returning 1
)`
const UPSERT_WITH_EVENTS = runsStatement(pingEventsCte)
const UPSERT_WITH_EVENTS_NEWS = runsStatement(pingEventsCte, 20)

/** Array literals of `width` columns over `items`: `fill(item, i, cols)` sets element i of each column. */
const arrayLiterals = <T>(items: ReadonlyArray<T>, width: number, fill: (item: T, i: number, cols: Array<Array<string>>) => void): Array<string> => {
  const cols: Array<Array<string>> = []
  for (let c = 0; c < width; c++) cols.push(new Array<string>(items.length))
  for (let i = 0; i < items.length; i++) fill(items[i]!, i, cols)
  return cols.map((col) => `{${col.join(",")}}`)
}

/** A number element of an array literal, or NULL. */
const numberOrNull = (n: number | null): string => (n === null ? "NULL" : String(n))

/** The event columns of UPSERT_WITH_EVENTS: one element per ping, in arrival order. */
const eventColumnsOf = (pending: ReadonlyArray<Pending>): Array<string> =>
  arrayLiterals(pending, 7, ({ row: r }, i, cols) => {
    cols[0]![i] = r.id
    cols[1]![i] = r.monitorId
    cols[2]![i] = r.orgId
    cols[3]![i] = r.status
    cols[4]![i] = String(r.pingAt)
    cols[5]![i] = numberOrNull(r.durationMs)
    cols[6]![i] = numberOrNull(r.exitCode)
  })

/**
 * PostgreSQL array literals of the batch's columns, built here rather than by `pg` from arrays:
 * `pg` quotes and escapes element by element through several calls, which was the largest
 * allocation of the ping path (docs/performance.md#figures-behind-code-comments). Ids are UUIDs and statuses plain words,
 * so only the output text needs quoting.
 */
const columnsOf = (rows: ReadonlyArray<RunRow>): Array<string> =>
  arrayLiterals(rows, 12, (r, i, cols) => {
    cols[0]![i] = r.id
    cols[1]![i] = r.monitorId
    cols[2]![i] = r.orgId
    cols[3]![i] = r.status
    cols[4]![i] = String(r.startedAt)
    cols[5]![i] = r.startInferred ? "t" : "f"
    cols[6]![i] = numberOrNull(r.finishedAt)
    cols[7]![i] = numberOrNull(r.durationMs)
    cols[8]![i] = numberOrNull(r.exitCode)
    cols[9]![i] = r.output === null ? "NULL" : quoteElement(r.output)
    cols[10]![i] = r.outputTruncated ? "t" : "f"
    cols[11]![i] = numberOrNull(r.outputBytes)
  })

const NEEDS_ESCAPE = /["\\]/g

/** A text element of an array literal: double-quoted, `"` and `\` backslash-escaped. */
export const quoteElement = (text: string): string =>
  `"${text.replace(NEEDS_ESCAPE, "\\$&")}"`

/** PostgreSQL refused the values (SQLSTATE classes 22 data exception, 23 integrity constraint). */
const isDataError = (error: Error & { code?: string }): boolean =>
  typeof error.code === "string" && (error.code.startsWith("22") || error.code.startsWith("23"))

/**
 * PostgreSQL rolled the statement back to break a deadlock (40P01) or a serialization conflict
 * (40001): nothing was written, and the same statement may simply run again. (The rollup's row
 * triggers mark (monitor, hour) keys in the batch's order while a statistics query claims them in
 * key order: rare, but possible at the turn of an hour.)
 */
const isTransient = (error: Error & { code?: string }): boolean => error.code === "40P01" || error.code === "40001"

/** How often a batch is sent again after a transient failure before its pings are answered 503. */
export const TRANSIENT_RETRIES = 3

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

/** Batches in flight at once, one per lane (a monitor's pings always use the same lane). */
export const DEFAULT_LANES = 1

interface Lane {
  pending: Array<Pending>
  /** A batch is being written. */
  flushing: boolean
  /** A flush is scheduled (for the end of this turn of the event loop, or when the spacing allows). */
  scheduled: boolean
  /** When the last batch was sent (performance.now(), ms): batches start at least `lingerMs` apart. */
  lastStart: number
  /**
   * The lane's own connection, held between batches: a query on a held client goes to the socket
   * at once (the pool hands out clients on a later tick), so the next batch is on its way to
   * PostgreSQL before the answers of the last one are written.
   */
  client: pg.PoolClient | undefined
}

type QueryCallback = (error: (Error & { code?: string }) | undefined) => void

/**
 * The lane holds `client` from now on. A connection that breaks between batches must not take the
 * process down with it. (A function of its own: a handler made inside `send` would keep the first
 * batch, and every answer callback in it, alive as long as the connection.)
 */
const adopt = (lane: Lane, client: pg.PoolClient): void => {
  client.on("error", () => {
    if (lane.client === client) {
      lane.client = undefined
      client.release(true)
    }
  })
  lane.client = client
}

/** The lane of a monitor: a hash of its id (the last characters of a UUID are random). */
const laneOf = (monitorId: string, lanes: number): number => {
  if (lanes === 1) return 0
  let h = 0
  for (let i = monitorId.length - 4; i < monitorId.length; i++) h = (h * 31 + monitorId.charCodeAt(i)) | 0
  return (h >>> 0) % lanes
}

/**
 * The pings that record a ping.received event: every monitor's of these organizations (one of their
 * webhooks subscribes with no monitor filter), and these monitors' (named by a subscribed webhook's
 * filter). Two Set lookups per ping, no query.
 */
export interface PingEventScope {
  readonly orgs: ReadonlySet<string>
  readonly monitors: ReadonlySet<string>
}

export class RunWriter {
  private readonly lanes: Array<Lane>
  private closed = false
  private idleWaiters: Array<() => void> = []
  readonly stats: RunWriterStats = { batches: 0, rows: 0, largestBatch: 0 }
  /**
   * Which pings get a ping.received event (only while someone subscribes: it is high volume): none,
   * or those of the organizations and monitors of the scope (Intake.setPingEvents).
   */
  pingEvents: "none" | PingEventScope = "none"

  /** Cluster mode: this instance's origin tag, and every batch notifies its runs (src/Cluster/News.ts). */
  newsOrigin: string | undefined = undefined

  /**
   * The least time between the starts of two batches of a lane, ms (0: none). A ping that finds the
   * lane idle for that long is written at once (the end of this turn of the event loop); under load
   * the pings of the next `lingerMs` wait and go in one batch. Cluster mode spaces batches: each
   * instance takes a share of the pings, and every commit that carries news wakes every instance's
   * LISTEN session (docs/performance.md, "Several instances"); a quiet monitor's ping is not delayed.
   */
  lingerMs = 0

  /**
   * `lanes` batches may be in flight at once, each on its own connection. More than one only pays
   * where a commit takes milliseconds (network storage): on a local disk the service's own thread
   * is the limit, and each lane more halves the batches (docs/performance.md). A monitor always
   * writes through the same lane, so its pings are committed, and answered, in the order they
   * arrived.
   */
  constructor(private readonly pool: pg.Pool, lanes: number = DEFAULT_LANES) {
    this.lanes = Array.from({ length: Math.max(1, Math.floor(lanes)) }, () => ({ pending: [], flushing: false, scheduled: false, lastStart: Number.NEGATIVE_INFINITY, client: undefined }))
  }

  write(row: RunRow, done: WriteCallback): void {
    if (this.closed) return done(new Error("the run writer is shut down"))
    const lane = this.lanes[laneOf(row.monitorId, this.lanes.length)]!
    lane.pending.push({ row, done })
    if (!lane.flushing && !lane.scheduled) this.schedule(lane)
  }

  /**
   * An idle lane writes at the end of this turn of the event loop (setImmediate runs after the I/O
   * callbacks of the turn): the pings that arrived together go in one batch, instead of the first
   * alone and the others waiting for its commit. With `lingerMs`, not before that long after the
   * last batch started.
   */
  private schedule(lane: Lane): void {
    lane.scheduled = true
    const go = () => {
      lane.scheduled = false
      if (!lane.flushing && lane.pending.length > 0) this.flush(lane)
    }
    const wait = this.lingerMs > 0 ? lane.lastStart + this.lingerMs - performance.now() : 0
    if (wait > 0) setTimeout(go, Math.ceil(wait))
    else setImmediate(go)
  }

  /**
   * Called once the callers of a batch have all been answered (see Intake: it replies to every
   * ping of the batch first and hands them to the incident engine after).
   */
  afterSettle: () => void = () => {}

  /**
   * Called once per committed batch with its runs and the seconds from sending it to its commit
   * (the service's metrics: src/Metrics/Metrics.ts). Keep it cheap.
   */
  afterCommit: (rows: number, seconds: number) => void = () => {}

  /**
   * Called once a batch that recorded ping.received events has committed and been answered (the
   * delivery worker's wake-up: ping events send no notification). Keep it cheap.
   */
  afterPingEvents: () => void = () => {}

  private idle(): boolean {
    for (const lane of this.lanes) if (lane.flushing || lane.scheduled || lane.pending.length > 0) return false
    return true
  }

  /** Resolves once everything accepted so far is committed (or failed). */
  drain(): Promise<void> {
    if (this.idle()) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /** Stops taking rows, waits for what was accepted, and gives the lanes' connections back to the pool. */
  async close(): Promise<void> {
    this.closed = true
    await this.drain()
    for (const lane of this.lanes) {
      const client = lane.client
      lane.client = undefined
      client?.release()
    }
  }

  /**
   * Runs a query on the lane's connection, taking one from the pool first when the lane has none.
   * A connection that failed for anything but the data (SQLSTATE classes 22 and 23: the batch is
   * then split) is destroyed, and the next batch takes a new one.
   */
  private send(lane: Lane, query: pg.QueryConfig, done: QueryCallback): void {
    const run = (client: pg.PoolClient) =>
      client.query(query, (failure: (Error & { code?: string }) | null | undefined) => {
        const error = failure ?? undefined
        if (error !== undefined && !isDataError(error) && !isTransient(error) && lane.client === client) {
          lane.client = undefined
          client.release(error)
        }
        done(error)
      })
    if (lane.client !== undefined) return void run(lane.client)
    this.pool.connect((error, client) => {
      if (error || client === undefined) return done(error ?? new Error("no connection to PostgreSQL"))
      adopt(lane, client)
      run(client)
    })
  }

  private flush(lane: Lane): void {
    const batch = lane.pending.length <= MAX_BATCH ? lane.pending : lane.pending.slice(0, MAX_BATCH)
    lane.pending = lane.pending.length <= MAX_BATCH ? [] : lane.pending.slice(MAX_BATCH)
    lane.flushing = true
    lane.lastStart = performance.now()
    this.writeBatch(lane, batch, () => this.afterBatch(lane))
  }

  /**
   * Writes one batch and answers its callers. A batch that PostgreSQL refuses for its data (one
   * ping's values out of range, say) is split in halves, written one after the other, so that one
   * bad ping fails alone instead of taking every ping of its batch with it (arrival order kept). A
   * batch rolled back for a deadlock or a serialization conflict is sent again, up to
   * TRANSIENT_RETRIES times.
   */
  private writeBatch(lane: Lane, batch: ReadonlyArray<Pending>, then: () => void, attempt = 0): void {
    // One row per run: a start and its success in the same batch collapse to the later state
    // (rows carry the run's whole state, so the last one is the truth).
    let rows: Array<RunRow> = batch.map((p) => p.row)
    const byId = new Map<string, RunRow>()
    for (const row of rows) byId.set(row.id, row)
    if (byId.size < rows.length) rows = [...byId.values()]
    const n = rows.length
    const only = this.pingEvents
    const events = only === "none"
      ? []
      : batch.filter((p) => only.orgs.has(p.row.orgId) || only.monitors.has(p.row.monitorId))
    const origin = this.newsOrigin
    const query = origin === undefined
      ? events.length > 0
        ? { name: "jobmon_runs_upsert_events", text: UPSERT_WITH_EVENTS, values: [...columnsOf(rows), ...eventColumnsOf(events)] }
        : { name: "jobmon_runs_upsert", text: UPSERT, values: columnsOf(rows) }
      : events.length > 0
      ? {
        name: "jobmon_runs_upsert_events_news",
        text: UPSERT_WITH_EVENTS_NEWS,
        values: [...columnsOf(rows), ...eventColumnsOf(events), encodePingNews(origin, rows)]
      }
      : { name: "jobmon_runs_upsert_news", text: UPSERT_NEWS, values: [...columnsOf(rows), encodePingNews(origin, rows)] }
    // Latency is measured on the monotonic clock: it is an elapsed time, not the domain's time.
    const sentAt = performance.now()
    this.send(lane, query, (error) => {
      if (error === undefined) {
        const seconds = (performance.now() - sentAt) / 1000
        // Committed. The next batch goes to PostgreSQL first (it holds only pings that arrived
        // while this one was in flight), then this one's callers are answered while it is written.
        then()
        try {
          this.afterCommit(n, seconds)
        } catch {
          // the metrics must not stop the writer
        }
        this.settle(batch, undefined, n)
        if (events.length > 0) this.signalPingEvents()
        return
      }
      if (isTransient(error) && attempt < TRANSIENT_RETRIES) return this.writeBatch(lane, batch, then, attempt + 1)
      if (isDataError(error) && batch.length > 1) {
        const half = batch.length >> 1
        return this.writeBatch(lane, batch.slice(0, half), () => this.writeBatch(lane, batch.slice(half), then))
      }
      this.settle(batch, error, 0)
      then()
    })
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
    try {
      this.afterSettle()
    } catch {
      // nor may what follows the answers
    }
  }

  private signalPingEvents(): void {
    try {
      this.afterPingEvents()
    } catch {
      // nor may the wake-up
    }
  }

  private afterBatch(lane: Lane): void {
    lane.flushing = false
    if (lane.pending.length > 0) {
      // What arrived while the batch was in flight goes next: at once, or when the spacing allows.
      if (this.lingerMs <= 0) this.flush(lane)
      else if (!lane.scheduled) this.schedule(lane)
    } else if (this.idle()) {
      const waiters = this.idleWaiters
      this.idleWaiters = []
      for (const w of waiters) w()
    }
  }
}
