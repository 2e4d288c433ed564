-- Thresholds per monitor (docs/incident-rules.md#thresholds).
--
-- Settings, written by the monitors API:
--   failure_threshold      failed runs or missed occurrences in a row before a FAIL or MISSED
--                          incident opens; 1 (every failure opens one) to 100
--   recovery_threshold     successful runs in a row before an active FAIL or MISSED incident is
--                          resolved automatically (with auto_resolve); 1 to 100
-- Engine state, written by the incident engine (src/Engine/MonitorWriter.ts) so that a monitor's
-- actor, rebuilt from the database (a restart, another instance taking the monitor), goes on
-- counting where it stopped. A missed occurrence leaves no run behind, so these counts cannot be
-- recomputed from the runs table. Both stop at 100, the highest threshold.
--   consecutive_failures   failed runs and missed occurrences since the last successful run
--                          (those inside a maintenance window, or while paused, are not counted)
--   consecutive_successes  successful runs since the last counted failed run or missed occurrence
--   missed_below_threshold the newest outcome is a missed occurrence that opened no incident (it
--                          was below failure_threshold): the monitor's status is MISSED until a run finishes
-- Constant defaults: adding the columns rewrites no rows, and every existing monitor keeps today's
-- behaviour (thresholds of 1).
ALTER TABLE monitors
  ADD COLUMN failure_threshold integer NOT NULL DEFAULT 1 CHECK (failure_threshold BETWEEN 1 AND 100),
  ADD COLUMN recovery_threshold integer NOT NULL DEFAULT 1 CHECK (recovery_threshold BETWEEN 1 AND 100),
  ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures BETWEEN 0 AND 100),
  ADD COLUMN consecutive_successes integer NOT NULL DEFAULT 0 CHECK (consecutive_successes BETWEEN 0 AND 100),
  ADD COLUMN missed_below_threshold boolean NOT NULL DEFAULT false;
