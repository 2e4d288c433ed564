-- Indexes for the event queries the API allows (GET /api/events; docs/events.md, "Indexes").
--
-- `ping_events` had only its primary key on `seq`: `GET /api/events?type=ping.received` with a read
-- token walked the seq index of EVERY organization's pings backwards until it had found `limit` of
-- its own, so one organization's million pings made another's requests (and the ping intake that
-- shares the database) slow. Each query is now an index range scan within the caller's organization
-- (or monitor), whatever the other organizations hold.
CREATE INDEX ping_events_org_seq_idx ON ping_events (org_id, seq);
CREATE INDEX ping_events_monitor_seq_idx ON ping_events (monitor_id, seq);

-- `events` (domain events) had (org_id, seq); a `type` filter then read the organization's other
-- events too. One index per (organization, type) keeps that a range scan as well.
CREATE INDEX events_org_type_seq_idx ON events (org_id, type, seq);

-- The view gains the ping's monitor_id as a column of its own: `monitor_id = $1` can use the index
-- above, where `monitor_ids @> array[$1]` (an array built per row) cannot. Columns are only added
-- at the end, so readers of the view's other columns are unchanged.
CREATE OR REPLACE VIEW ping_received_events AS
SELECT id, seq, org_id, 'ping.received'::text AS type, at AS created_at,
       jsonb_build_object('ping', jsonb_build_object(
         'monitorId', monitor_id, 'runId', run_id,
         'kind', CASE status WHEN 'RUNNING' THEN 'start' WHEN 'SUCCESS' THEN 'success' ELSE 'fail' END,
         'at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         'status', status, 'durationMs', duration_ms, 'exitCode', exit_code)) AS data,
       ARRAY[monitor_id] AS monitor_ids, NULL::text AS severity,
       monitor_id
FROM ping_events;
