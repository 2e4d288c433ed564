-- Duration statistics: an hourly rollup of successful run durations per monitor.
-- See docs/statistics.md for the design; the service reads only the view `run_duration_hourly`.
--
-- One row per (monitor, hour of started_at, UTC) over runs with status = 'SUCCESS' and a duration:
--   runs      how many runs
--   sum_ms    sum of duration_ms                 (numeric: exact)
--   sumsq_ms  sum of duration_ms squared         (numeric: exact, so the standard deviation is too)
--   min_ms, max_ms
--   hist      the duration histogram, sparse, as text: 'bucket,count,bucket,count,...' for the
--             non-empty buckets, in bucket order (text, not integer[]: read back ~3x faster). Buckets are those of width_bucket(jobmon_duration_scale(ms),
--             0, 1816, 1816): 0 holds negative durations, 1..100 hold exactly 0..99 ms (one bucket
--             per millisecond), 101..1816 grow by a factor of 1.01 from 100 ms to about 30 days,
--             1817 holds anything longer.
--
-- TimescaleDB with the Timescale licence: `run_duration_hourly_cagg` is a continuous aggregate
-- (real-time, refreshed by a policy). Otherwise (plain PostgreSQL, Apache-only TimescaleDB):
-- `run_duration_hourly_data` is a table the service refreshes incrementally from the
-- (monitor, hour) keys that triggers on `runs` write into `run_duration_dirty`.
-- Functions are schema-qualified and IMMUTABLE: continuous-aggregate refreshes run with
-- search_path = pg_catalog.

-- The bucket scale: whole milliseconds below 100 ms, then logarithmic with ratio 1.01.
CREATE FUNCTION public.jobmon_duration_scale(duration_ms bigint) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$
    SELECT CASE
      WHEN duration_ms < 0 THEN -1.0::double precision
      WHEN duration_ms < 100 THEN duration_ms::double precision + 0.5
      ELSE 100.0::double precision + ln(duration_ms::double precision / 100.0) / ln(1.01::double precision)
    END
  $$;

CREATE FUNCTION public.jobmon_duration_bucket(duration_ms bigint) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT width_bucket(public.jobmon_duration_scale(duration_ms), 0.0::double precision, 1816.0::double precision, 1816) $$;

-- A dense histogram (as TimescaleDB's histogram() returns it, index 1 = bucket 0) made sparse.
CREATE FUNCTION public.jobmon_hist_sparse(dense integer[]) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$
    SELECT coalesce(string_agg((u.o - 1)::text || ',' || u.c::text, ',' ORDER BY u.o), '')
    FROM unnest(dense) WITH ORDINALITY AS u(c, o)
    WHERE u.c <> 0
  $$;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb')
     AND current_setting('timescaledb.license', true) = 'timescale' THEN
    -- Created empty (WITH NO DATA works inside the migration's transaction); the service runs one
    -- refresh over all time at start-up, then the policy keeps it current.
    EXECUTE $ddl$
      CREATE MATERIALIZED VIEW public.run_duration_hourly_cagg
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT monitor_id,
             time_bucket(interval '1 hour', started_at) AS bucket,
             count(*) AS runs,
             sum(duration_ms) AS sum_ms,
             sum(duration_ms::numeric * duration_ms::numeric) AS sumsq_ms,
             min(duration_ms) AS min_ms,
             max(duration_ms) AS max_ms,
             public.jobmon_hist_sparse(
               histogram(public.jobmon_duration_scale(duration_ms), 0.0::double precision, 1816.0::double precision, 1816)
             ) AS hist
      FROM public.runs
      WHERE status = 'SUCCESS' AND duration_ms IS NOT NULL
      GROUP BY monitor_id, time_bucket(interval '1 hour', started_at)
      WITH NO DATA
    $ddl$;
    -- Every 5 minutes, re-materialize what changed in the last 7 days, up to the last hour;
    -- real-time aggregation (materialized_only = false) adds the newest hour at query time.
    PERFORM add_continuous_aggregate_policy('public.run_duration_hourly_cagg',
      start_offset => interval '7 days',
      end_offset => interval '1 hour',
      schedule_interval => interval '5 minutes');
    EXECUTE 'CREATE VIEW public.run_duration_hourly AS
      SELECT monitor_id, bucket, runs, sum_ms, sumsq_ms, min_ms, max_ms, hist
      FROM public.run_duration_hourly_cagg';
  ELSE
    CREATE TABLE public.run_duration_hourly_data (
      monitor_id uuid NOT NULL,
      bucket     timestamptz NOT NULL,
      runs       bigint NOT NULL,
      sum_ms     numeric NOT NULL,
      sumsq_ms   numeric NOT NULL,
      min_ms     bigint NOT NULL,
      max_ms     bigint NOT NULL,
      hist       text NOT NULL,
      PRIMARY KEY (monitor_id, bucket)
    );
    -- (monitor, hour) keys whose rollup row must be recomputed; written by the triggers below in
    -- the same transaction as the run, consumed by the service (DELETE … RETURNING, then recompute).
    -- The triggers update `marked_at` on conflict on purpose: that row lock makes a refresh that
    -- consumes the key wait for the writing transaction, so the recompute sees its runs.
    CREATE TABLE public.run_duration_dirty (
      monitor_id uuid NOT NULL,
      bucket     timestamptz NOT NULL,
      marked_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (monitor_id, bucket)
    );
    CREATE VIEW public.run_duration_hourly AS
      SELECT monitor_id, bucket, runs, sum_ms, sumsq_ms, min_ms, max_ms, hist
      FROM public.run_duration_hourly_data;

    -- Statement-level triggers with transition tables: one INSERT per statement, whatever its size.
    CREATE FUNCTION public.jobmon_runs_mark_dirty() RETURNS trigger
      LANGUAGE plpgsql
      AS $fn$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT DISTINCT n.monitor_id, date_trunc('hour', n.started_at, 'UTC') FROM new_rows n
          WHERE n.status = 'SUCCESS' AND n.duration_ms IS NOT NULL
          ORDER BY 1, 2
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        ELSIF TG_OP = 'UPDATE' THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT k.monitor_id, k.bucket FROM (
            SELECT o.monitor_id, date_trunc('hour', o.started_at, 'UTC') AS bucket FROM old_rows o
            WHERE o.status = 'SUCCESS' AND o.duration_ms IS NOT NULL
            UNION
            SELECT n.monitor_id, date_trunc('hour', n.started_at, 'UTC') FROM new_rows n
            WHERE n.status = 'SUCCESS' AND n.duration_ms IS NOT NULL
          ) k
          ORDER BY 1, 2
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        ELSE
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT DISTINCT o.monitor_id, date_trunc('hour', o.started_at, 'UTC') FROM old_rows o
          WHERE o.status = 'SUCCESS' AND o.duration_ms IS NOT NULL
          ORDER BY 1, 2
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        END IF;
        RETURN NULL;
      END
      $fn$;

    -- Row-level fallback for servers that refuse transition tables on hypertables (older
    -- Apache-only TimescaleDB builds).
    CREATE FUNCTION public.jobmon_runs_mark_dirty_row() RETURNS trigger
      LANGUAGE plpgsql
      AS $fn$
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'SUCCESS' AND OLD.duration_ms IS NOT NULL THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          VALUES (OLD.monitor_id, date_trunc('hour', OLD.started_at, 'UTC'))
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'SUCCESS' AND NEW.duration_ms IS NOT NULL THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          VALUES (NEW.monitor_id, date_trunc('hour', NEW.started_at, 'UTC'))
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        END IF;
        RETURN NULL;
      END
      $fn$;

    BEGIN
      CREATE TRIGGER runs_rollup_insert AFTER INSERT ON public.runs
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.jobmon_runs_mark_dirty();
      CREATE TRIGGER runs_rollup_update AFTER UPDATE ON public.runs
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.jobmon_runs_mark_dirty();
      CREATE TRIGGER runs_rollup_delete AFTER DELETE ON public.runs
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.jobmon_runs_mark_dirty();
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'transition tables not supported on runs (%); using row-level rollup triggers', SQLERRM;
      CREATE TRIGGER runs_rollup_row AFTER INSERT OR UPDATE OR DELETE ON public.runs
        FOR EACH ROW EXECUTE FUNCTION public.jobmon_runs_mark_dirty_row();
    END;

    -- Runs that exist already (an upgrade) are rolled up by the service's first refresh.
    INSERT INTO public.run_duration_dirty (monitor_id, bucket)
    SELECT DISTINCT monitor_id, date_trunc('hour', started_at, 'UTC') FROM public.runs
    WHERE status = 'SUCCESS' AND duration_ms IS NOT NULL;
  END IF;
END
$$;
