-- Duration rollup, table mode (plain PostgreSQL, Apache-only TimescaleDB): the hour in progress is
-- no longer marked dirty run by run. See docs/statistics.md ("What changed").
--
-- Before: the triggers on `runs` upserted a (monitor, hour) key into `run_duration_dirty` for every
-- statement that wrote a successful run, so the ping intake paid one upsert per batch and monitor,
-- nearly all for the hour in progress (measured: a third of PostgreSQL's time on the run writer's
-- statement). Now:
-- - The triggers mark only runs that started before the current hour (by the server's clock,
--   read after taking a shared advisory lock, key 7316402122): late runs, corrections, imports.
--   Deletes are marked whatever their hour, as before.
-- - `run_duration_swept.until` is the hour up to which every run is covered by a mark. Once the
--   clock passes it, the service sweeps: it takes the same lock exclusively for an instant (every
--   writer that read the old hour has committed; every later one reads the new hour and marks),
--   then marks each (monitor, hour) in [until, cut) that has runs, and moves `until` to `cut`, in
--   one transaction. A crash before the commit leaves `until` where it was: the next sweep redoes it.
DO $$
BEGIN
  IF to_regclass('public.run_duration_dirty') IS NOT NULL THEN
    CREATE TABLE public.run_duration_swept (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      until     timestamptz NOT NULL
    );
    INSERT INTO public.run_duration_swept (until) VALUES (date_trunc('hour', now(), 'UTC'));

    CREATE OR REPLACE FUNCTION public.jobmon_runs_mark_dirty() RETURNS trigger
      LANGUAGE plpgsql
      AS $fn$
      DECLARE
        cut timestamptz;
      BEGIN
        IF TG_OP = 'DELETE' THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT DISTINCT o.monitor_id, date_trunc('hour', o.started_at, 'UTC') FROM old_rows o
          WHERE o.status = 'SUCCESS' AND o.duration_ms IS NOT NULL
          ORDER BY 1, 2
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
          RETURN NULL;
        END IF;
        -- The clock is read after the lock: a sweep that moved `until` past an hour either waited
        -- for this transaction's commit or comes before this read.
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(7316402122);
        cut := date_trunc('hour', clock_timestamp(), 'UTC');
        IF TG_OP = 'INSERT' THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT DISTINCT n.monitor_id, date_trunc('hour', n.started_at, 'UTC') FROM new_rows n
          WHERE n.status = 'SUCCESS' AND n.duration_ms IS NOT NULL AND n.started_at < cut
          ORDER BY 1, 2
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        ELSE
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          SELECT k.monitor_id, k.bucket FROM (
            SELECT o.monitor_id, date_trunc('hour', o.started_at, 'UTC') AS bucket FROM old_rows o
            WHERE o.status = 'SUCCESS' AND o.duration_ms IS NOT NULL AND o.started_at < cut
            UNION
            SELECT n.monitor_id, date_trunc('hour', n.started_at, 'UTC') FROM new_rows n
            WHERE n.status = 'SUCCESS' AND n.duration_ms IS NOT NULL AND n.started_at < cut
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
        IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'SUCCESS' AND OLD.duration_ms IS NOT NULL
           AND (TG_OP = 'DELETE' OR OLD.started_at < cut) THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          VALUES (OLD.monitor_id, date_trunc('hour', OLD.started_at, 'UTC'))
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'SUCCESS' AND NEW.duration_ms IS NOT NULL
           AND NEW.started_at < cut THEN
          INSERT INTO public.run_duration_dirty AS d (monitor_id, bucket)
          VALUES (NEW.monitor_id, date_trunc('hour', NEW.started_at, 'UTC'))
          ON CONFLICT (monitor_id, bucket) DO UPDATE SET marked_at = excluded.marked_at;
        END IF;
        RETURN NULL;
      END
      $fn$;
  END IF;
END
$$;
