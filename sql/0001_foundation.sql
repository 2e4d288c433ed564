-- Foundation: organizations, users, API tokens, monitors and the runs time series.
-- Applied in order by the service at start-up (and by `jobmon migrate`); recorded in schema_migrations.
-- The same file serves plain PostgreSQL and TimescaleDB: TimescaleDB-only DDL is guarded.

-- TimescaleDB is used when the server has it preloaded, unless the operator turned it off
-- (TIMESCALEDB=off sets jobmon.timescaledb for the migrating session).
DO $$
BEGIN
  IF coalesce(current_setting('jobmon.timescaledb', true), 'auto') <> 'off'
     AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb')
     AND current_setting('shared_preload_libraries', true) LIKE '%timescaledb%' THEN
    CREATE EXTENSION IF NOT EXISTS timescaledb;
  END IF;
END
$$;

CREATE TABLE organizations (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  slug        text NOT NULL UNIQUE,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email         text NOT NULL,
  name          text NOT NULL,
  password_hash text,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE memberships (
  user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id     uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  role       text NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'member')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, org_id)
);

-- Only a SHA-256 hash of each token is kept; `token_prefix` is its public, non-secret start, for display.
CREATE TABLE api_tokens (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id       uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id      uuid REFERENCES users (id) ON DELETE SET NULL,
  name         text NOT NULL,
  scope        text NOT NULL CHECK (scope IN ('admin', 'write', 'read', 'ping')),
  token_hash   bytea NOT NULL UNIQUE,
  token_prefix text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  revoked_at   timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_tokens_org_idx ON api_tokens (org_id, created_at);

CREATE TABLE monitors (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id              uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name                text NOT NULL,
  schedule_type       text NOT NULL CHECK (schedule_type IN ('cron', 'interval')),
  schedule_expression text NOT NULL,
  timezone            text NOT NULL DEFAULT 'UTC',
  grace_seconds       integer NOT NULL DEFAULT 60,
  max_runtime_seconds integer,
  max_output_size_kb  integer NOT NULL DEFAULT 10,
  capture_output      boolean NOT NULL DEFAULT true,
  sla                 jsonb,
  tags                text[] NOT NULL DEFAULT '{}',
  auto_resolve        boolean NOT NULL DEFAULT true,
  paused              boolean NOT NULL DEFAULT false,
  status              text NOT NULL DEFAULT 'NEW',
  health_score        double precision NOT NULL DEFAULT 100,
  last_ping_at        timestamptz,
  next_expected_at    timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  deleted_at          timestamptz
);
CREATE INDEX monitors_org_page_idx ON monitors (org_id, created_at, id) WHERE deleted_at IS NULL;

-- One row per job execution. A hypertable on started_at under TimescaleDB.
CREATE TABLE runs (
  id               uuid NOT NULL,
  monitor_id       uuid NOT NULL,
  org_id           uuid NOT NULL,
  status           text NOT NULL CHECK (status IN ('RUNNING', 'SUCCESS', 'FAIL')),
  started_at       timestamptz NOT NULL,
  start_inferred   boolean NOT NULL DEFAULT false,
  finished_at      timestamptz,
  duration_ms      bigint,
  exit_code        integer,
  output           text,
  output_truncated boolean NOT NULL DEFAULT false,
  output_bytes     integer,
  PRIMARY KEY (id, started_at)
);
CREATE INDEX runs_monitor_started_idx ON runs (monitor_id, started_at DESC);

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb') THEN
    PERFORM create_hypertable('runs', 'started_at', chunk_time_interval => interval '1 day', if_not_exists => true);
  END IF;
END
$$;
