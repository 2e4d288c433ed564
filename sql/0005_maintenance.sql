-- Maintenance windows (docs/maintenance.md): planned downtime that suppresses incidents and alerts
-- for the monitors it covers, one-time ([start, end)) or recurring (an RFC 5545 rule in a zone, and
-- a duration in elapsed seconds).

-- One row per window. A deleted window keeps its row (deleted_at set) so that its periods stay in
-- history. For a recurring window start_at is the DTSTART anchor of the rule and end_at is null.
CREATE TABLE maintenance_windows (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id              uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name                text NOT NULL,
  monitor_ids         uuid[] NOT NULL,
  start_at            timestamptz NOT NULL,
  end_at              timestamptz,
  rrule               text,
  duration_seconds    integer CHECK (duration_seconds > 0),
  timezone            text NOT NULL DEFAULT 'UTC',
  reason              text,
  -- {beforeStart, onStart, onEnd, channels}
  notifications       jsonb NOT NULL DEFAULT '{"beforeStart": null, "onStart": false, "onEnd": false, "channels": []}'::jsonb,
  -- the override of the current period, if any: alerts resume from override_started_at to override_ends_at
  override_reason     text,
  override_started_at timestamptz,
  override_ends_at    timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  deleted_at          timestamptz,
  CHECK ((rrule IS NULL) = (duration_seconds IS NULL)),
  CHECK ((rrule IS NULL) = (end_at IS NOT NULL)),
  CHECK (end_at IS NULL OR end_at > start_at)
);
CREATE INDEX maintenance_windows_org_idx ON maintenance_windows (org_id, created_at, id) WHERE deleted_at IS NULL;

-- One row per maintenance period that began: written when it starts (ended_at null while it runs)
-- and closed when it ends. Unique per (window, start), so a restart while a period runs finds its
-- row instead of writing a second one. name and monitor_ids are those of the window during the
-- period (they survive the window's deletion).
CREATE TABLE maintenance_history (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  window_id            uuid NOT NULL REFERENCES maintenance_windows (id) ON DELETE CASCADE,
  org_id               uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name                 text NOT NULL,
  monitor_ids          uuid[] NOT NULL,
  started_at           timestamptz NOT NULL,
  -- the scheduled end of the period (kept current while the window is changed)
  ends_at              timestamptz NOT NULL,
  ended_at             timestamptz,
  end_reason           text CHECK (end_reason IN ('completed', 'deleted', 'updated')),
  -- [{reason, startedAt, endedAt}]
  overrides            jsonb NOT NULL DEFAULT '[]'::jsonb,
  suppressed_incidents integer NOT NULL DEFAULT 0,
  UNIQUE (window_id, started_at),
  CHECK ((ended_at IS NULL) = (end_reason IS NULL))
);
CREATE INDEX maintenance_history_org_idx ON maintenance_history (org_id, started_at DESC);
CREATE INDEX maintenance_history_open_idx ON maintenance_history (window_id) WHERE ended_at IS NULL;

-- Which maintenance.upcoming notices were recorded, so that a restart does not record one twice.
CREATE TABLE maintenance_notices (
  window_id       uuid NOT NULL REFERENCES maintenance_windows (id) ON DELETE CASCADE,
  period_start    timestamptz NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('upcoming')),
  PRIMARY KEY (window_id, period_start, kind)
);
