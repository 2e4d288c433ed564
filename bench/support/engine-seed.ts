import type pg from "pg"

/**
 * The idle fleet for `npm run bench:engine`, written straight into the database (the service is
 * stopped meanwhile): `count` monitors in one `insert … select generate_series`, some open runs
 * with a history of successful runs, and some active incidents, so that the start-up rebuild loads
 * all three. Nothing here falls due while the benchmark runs: every expected time is at least
 * `quietMinutes` ahead, every open run is far from its LATE limit.
 */

export interface SeedOptions {
  readonly orgId: string
  readonly count: number
  /** Open RUNNING runs (one per monitor). */
  readonly openRuns: number
  /** Successful past runs per monitor with an open run (their LATE limit is learned from them). */
  readonly historyPerOpenRun: number
  /** Active (OPEN or ACKNOWLEDGED) incidents. */
  readonly activeIncidents: number
  /** No expected time of the fleet falls due sooner than this. */
  readonly quietMinutes: number
}

export interface SeedResult {
  readonly monitors: number
  readonly paused: number
  readonly bySchedule: ReadonlyArray<{ readonly type: string; readonly expression: string; readonly n: number }>
  readonly zones: ReadonlyArray<string>
  readonly openRuns: number
  readonly learnedLimit: number
  readonly historyRuns: number
  readonly activeIncidents: number
  readonly earliestDeadline: Date | null
  readonly ms: number
}

/** Schedules by g mod 6: even g are intervals, odd g cron (the zone rotates over ZONES). */
const SCHEDULES = ["5m", "*/5 * * * *", "1h", "0 * * * *", "1d", "30 2 * * *"] as const
const ZONES = ["UTC", "Europe/London", "America/New_York", "Asia/Kolkata", "Australia/Sydney"] as const

export const seedFleet = async (client: pg.Client, o: SeedOptions): Promise<SeedResult> => {
  const started = Date.now()
  // 1 % paused, 2 % never pinged (NEW), 4 % whose last run failed, 5 % with an SLA, 10 % with a
  // maxRuntimeSeconds of 2 h; grace 60 s everywhere.
  await client.query(
    `insert into monitors (org_id, name, schedule_type, schedule_expression, timezone, grace_seconds,
       max_runtime_seconds, sla, tags, paused, status, last_ping_at, next_expected_at, last_run_status,
       created_at, updated_at)
     select $1::uuid,
       'bench monitor ' || g,
       case when g % 2 = 0 then 'interval' else 'cron' end,
       ($2::text[])[1 + g % 6],
       case when g % 2 = 0 then 'UTC' else ($3::text[])[1 + (g / 6) % 5] end,
       60,
       case when g % 10 = 5 then 7200 end,
       case when g % 20 = 3 then '{"durationTarget":"p95","maxDurationMs":600000}'::jsonb end,
       array['bench', 'team-' || (g % 17)],
       g % 100 = 99,
       case when g % 100 = 99 then 'PAUSED' when g % 50 = 7 then 'NEW' when g % 25 = 4 then 'FAILING' else 'OK' end,
       case when g % 50 = 7 then null else now() - random() * interval '1 hour' end,
       case when g % 100 = 99 then null else now() + make_interval(mins => $4) + random() * interval '1 hour' end,
       case when g % 50 = 7 then null when g % 25 = 4 then 'FAIL' else 'SUCCESS' end,
       now() - interval '90 days' + g * interval '1 second',
       now()
     from generate_series(1, $5::int) g`,
    [o.orgId, SCHEDULES, ZONES, o.quietMinutes, o.count]
  )

  // Open runs, started in the last 10 minutes, on active monitors with an occurrence pending.
  await client.query(
    `create temporary table bench_open as
       select id as monitor_id, org_id, max_runtime_seconds from monitors
       where org_id = $1 and not paused and last_ping_at is not null
       order by md5(id::text) limit $2`,
    [o.orgId, o.openRuns]
  )
  await client.query(
    `insert into runs (id, monitor_id, org_id, status, started_at)
     select gen_random_uuid(), monitor_id, org_id, 'RUNNING', now() - random() * interval '10 minutes' from bench_open`
  )
  // Their history: successful runs of 5 to 20 minutes over the last 30 days, so that the learned
  // LATE limit (2 × p99, at least 60 s) is about 40 minutes: far from due.
  await client.query(
    `insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms, exit_code, output)
     select gen_random_uuid(), b.monitor_id, b.org_id, 'SUCCESS', s.started_at,
            s.started_at + make_interval(secs => s.duration_ms / 1000.0), s.duration_ms, 0, 'ok'
     from bench_open b
     cross join lateral (
       select now() - interval '30 days' + (k * interval '30 days' / $1) as started_at,
              (300000 + floor(random() * 900000))::bigint as duration_ms
       from generate_series(0, $1 - 1) k
       where b.monitor_id is not null
     ) s`,
    [o.historyPerOpenRun]
  )
  await client.query(`update monitors m set status = 'RUNNING' from bench_open b where m.id = b.monitor_id`)

  // Active incidents: a sixth LATE on open runs (already reported), the rest MISSED and FAIL on
  // monitors without an open run; a quarter acknowledged.
  const late = Math.min(Math.floor(o.activeIncidents / 6), o.openRuns)
  await client.query(
    `insert into incidents (org_id, monitor_id, type, severity, status, created_at, occurrences, last_occurred_at, run_id, details)
     select r.org_id, r.monitor_id, 'LATE', 'MEDIUM', 'OPEN', r.started_at + interval '1 minute', 1,
            r.started_at + interval '1 minute', r.id,
            jsonb_build_object('runId', r.id, 'startedAt', r.started_at, 'limitMs', 60000, 'rule', 'learned')
     from runs r where r.status = 'RUNNING' order by r.id limit $1`,
    [late]
  )
  await client.query(
    `with picked as (
       select m.id, m.org_id, row_number() over (order by md5(m.id::text || 'i')) as n
       from monitors m
       where m.org_id = $1 and not m.paused and not exists (select 1 from bench_open b where b.monitor_id = m.id)
       order by md5(m.id::text || 'i') limit $2
     )
     insert into incidents (org_id, monitor_id, type, severity, status, created_at, acknowledged_at,
       acknowledged_by_name, occurrences, last_occurred_at, details)
     select org_id, id,
            case when n % 5 = 0 then 'FAIL' else 'MISSED' end, 'HIGH',
            case when n % 4 = 0 then 'ACKNOWLEDGED' else 'OPEN' end,
            now() - n * interval '1 minute',
            case when n % 4 = 0 then now() - n * interval '30 seconds' end,
            case when n % 4 = 0 then 'Admin' end,
            1 + n % 3, now() - n * interval '30 seconds', '{}'::jsonb
     from picked`,
    [o.orgId, o.activeIncidents - late]
  )
  await client.query(
    `update monitors m set status = case i.type when 'FAIL' then 'FAILING' else i.type end
     from incidents i where i.monitor_id = m.id and i.status in ('OPEN', 'ACKNOWLEDGED')`
  )
  await client.query(`drop table bench_open`)
  await client.query(`analyze monitors`)
  await client.query(`analyze runs`)
  await client.query(`analyze incidents`)

  const facts = await client.query<{
    monitors: string
    paused: string
    open_runs: string
    learned: string
    history: string
    incidents: string
  }>(
    `select (select count(*) from monitors where deleted_at is null) as monitors,
            (select count(*) from monitors where paused) as paused,
            (select count(*) from runs where status = 'RUNNING') as open_runs,
            (select count(*) from runs r join monitors m on m.id = r.monitor_id
              where r.status = 'RUNNING' and m.max_runtime_seconds is null) as learned,
            (select count(*) from runs where status = 'SUCCESS') as history,
            (select count(*) from incidents where status in ('OPEN', 'ACKNOWLEDGED')) as incidents`
  )
  const bySchedule = await client.query<{ type: string; expression: string; n: string }>(
    `select schedule_type as type, schedule_expression as expression, count(*) as n
     from monitors group by 1, 2 order by 1, 2`
  )
  const earliest = await client.query<{ at: Date | null }>(
    `select min(next_expected_at + make_interval(secs => grace_seconds)) as at from monitors where not paused`
  )
  const f = facts.rows[0]!
  return {
    monitors: Number(f.monitors),
    paused: Number(f.paused),
    bySchedule: bySchedule.rows.map((r) => ({ type: r.type, expression: r.expression, n: Number(r.n) })),
    zones: ZONES,
    openRuns: Number(f.open_runs),
    learnedLimit: Number(f.learned),
    historyRuns: Number(f.history),
    activeIncidents: Number(f.incidents),
    earliestDeadline: earliest.rows[0]?.at ?? null,
    ms: Date.now() - started
  }
}
