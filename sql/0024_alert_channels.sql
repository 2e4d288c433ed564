-- Alert channels (docs/alerts.md): email, Slack, and the channel types that follow, one row each;
-- Discord-style chat webhooks keep their table (chat_webhooks, sql/0006) and are listed beside them
-- by the API with type 'discord'.

-- One row per alert channel. `type` names its channel module (email, slack, …): the API checks it,
-- so a new type needs no migration. `config` is the type's configuration as given, secrets included
-- (a Slack webhook url is a credential): the API never shows those back. `rules_*` route incidents
-- (empty lists match everything); `rules_events` holds incident.opened, incident.acknowledged and
-- incident.resolved (empty: all three). Reminders: every `reminder_every_minutes` minutes while an
-- incident stays OPEN, at most `reminder_max` times (both null: none). `status` turns 'invalid'
-- when the provider says the channel is gone or unauthorized (status_reason says so); nothing is
-- sent to it until it is edited. `after_seq`: it receives only events recorded after it was made.
-- `claimed_until` (one worker at a time sends to it) and `wait_until` (a backoff, a full minute, the
-- provider's pace) as for chat webhooks.
CREATE TABLE alert_channels (
  id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id                 uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  type                   text NOT NULL,
  name                   text NOT NULL,
  config                 jsonb NOT NULL,
  rules_monitor_ids      uuid[] NOT NULL DEFAULT '{}',
  rules_tags             text[] NOT NULL DEFAULT '{}',
  rules_types            text[] NOT NULL DEFAULT '{}',
  rules_severity         text[] NOT NULL DEFAULT '{}',
  rules_events           text[] NOT NULL DEFAULT '{}',
  reminder_every_minutes integer CHECK (reminder_every_minutes > 0),
  reminder_max           integer CHECK (reminder_max > 0),
  status                 text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'invalid')),
  status_reason          text,
  after_seq              bigint NOT NULL DEFAULT 0,
  claimed_until          timestamptz,
  wait_until             timestamptz,
  created_at             timestamptz NOT NULL,
  updated_at             timestamptz NOT NULL,
  deleted_at             timestamptz,
  CHECK ((reminder_every_minutes IS NULL) = (reminder_max IS NULL))
);
CREATE INDEX alert_channels_org_idx ON alert_channels (org_id, created_at, id) WHERE deleted_at IS NULL;

-- A delivery names exactly one destination: an outbound webhook, a chat webhook or an alert channel.
ALTER TABLE webhook_deliveries ADD COLUMN channel_id uuid REFERENCES alert_channels (id) ON DELETE CASCADE;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_channel_event_key UNIQUE (channel_id, event_id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_one_destination
  CHECK (num_nonnulls(webhook_id, chat_webhook_id, channel_id) = 1);
CREATE INDEX webhook_deliveries_channel_idx ON webhook_deliveries (channel_id, created_at DESC, id);
CREATE INDEX webhook_deliveries_channel_due_idx ON webhook_deliveries (channel_id, event_seq)
  WHERE status = 'pending' AND channel_id IS NOT NULL;

-- Reminders still to send: one row per (incident, channel) whose channel took the incident's
-- incident.opened alert and has reminders. `sent` reminders so far; the next is due at `next_at`.
-- The worker that sends reminder n locks the row (FOR UPDATE SKIP LOCKED), writes the delivery
-- (its event_id derived from incident and n: unique per channel) and moves the row on, in one
-- transaction, so with several instances each reminder is sent once. The row goes when the
-- incident is acknowledged or resolved, the channel is deleted or its last reminder is sent.
CREATE TABLE alert_reminders (
  incident_id uuid NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
  channel_id  uuid NOT NULL REFERENCES alert_channels (id) ON DELETE CASCADE,
  sent        integer NOT NULL DEFAULT 0,
  next_at     timestamptz NOT NULL,
  PRIMARY KEY (incident_id, channel_id)
);
CREATE INDEX alert_reminders_due_idx ON alert_reminders (next_at);
