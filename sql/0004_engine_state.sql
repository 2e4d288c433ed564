-- What the incident engine rebuilds its monitor actors from at start-up, kept current by the
-- ping writer: the status of each monitor's newest finished run.
ALTER TABLE monitors ADD COLUMN last_run_status text CHECK (last_run_status IN ('SUCCESS', 'FAIL'));

-- Open runs are loaded at start-up; this keeps that query cheap however many runs there are.
CREATE INDEX runs_running_idx ON runs (monitor_id) WHERE status = 'RUNNING';
