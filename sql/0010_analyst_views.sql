-- Stable views for analysts (docs/analysts.md). The service never reads them; they are a contract
-- with people who query the database with SQL. Their columns only ever get added, never renamed or
-- dropped: a query written against them keeps working across upgrades, whatever happens to the
-- tables underneath. Plain views over ordinary columns, so they behave the same in plain
-- PostgreSQL and TimescaleDB mode (on a hypertable, time filters on started_at still prune chunks).

-- One row per run (a job execution), with its monitor and organization, and whether it broke the
-- monitor's SLA. sla_breached follows the health score's SLA share (docs/incident-rules.md): only a
-- successful run with a duration, of a monitor with an SLA, is judged; otherwise it is null.
CREATE VIEW analyst_runs AS
SELECT r.id                    AS run_id,
       r.org_id,
       o.slug                  AS org_slug,
       o.name                  AS org_name,
       r.monitor_id,
       m.name                  AS monitor_name,
       m.tags                  AS monitor_tags,
       m.deleted_at IS NOT NULL AS monitor_deleted,
       r.status,
       r.started_at,
       r.start_inferred,
       r.finished_at,
       r.duration_ms,
       r.exit_code,
       r.output_bytes,
       r.output_truncated,
       m.sla ->> 'durationTarget'                AS sla_duration_target,
       (m.sla ->> 'maxDurationMs')::bigint       AS sla_max_duration_ms,
       CASE
         WHEN m.sla IS NULL OR r.status <> 'SUCCESS' OR r.duration_ms IS NULL THEN NULL
         ELSE r.duration_ms > (m.sla ->> 'maxDurationMs')::bigint
       END                                       AS sla_breached
FROM runs r
JOIN monitors m ON m.id = r.monitor_id
JOIN organizations o ON o.id = r.org_id;

COMMENT ON VIEW analyst_runs IS
  'One row per run with monitor, organization and SLA verdict. Stable: columns are only added. See docs/analysts.md.';

-- One row per incident, with its monitor and organization, and the times to acknowledge and to
-- resolve in whole seconds (rounded down, as the API's mttrSeconds), null until they happen.
CREATE VIEW analyst_incidents AS
SELECT i.id                    AS incident_id,
       i.org_id,
       o.slug                  AS org_slug,
       i.monitor_id,
       m.name                  AS monitor_name,
       i.type,
       i.severity,
       i.status,
       i.created_at,
       i.acknowledged_at,
       i.resolved_at,
       i.resolved_by_name,
       i.occurrences,
       i.last_occurred_at,
       i.run_id,
       i.details ->> 'rule'    AS rule,
       floor(extract(epoch FROM i.acknowledged_at - i.created_at))::bigint AS time_to_acknowledge_seconds,
       floor(extract(epoch FROM i.resolved_at - i.created_at))::bigint AS mttr_seconds
FROM incidents i
JOIN monitors m ON m.id = i.monitor_id
JOIN organizations o ON o.id = i.org_id;

COMMENT ON VIEW analyst_incidents IS
  'One row per incident with monitor, organization, time to acknowledge and MTTR in seconds. Stable: columns are only added. See docs/analysts.md.';

-- One row per monitor (deleted ones included, flagged), its settings flattened.
CREATE VIEW analyst_monitors AS
SELECT m.id                    AS monitor_id,
       m.org_id,
       o.slug                  AS org_slug,
       m.name                  AS monitor_name,
       m.schedule_type,
       m.schedule_expression,
       m.timezone,
       m.grace_seconds,
       m.max_runtime_seconds,
       m.sla ->> 'durationTarget'          AS sla_duration_target,
       (m.sla ->> 'maxDurationMs')::bigint AS sla_max_duration_ms,
       m.tags,
       m.paused,
       m.status,
       m.health_score,
       m.last_ping_at,
       m.created_at,
       m.deleted_at
FROM monitors m
JOIN organizations o ON o.id = m.org_id;

COMMENT ON VIEW analyst_monitors IS
  'One row per monitor (deleted ones flagged by deleted_at). Stable: columns are only added. See docs/analysts.md.';
