-- Delivery without polling, and chat bursts (docs/delivery.md, "How it works").

-- Wakes the delivery workers (LISTEN jobmon_delivery): once per statement that writes events or
-- deliveries, with the table's name as the payload. PostgreSQL folds identical notifications of one
-- transaction into one.
CREATE FUNCTION jobmon_notify_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('jobmon_delivery', TG_TABLE_NAME);
  RETURN NULL;
END $$;
CREATE TRIGGER events_notify_delivery AFTER INSERT ON events
  FOR EACH STATEMENT EXECUTE FUNCTION jobmon_notify_delivery();
CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
  FOR EACH STATEMENT EXECUTE FUNCTION jobmon_notify_delivery();

-- The event's place in the events table: chat messages that pile up go out in this order.
ALTER TABLE webhook_deliveries ADD COLUMN event_seq bigint;
CREATE INDEX webhook_deliveries_chat_due_idx ON webhook_deliveries (chat_webhook_id, event_seq)
  WHERE status = 'pending' AND chat_webhook_id IS NOT NULL;

-- A chat webhook is sent to by one worker at a time (claimed_until, a lease), and not before
-- wait_until (after a 429, or when its 30 messages of the minute are used up); what piles up
-- meanwhile goes out together, several embeds a message.
ALTER TABLE chat_webhooks ADD COLUMN claimed_until timestamptz;
ALTER TABLE chat_webhooks ADD COLUMN wait_until timestamptz;
