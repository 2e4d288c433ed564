-- Ping URLs without a header, slugs, auto-provisioning and badges (docs/pings.md#ping-urls,
-- docs/badges.md, docs/decisions.md#ping-urls-slugs-and-badges).
--
--   monitors.ping_id        the monitor's ping capability: /ping/<ping_id> records a ping without a
--                           token. A random (version 4) UUID: 122 random bits, the same shape as a
--                           Healthchecks check UUID. Separate from the monitor's id (which read
--                           tokens see); rotated by POST /api/monitors/{id}/ping-url/rotate.
--   monitors.slug           optional; lowercase letters, digits, - and _ (1 to 100), unique among the
--                           organization's monitors that are not deleted.
--   organizations.ping_key  /ping/<ping_key>/<slug>: the organization's slug ping capability.
--   organizations.badge_key /badge/<badge_key>/<slug or tag>.svg: its public status badges.
-- Both keys: 32 hex characters of a random UUID (122 random bits), rotatable by an admin.
-- Capabilities are stored as they are (the API shows them to write and admin tokens again), never
-- logged: a request's path is not logged for these routes.
ALTER TABLE monitors
  ADD COLUMN ping_id uuid NOT NULL DEFAULT gen_random_uuid(),
  ADD COLUMN slug text CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,99}$');
CREATE UNIQUE INDEX monitors_ping_id_idx ON monitors (ping_id);
CREATE UNIQUE INDEX monitors_org_slug_idx ON monitors (org_id, slug) WHERE deleted_at IS NULL AND slug IS NOT NULL;

ALTER TABLE organizations
  ADD COLUMN ping_key text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', ''),
  ADD COLUMN badge_key text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '');
CREATE UNIQUE INDEX organizations_ping_key_idx ON organizations (ping_key);
CREATE UNIQUE INDEX organizations_badge_key_idx ON organizations (badge_key);

-- /ping/.../log: output sent without a change of state (Healthchecks' "log" event). Kept like a
-- run's output (redacted, truncated to the monitor's max_output_size_kb), with the run it names (rid).
CREATE TABLE ping_logs (
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  monitor_id       uuid NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  org_id           uuid NOT NULL,
  received_at      timestamptz NOT NULL,
  run_id           uuid,
  output           text,
  output_truncated boolean NOT NULL DEFAULT false,
  output_bytes     integer,
  PRIMARY KEY (monitor_id, received_at, id)
);
