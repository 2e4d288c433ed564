-- Incidents, their notes, and the outbox of domain events (docs/incidents.md, docs/events.md).

-- One row per incident. At most one incident of a type per monitor is active (OPEN or
-- ACKNOWLEDGED) at a time: the partial unique index below enforces it, and raising an incident is
-- an INSERT … ON CONFLICT on that index, so concurrent raises count occurrences instead of
-- opening duplicates. A RESOLVED incident leaves the index, so the next occurrence opens a new
-- incident (a resolved incident never reopens).
CREATE TABLE incidents (
  id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id                uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  monitor_id            uuid NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  type                  text NOT NULL CHECK (type IN ('MISSED', 'LATE', 'FAIL', 'ANOMALY')),
  severity              text NOT NULL CHECK (severity IN ('HIGH', 'MEDIUM', 'LOW')),
  status                text NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'ACKNOWLEDGED', 'RESOLVED')),
  created_at            timestamptz NOT NULL,
  -- who acknowledged: the token owner's user id (null when the token has no user), name and email
  acknowledged_at       timestamptz,
  acknowledged_by       uuid,
  acknowledged_by_name  text,
  acknowledged_by_email text,
  -- who resolved: a user, or resolved_by null with resolved_by_name 'system' for automatic resolution
  resolved_at           timestamptz,
  resolved_by           uuid,
  resolved_by_name      text,
  occurrences           integer NOT NULL DEFAULT 1 CHECK (occurrences >= 1),
  last_occurred_at      timestamptz NOT NULL,
  run_id                uuid,
  details               jsonb NOT NULL DEFAULT '{}'::jsonb,
  CHECK ((status = 'RESOLVED') = (resolved_at IS NOT NULL)),
  CHECK (status <> 'ACKNOWLEDGED' OR acknowledged_at IS NOT NULL)
);

CREATE UNIQUE INDEX incidents_one_active_idx ON incidents (monitor_id, type)
  WHERE status IN ('OPEN', 'ACKNOWLEDGED');
-- Listing, newest first, and its filters.
CREATE INDEX incidents_org_list_idx ON incidents (org_id, created_at DESC, id DESC);
CREATE INDEX incidents_org_status_idx ON incidents (org_id, status, created_at DESC, id DESC);
CREATE INDEX incidents_monitor_idx ON incidents (monitor_id, created_at DESC, id DESC);
-- The engine asks whether a run already has a LATE incident.
CREATE INDEX incidents_run_idx ON incidents (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE incident_notes (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- insertion order, to order notes written within the same millisecond
  seq         bigserial NOT NULL,
  incident_id uuid NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
  at          timestamptz NOT NULL,
  text        text NOT NULL,
  -- null for 'system' notes and for tokens without a user
  user_id     uuid,
  user_name   text NOT NULL
);
CREATE INDEX incident_notes_incident_idx ON incident_notes (incident_id, at, seq);

-- The outbox: one row per domain event, written in the same transaction as the change it reports.
-- It is the single source of outbound webhook deliveries. `seq` orders events in commit order:
-- writers take a transaction-level advisory lock before drawing it (src/Events/Events.ts), so a
-- consumer that reads "seq > N" never skips an event that commits later with a smaller seq.
CREATE TABLE events (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  seq         bigserial NOT NULL UNIQUE,
  org_id      uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  type        text NOT NULL,
  created_at  timestamptz NOT NULL,
  data        jsonb NOT NULL,
  -- the monitors the event is about, for webhook filters.monitorIds
  monitor_ids uuid[] NOT NULL DEFAULT '{}',
  -- the incident's severity, for webhook filters.severity (null for non-incident events)
  severity    text CHECK (severity IN ('HIGH', 'MEDIUM', 'LOW'))
);
CREATE INDEX events_created_idx ON events (created_at);
CREATE INDEX events_org_seq_idx ON events (org_id, seq);
