-- Duration rollup, table mode (plain PostgreSQL): the run writer's statements no longer collect
-- transition tables. See docs/statistics.md ("What changed").
--
-- Since 0013 the statement-level triggers on `runs` mark only runs of hours that have ended, which
-- the ping intake almost never writes; yet every INSERT and UPDATE still copied each of its rows
-- into a transition table and ran a query over it (measured: about a sixth of PostgreSQL's time on
-- the run writer's statement). Now:
-- - A BEFORE … FOR EACH STATEMENT trigger takes the sweep's lock shared (key 7316402122), as the
--   statement triggers did, before any row is written.
-- - AFTER … FOR EACH ROW triggers whose WHEN condition reads the clock (after that lock) fire only
--   for successful runs that started before the current hour, and mark that (monitor, hour) with the
--   row-level function of 0002/0013. The condition costs a comparison per row; a run of the hour in
--   progress queues no trigger event at all.
-- - Deletes keep their statement-level trigger (retention deletes many rows at once) and are marked
--   whatever their hour.
-- Where the row-level fallback of 0002 is in place (no transition tables), nothing changes.
DO $$
BEGIN
  IF to_regclass('public.run_duration_dirty') IS NOT NULL
     AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'public.runs'::regclass AND tgname = 'runs_rollup_insert') THEN
    CREATE OR REPLACE FUNCTION public.jobmon_runs_rollup_lock() RETURNS trigger
      LANGUAGE plpgsql
      AS $fn$
      BEGIN
        -- Held until commit: a sweep that moves `until` past an hour waits for this transaction,
        -- or comes before it, and then the rows' WHEN conditions read the new hour.
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(7316402122);
        RETURN NULL;
      END
      $fn$;

    DROP TRIGGER runs_rollup_insert ON public.runs;
    DROP TRIGGER runs_rollup_update ON public.runs;

    CREATE TRIGGER runs_rollup_lock BEFORE INSERT OR UPDATE ON public.runs
      FOR EACH STATEMENT EXECUTE FUNCTION public.jobmon_runs_rollup_lock();
    CREATE TRIGGER runs_rollup_insert_row AFTER INSERT ON public.runs
      FOR EACH ROW
      WHEN (NEW.status = 'SUCCESS' AND NEW.duration_ms IS NOT NULL
            AND NEW.started_at < date_trunc('hour', clock_timestamp(), 'UTC'))
      EXECUTE FUNCTION public.jobmon_runs_mark_dirty_row();
    CREATE TRIGGER runs_rollup_update_row AFTER UPDATE ON public.runs
      FOR EACH ROW
      WHEN ((OLD.status = 'SUCCESS' AND OLD.duration_ms IS NOT NULL
             AND OLD.started_at < date_trunc('hour', clock_timestamp(), 'UTC'))
         OR (NEW.status = 'SUCCESS' AND NEW.duration_ms IS NOT NULL
             AND NEW.started_at < date_trunc('hour', clock_timestamp(), 'UTC')))
      EXECUTE FUNCTION public.jobmon_runs_mark_dirty_row();
  END IF;
END
$$;
