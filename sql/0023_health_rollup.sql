-- Health rollup: what the health score counts, per monitor and UTC hour of started_at, so that a
-- refresh reads at most one row per hour of the 30-day window instead of every run in it.
-- See docs/incident-rules.md ("Health score", "How the counts are read") and docs/statistics.md.
--
-- The duration rollup (0002) holds only successful runs with a duration; the score also counts
-- every run (any status) and every successful one (a success ping without a start or durationMs
-- has no duration). `run_health_hourly` (a view) has one row per (monitor, hour) with runs:
--   runs       all runs, any status (RUNNING included)
--   successes  runs with status = 'SUCCESS'
--   timed      of those, runs with a duration (what an SLA is judged on)
--   min_ms, max_ms  the extremes of those durations (NULL when timed = 0): an hour whose runs all
--             meet, or all miss, the monitor's SLA is counted from them; an hour that straddles the
--             SLA is read from raw runs (the SLA can change; the rollup does not know it).
-- On-time counts come from the LATE incidents, not from here.
--
-- TimescaleDB with the Timescale licence (the duration rollup is a continuous aggregate): a second
-- continuous aggregate, refreshed by the service with the first (src/Stats/Rollup.ts); the hours
-- in its invalidation logs are read from raw runs. Otherwise: a table refreshed with the duration
-- rollup's table, from the same dirty (monitor, hour) keys; the triggers on `runs` now mark runs of
-- any status (a run that failed, or is still running, counts for the score).
DO $$
BEGIN
  IF to_regclass('public.run_duration_hourly_cagg') IS NOT NULL THEN
    EXECUTE $ddl$
      CREATE MATERIALIZED VIEW public.run_health_hourly_cagg
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT monitor_id,
             time_bucket(interval '1 hour', started_at) AS bucket,
             count(*) AS runs,
             count(CASE WHEN status = 'SUCCESS' THEN 1 END) AS successes,
             count(CASE WHEN status = 'SUCCESS' THEN duration_ms END) AS timed,
             min(CASE WHEN status = 'SUCCESS' THEN duration_ms END) AS min_ms,
             max(CASE WHEN status = 'SUCCESS' THEN duration_ms END) AS max_ms
      FROM public.runs
      GROUP BY monitor_id, time_bucket(interval '1 hour', started_at)
      WITH NO DATA
    $ddl$;
    EXECUTE 'CREATE VIEW public.run_health_hourly AS
      SELECT monitor_id, bucket, runs, successes, timed, min_ms, max_ms
      FROM public.run_health_hourly_cagg';
  ELSIF to_regclass('public.run_duration_dirty') IS NOT NULL THEN
    -- Writers wait until this commits: the backfill below sees every run, and every later write
    -- goes through the new triggers.
    LOCK TABLE public.runs IN SHARE MODE;

    CREATE TABLE public.run_health_hourly_data (
      monitor_id uuid NOT NULL,
      bucket     timestamptz NOT NULL,
      runs       bigint NOT NULL,
      successes  bigint NOT NULL,
      timed      bigint NOT NULL,
      min_ms     bigint,
      max_ms     bigint,
      PRIMARY KEY (monitor_id, bucket)
    );
    CREATE VIEW public.run_health_hourly AS
      SELECT monitor_id, bucket, runs, successes, timed, min_ms, max_ms
      FROM public.run_health_hourly_data;

    -- The marks of 0002/0013/0014, for runs of any status.
    CREATE OR REPLACE FUNCTION public.jobmon_runs_mark_dirty() RETURNS trigger
      LANGUAGE plpgsql
      AS $fn$
      DECLARE
        cut timestamptz;
      BEGIN
        IF TG_OP = 'DELETE' THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT DISTINCT o.monitor_id, date_trunc('hour', o.started_at, 'UTC') FROM old_rows o
          ORDER BY 1, 2
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
          RETURN NULL;
        END IF;
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(7316402122);
        cut := date_trunc('hour', clock_timestamp(), 'UTC');
        IF TG_OP = 'INSERT' THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT DISTINCT n.monitor_id, date_trunc('hour', n.started_at, 'UTC') FROM new_rows n
          WHERE n.started_at < cut
          ORDER BY 1, 2
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        ELSE
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT k.monitor_id, k.bucket FROM (
            SELECT o.monitor_id, date_trunc('hour', o.started_at, 'UTC') AS bucket FROM old_rows o
            WHERE o.started_at < cut
            UNION
            SELECT n.monitor_id, date_trunc('hour', n.started_at, 'UTC') FROM new_rows n
            WHERE n.started_at < cut
          ) k
          ORDER BY 1, 2
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        END IF;
        RETURN NULL;
      END
      $fn$;

    CREATE OR REPLACE FUNCTION public.jobmon_runs_mark_dirty_row() RETURNS trigger
      LANGUAGE plpgsql
      AS $fn$
      DECLARE
        cut timestamptz := '-infinity';
      BEGIN
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
          PERFORM pg_catalog.pg_advisory_xact_lock_shared(7316402122);
          cut := date_trunc('hour', clock_timestamp(), 'UTC');
        END IF;
        IF TG_OP IN ('UPDATE', 'DELETE') AND (TG_OP = 'DELETE' OR OLD.started_at < cut) THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          VALUES (OLD.monitor_id, date_trunc('hour', OLD.started_at, 'UTC'))
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.started_at < cut THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          VALUES (NEW.monitor_id, date_trunc('hour', NEW.started_at, 'UTC'))
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        END IF;
        RETURN NULL;
      END
      $fn$;

    -- The row triggers of 0014 fire for runs of hours that ended, whatever their status.
    IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'public.runs'::regclass AND tgname = 'runs_rollup_insert_row') THEN
      DROP TRIGGER runs_rollup_insert_row ON public.runs;
      DROP TRIGGER runs_rollup_update_row ON public.runs;
      CREATE TRIGGER runs_rollup_insert_row AFTER INSERT ON public.runs
        FOR EACH ROW
        WHEN (NEW.started_at < date_trunc('hour', clock_timestamp(), 'UTC'))
        EXECUTE FUNCTION public.jobmon_runs_mark_dirty_row();
      CREATE TRIGGER runs_rollup_update_row AFTER UPDATE ON public.runs
        FOR EACH ROW
        WHEN (OLD.started_at < date_trunc('hour', clock_timestamp(), 'UTC')
           OR NEW.started_at < date_trunc('hour', clock_timestamp(), 'UTC'))
        EXECUTE FUNCTION public.jobmon_runs_mark_dirty_row();
    END IF;

    -- The hours the sweep has passed; later ones are the sweep's (and read from raw runs until then).
    INSERT INTO public.run_health_hourly_data (monitor_id, bucket, runs, successes, timed, min_ms, max_ms)
    SELECT monitor_id, date_trunc('hour', started_at, 'UTC'),
           count(*),
           count(*) FILTER (WHERE status = 'SUCCESS'),
           count(duration_ms) FILTER (WHERE status = 'SUCCESS'),
           min(duration_ms) FILTER (WHERE status = 'SUCCESS'),
           max(duration_ms) FILTER (WHERE status = 'SUCCESS')
    FROM public.runs
    WHERE started_at < (SELECT until FROM public.run_duration_swept)
    GROUP BY 1, 2;
  END IF;
END
$$;
