-- Duration rollup, TimescaleDB mode: the service refreshes the continuous aggregate itself; the
-- TimescaleDB refresh policy of 0002 is removed. See docs/statistics.md ("What backs the rollup").
--
-- The policy re-materialized only the last 7 days (start_offset). A run written into an hour that
-- was materialized more than 7 days back (a late import, a success ping whose durationMs puts its
-- start 8.5 days ago) stayed in TimescaleDB's invalidation log and never reached the aggregate:
-- measured, 150,000 runs over 10 days and one policy run left the 30-day statistics at 104,299 runs.
-- Now:
-- - The service calls refresh_continuous_aggregate(…, NULL, <last whole hour − 1 h>) every minute
--   (src/Stats/Rollup.ts): no start limit, so every invalidated hour is re-materialized, however old.
--   When nothing changed the call costs about a millisecond.
-- - Queries read the hours that wait in the invalidation logs from raw runs (src/Stats/StatsRepo.ts,
--   staleHours), so an answer counts every committed run even before that refresh.
-- - Background jobs are not needed for it: on PostgreSQL minors with the new portal check (15.20
--   here) every TimescaleDB job run is recorded as failed (docs/operations.md).
-- Retention and compression stay TimescaleDB policies (src/Db/Policies.ts), watched by the service
-- (src/Db/Jobs.ts).
DO $$
BEGIN
  IF to_regclass('public.run_duration_hourly_cagg') IS NOT NULL THEN
    PERFORM remove_continuous_aggregate_policy('public.run_duration_hourly_cagg', if_exists => true);
  END IF;
END
$$;
