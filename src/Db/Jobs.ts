import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Schedule } from "effect"
import { Background } from "../Cluster/Cluster.js"
import { Database } from "./Database.js"

/**
 * The service watches the TimescaleDB background jobs on the relations it owns (retention and
 * compression of `runs`, retention of the duration and health rollups: src/Db/Policies.ts). A job that fails
 * does so inside TimescaleDB's scheduler, where nobody looks: the watcher reads
 * `timescaledb_information.jobs`, `job_stats` and the newest error of each job from `job_history`
 * every JOB_WATCH_INTERVAL, and logs a warning naming the job and its error when its failure count
 * grew (at most once per job per JOB_WARNING_INTERVAL). GET /api/admin/storage shows the same state.
 * docs/operations.md, "TimescaleDB background jobs".
 */

/** How often the watcher reads the jobs' state (TimescaleDB modes only: nothing ticks on plain PostgreSQL). */
export const JOB_WATCH_INTERVAL = Duration.minutes(5)
/** At most one warning per job in this time, however often it fails. */
export const JOB_WARNING_INTERVAL = Duration.hours(1)

/** The relations whose jobs are the service's (schema `public`). */
export const WATCHED_RELATIONS = ["runs", "run_duration_hourly_cagg", "run_health_hourly_cagg"] as const

export type JobKind = "compression" | "retention" | "refresh" | "reorder" | "other"

export interface JobError {
  readonly at: Date | null
  readonly message: string
  readonly sqlState: string | null
}

export interface JobState {
  readonly jobId: number
  readonly kind: JobKind
  readonly procedure: string
  readonly relation: string
  readonly scheduleIntervalSeconds: number | null
  readonly config: unknown
  /** `scheduled`, `running` or `paused` (TimescaleDB's job_status). */
  readonly status: string
  readonly lastRunStartedAt: Date | null
  /** `succeeded`, `failed`, or null before the first run. */
  readonly lastRunStatus: "succeeded" | "failed" | null
  readonly lastSuccessAt: Date | null
  readonly nextStartAt: Date | null
  readonly totalRuns: number
  readonly totalFailures: number
  readonly lastError: JobError | null
  /** What a known error means, or null. */
  readonly hint: string | null
}

/**
 * PostgreSQL 15.20 (and, presumably, the 16/17/18 minors released with it) refuses to drop a portal
 * that was never started; TimescaleDB's job runner (job_execute in tsl/src/bgw_policy/job.c, up to
 * 2.29.2 at least) creates such a portal in every background worker. The job's work is committed
 * before the error, but each run is recorded as failed.
 */
export const PORTAL_CHECK_ERROR = /cannot drop portal .* while it is being set up/

export const portalCheckHint = (jobId: number) =>
  "TimescaleDB's background worker trips over a check that newer PostgreSQL minor releases added " +
  "(seen on 15.20): the job did its work, then its run was recorded as failed. " +
  `CALL run_job(${jobId}) runs it in the foreground, where it succeeds; see docs/operations.md, "TimescaleDB background jobs".`

const kindOf = (procedure: string): JobKind => {
  switch (procedure) {
    case "policy_compression":
      return "compression"
    case "policy_retention":
      return "retention"
    case "policy_refresh_continuous_aggregate":
      return "refresh"
    case "policy_reorder":
      return "reorder"
    default:
      return "other"
  }
}

interface JobRow {
  readonly job_id: number
  readonly proc_schema: string
  readonly proc_name: string
  readonly relation: string
  readonly schedule_seconds: number | null
  readonly config: unknown
  readonly job_status: string | null
  readonly last_run_status: string | null
  readonly last_run_started_at: Date | null
  readonly last_success_at: Date | null
  readonly next_start: Date | null
  readonly total_runs: number
  readonly total_failures: number
  readonly error_at: Date | null
  readonly err_message: string | null
  readonly sqlerrcode: string | null
}

const toState = (row: JobRow): JobState => {
  const lastError = row.err_message === null
    ? null
    : { at: row.error_at, message: row.err_message, sqlState: row.sqlerrcode }
  return {
    jobId: row.job_id,
    kind: kindOf(row.proc_name),
    procedure: `${row.proc_schema}.${row.proc_name}`,
    relation: row.relation,
    scheduleIntervalSeconds: row.schedule_seconds,
    config: row.config,
    status: (row.job_status ?? "scheduled").toLowerCase(),
    lastRunStartedAt: row.last_run_started_at,
    lastRunStatus: row.last_run_status === "Success" ? "succeeded" : row.last_run_status === "Failed" ? "failed" : null,
    lastSuccessAt: row.last_success_at,
    nextStartAt: row.next_start,
    totalRuns: row.total_runs,
    totalFailures: row.total_failures,
    lastError,
    hint: lastError !== null && PORTAL_CHECK_ERROR.test(lastError.message) ? portalCheckHint(row.job_id) : null
  }
}

/** What the watcher remembers of a job: its failure count when it last warned (or first saw it), and when it warned. */
export interface Seen {
  readonly failures: number
  readonly warnedAt: number | null
}

/**
 * Which jobs to warn about now (pure): a job whose failure count grew since the last warning (on
 * first sight: whose last run failed), unless it was warned about less than `interval` ago; that
 * growth is then kept for the next warning. Jobs that are gone are forgotten; a count that went down
 * (statistics reset) is taken as it is.
 */
export const jobWarnings = (
  seen: ReadonlyMap<number, Seen>,
  jobs: ReadonlyArray<JobState>,
  now: number,
  interval: number = Duration.toMillis(JOB_WARNING_INTERVAL)
): { readonly seen: ReadonlyMap<number, Seen>; readonly warn: ReadonlyArray<{ readonly job: JobState; readonly newFailures: number }> } => {
  const next = new Map<number, Seen>()
  const warn: Array<{ job: JobState; newFailures: number }> = []
  for (const job of jobs) {
    const known = seen.get(job.jobId)
    if (known === undefined) {
      const failing = job.lastRunStatus === "failed"
      next.set(job.jobId, { failures: job.totalFailures, warnedAt: failing ? now : null })
      if (failing) warn.push({ job, newFailures: job.totalFailures })
      continue
    }
    const base = Math.min(known.failures, job.totalFailures)
    const quiet = known.warnedAt !== null && now - known.warnedAt < interval
    if (job.totalFailures > base && !quiet) {
      next.set(job.jobId, { failures: job.totalFailures, warnedAt: now })
      warn.push({ job, newFailures: job.totalFailures - base })
    } else {
      next.set(job.jobId, { failures: base, warnedAt: known.warnedAt })
    }
  }
  return { seen: next, warn }
}

export class JobWatch extends Effect.Service<JobWatch>()("jobmon/JobWatch", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { mode, timescaleVersion } = yield* Database

    /** The watched jobs' state, read now; none without TimescaleDB. */
    const jobs: Effect.Effect<ReadonlyArray<JobState>> = mode === "postgresql"
      ? Effect.succeed([])
      : sql<JobRow>`
          select j.job_id::int as job_id, j.proc_schema, j.proc_name, j.hypertable_name as relation,
                 extract(epoch from j.schedule_interval)::float8 as schedule_seconds, j.scheduled, j.config,
                 s.job_status, s.last_run_status,
                 case when isfinite(s.last_run_started_at) then s.last_run_started_at end as last_run_started_at,
                 case when isfinite(s.last_successful_finish) then s.last_successful_finish end as last_success_at,
                 case when j.scheduled and isfinite(s.next_start) then s.next_start end as next_start,
                 coalesce(s.total_runs, 0)::float8 as total_runs,
                 coalesce(s.total_failures, 0)::float8 as total_failures,
                 e.start_time as error_at, e.err_message, e.sqlerrcode
          from timescaledb_information.jobs j
          left join timescaledb_information.job_stats s on s.job_id = j.job_id
          left join lateral (
            select h.start_time, h.err_message, h.sqlerrcode
            from timescaledb_information.job_history h
            where h.job_id = j.job_id and h.err_message is not null
            order by h.id desc
            limit 1
          ) e on true
          where j.hypertable_schema = 'public' and j.hypertable_name = any(${[...WATCHED_RELATIONS]}::text[])
          order by j.job_id`.pipe(
        Effect.map((rows) => rows.map(toState)),
        Effect.orDie,
        Effect.withSpan("JobWatch.jobs")
      )

    let seen: ReadonlyMap<number, Seen> = new Map()

    const warn = (job: JobState, newFailures: number) => {
      const error = job.lastError === null
        ? "no error message recorded"
        : `${job.lastError.message}${job.lastError.sqlState === null ? "" : ` (SQLSTATE ${job.lastError.sqlState})`}`
      return Effect.logWarning(
        `TimescaleDB job ${job.jobId} (${job.kind} of ${job.relation}, ${job.procedure}) failed: ${error}; ` +
          `${newFailures} new failure${newFailures === 1 ? "" : "s"}, ${job.totalFailures} of ${job.totalRuns} runs failed in all` +
          `${job.lastRunStartedAt === null ? "" : `, last run started ${job.lastRunStartedAt.toISOString()}`}. ` +
          (job.hint ?? "GET /api/admin/storage shows every job's state; docs/operations.md, \"TimescaleDB background jobs\".")
      )
    }

    /** One look at the jobs, as the background fiber takes it: the warnings of `jobWarnings`; the jobs warned about. */
    const check = Effect.gen(function*() {
      const current = yield* jobs
      const now = yield* Clock.currentTimeMillis
      const decided = jobWarnings(seen, current, now)
      seen = decided.seen
      for (const { job, newFailures } of decided.warn) yield* warn(job, newFailures)
      return decided.warn.map(({ job }) => job.jobId)
    }).pipe(Effect.withSpan("JobWatch.check"))

    if (mode !== "postgresql") {
      // Once across the instances: one warning per failing job, not one per instance.
      const background = yield* Background
      yield* background.singleton(
        "timescaledb-job-watch",
        check.pipe(
          Effect.catchAllCause((cause) => Effect.logWarning("TimescaleDB job watcher: could not read the jobs; trying again later", cause)),
          Effect.repeat(Schedule.spaced(JOB_WATCH_INTERVAL)),
          Effect.asVoid
        )
      )
    }

    return {
      mode,
      timescaleVersion,
      jobs,
      /** One look at the jobs, as the background fiber takes it (a warning per failing job, rate-limited). */
      check
    } as const
  })
}) {}
