-- ping.received events get a table of their own (docs/events.md, "ping.received"; docs/delivery.md).
-- A ping costs one narrow row here, written in the statement that stores its run: no JSON, one
-- index, no foreign key (a row of `events` cost PostgreSQL about six times as much). Webhooks that
-- subscribe to ping.received receive them as they can take them: `webhooks.ping_seq` records how
-- far each one's deliveries have been made; the rows after it are its queue.
CREATE TABLE ping_events (
  seq         bigserial PRIMARY KEY,
  id          uuid NOT NULL DEFAULT gen_random_uuid(),
  org_id      uuid NOT NULL,
  monitor_id  uuid NOT NULL,
  run_id      uuid NOT NULL,
  -- the run's status after the ping: RUNNING (a start), SUCCESS or FAIL
  status      text NOT NULL,
  at          timestamptz NOT NULL,
  duration_ms bigint,
  exit_code   integer
);

-- The same rows in the shape of `events` (the webhook envelope's data, as docs/events.md shows it).
CREATE VIEW ping_received_events AS
SELECT id, seq, org_id, 'ping.received'::text AS type, at AS created_at,
       jsonb_build_object('ping', jsonb_build_object(
         'monitorId', monitor_id, 'runId', run_id,
         'kind', CASE status WHEN 'RUNNING' THEN 'start' WHEN 'SUCCESS' THEN 'success' ELSE 'fail' END,
         'at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         'status', status, 'durationMs', duration_ms, 'exitCode', exit_code)) AS data,
       ARRAY[monitor_id] AS monitor_ids, NULL::text AS severity
FROM ping_events;

ALTER TABLE webhooks ADD COLUMN ping_seq bigint NOT NULL DEFAULT 0;

-- Pings recorded in `events` by earlier versions and not yet fanned out move here, so that they
-- are still delivered.
INSERT INTO ping_events (id, org_id, monitor_id, run_id, status, at, duration_ms, exit_code)
SELECT id, org_id, (data -> 'ping' ->> 'monitorId')::uuid, (data -> 'ping' ->> 'runId')::uuid,
       data -> 'ping' ->> 'status', created_at, (data -> 'ping' ->> 'durationMs')::bigint,
       (data -> 'ping' ->> 'exitCode')::integer
FROM events
WHERE type = 'ping.received' AND seq > (SELECT seq FROM delivery_cursor WHERE id = 1)
ORDER BY seq;
DELETE FROM events WHERE type = 'ping.received' AND seq > (SELECT seq FROM delivery_cursor WHERE id = 1);
