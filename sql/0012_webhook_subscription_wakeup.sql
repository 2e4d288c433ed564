-- A webhook that subscribes to ping.received (or stops, or changes its monitor filter) wakes the
-- delivery worker of every instance (LISTEN jobmon_delivery): each worker re-reads which pings
-- record an event at the start of its pass, so an instance other than the one that took the change
-- starts (or stops) recording within moments, not at its next restart. Only the columns that decide
-- the subscription fire it: the worker's own writes (ping_seq, after_seq) do not.
CREATE TRIGGER webhooks_subscription_notify AFTER INSERT OR UPDATE OF events, filter_monitor_ids, deleted_at ON webhooks
  FOR EACH STATEMENT EXECUTE FUNCTION jobmon_notify_delivery();
