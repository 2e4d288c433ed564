-- Dashboard sign-in (docs/dashboard-auth.md): browser sessions, failed sign-ins (rate limit) and invites.
-- users.password_hash (0001) holds `scrypt$N$r$p$salt$hash`; a user without one cannot sign in.

-- A session's cookie value is never stored: only its SHA-256. Times come from the service's clock.
CREATE TABLE sessions (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  secret_hash  bytea NOT NULL UNIQUE,
  user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id       uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  csrf_token   text NOT NULL,
  created_at   timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

-- One row per failed sign-in, keyed by the lower-cased email tried; rows older than the window are purged.
CREATE TABLE sign_in_failures (
  email      text NOT NULL,
  failed_at  timestamptz NOT NULL
);
CREATE INDEX sign_in_failures_email_idx ON sign_in_failures (email, failed_at);

-- An invitation to join an organization; its token is shown once and stored only as a SHA-256.
CREATE TABLE invites (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id       uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  email        text NOT NULL,
  name         text,
  role         text NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'member')),
  token_hash   bytea NOT NULL UNIQUE,
  invited_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  accepted_at  timestamptz,
  accepted_by  uuid REFERENCES users (id) ON DELETE SET NULL
);
CREATE INDEX invites_org_idx ON invites (org_id, created_at);
