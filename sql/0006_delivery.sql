-- Outbound webhooks and their deliveries (docs/delivery.md). Deliveries are rows written before
-- they are attempted: a restart loses none and resumes retries when they are due.

-- One row per outbound webhook. A deleted webhook keeps its row (deleted_at set) so that its
-- delivery history stays readable; nothing is sent to it any more. `secret` signs the bodies
-- (HMAC-SHA256), so it is kept as given. `after_seq` is the newest events.seq when the webhook was
-- made: it receives only events after it.
CREATE TABLE webhooks (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id             uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  url                text NOT NULL,
  secret             text NOT NULL,
  events             text[] NOT NULL,
  filter_monitor_ids uuid[] NOT NULL DEFAULT '{}',
  filter_severity    text[] NOT NULL DEFAULT '{}',
  after_seq          bigint NOT NULL DEFAULT 0,
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL,
  deleted_at         timestamptz
);
CREATE INDEX webhooks_org_idx ON webhooks (org_id, created_at, id) WHERE deleted_at IS NULL;

-- One row per chat alert webhook (decisions §9): incidents matching `rules` (empty lists match
-- everything) are posted as chat messages. `status` turns 'invalid' when the chat service answered
-- 404 or 401 (status_reason says which); nothing is sent to it until its url is updated.
CREATE TABLE chat_webhooks (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id         uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name           text NOT NULL,
  url            text NOT NULL,
  rules_severity text[] NOT NULL DEFAULT '{}',
  rules_types    text[] NOT NULL DEFAULT '{}',
  mention        text,
  status         text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'invalid')),
  status_reason  text,
  after_seq      bigint NOT NULL DEFAULT 0,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL,
  deleted_at     timestamptz
);
CREATE INDEX chat_webhooks_org_idx ON chat_webhooks (org_id, created_at, id) WHERE deleted_at IS NULL;

-- How far the delivery worker has fanned the events table out into deliveries (one row).
CREATE TABLE delivery_cursor (
  id  integer PRIMARY KEY CHECK (id = 1),
  seq bigint NOT NULL
);
INSERT INTO delivery_cursor (id, seq) VALUES (1, 0);

-- One row per (webhook, event) or (chat webhook, event): the exact body that is posted (signed
-- for outbound webhooks), its state and when it is next due. `claimed_until` is a worker's lease while it sends (claims use FOR UPDATE SKIP
-- LOCKED, so several workers never take the same delivery).
CREATE TABLE webhook_deliveries (
  id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  webhook_id             uuid REFERENCES webhooks (id) ON DELETE CASCADE,
  chat_webhook_id        uuid REFERENCES chat_webhooks (id) ON DELETE CASCADE,
  event_id               uuid NOT NULL,
  event_type             text NOT NULL,
  body                   text NOT NULL,
  created_at             timestamptz NOT NULL,
  status                 text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts               integer NOT NULL DEFAULT 0,
  next_attempt_at        timestamptz,
  claimed_until          timestamptz,
  last_status_code       integer,
  last_response_time_ms  integer,
  last_error             text,
  request_headers        jsonb,
  UNIQUE (webhook_id, event_id),
  UNIQUE (chat_webhook_id, event_id),
  CHECK (num_nonnulls(webhook_id, chat_webhook_id) = 1)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (webhook_id, created_at DESC, id);
CREATE INDEX webhook_deliveries_chat_idx ON webhook_deliveries (chat_webhook_id, created_at DESC, id);

-- Every attempt, as sent and as answered.
CREATE TABLE webhook_delivery_attempts (
  id               bigserial PRIMARY KEY,
  delivery_id      uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt          integer NOT NULL,
  at               timestamptz NOT NULL,
  status_code      integer,
  response_time_ms integer,
  error            text,
  request_headers  jsonb NOT NULL
);
CREATE INDEX webhook_delivery_attempts_delivery_idx ON webhook_delivery_attempts (delivery_id, attempt);

-- Deliveries sent per webhook (outbound or chat) per minute, fixed windows: 100 a minute to an
-- outbound webhook, 30 to a chat webhook.
CREATE TABLE webhook_rate (
  webhook_id   uuid NOT NULL,
  window_start timestamptz NOT NULL,
  count        integer NOT NULL,
  PRIMARY KEY (webhook_id, window_start)
);
