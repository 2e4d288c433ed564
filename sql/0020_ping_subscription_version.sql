-- Which pings record a ping.received event is decided by the webhooks that subscribe to it
-- (docs/delivery.md, "ping.received"). Every service instance re-reads that decision at the start of
-- each delivery pass; this counter makes the re-read cheap: one row by its key, and the webhooks
-- are read again only when it moved. The NOTIFY of sql/0012 only wakes the workers sooner: a
-- notification that is lost (a LISTEN connection that was down, a change made while no instance
-- listened) is not needed, since the counter is written in the transaction of the change itself.
--
-- A statement trigger: one increment per statement that may change a subscription, whoever makes
-- it (the API, or an operator's SQL). The worker's own writes to webhooks (ping_seq) do not fire it.
-- The row lock it takes makes concurrent subscription changes commit one after the other; they
-- are rare (a person changes a webhook).
CREATE TABLE ping_subscription_version (
  id      integer PRIMARY KEY CHECK (id = 1),
  version bigint NOT NULL
);
INSERT INTO ping_subscription_version (id, version) VALUES (1, 0);

CREATE FUNCTION jobmon_ping_subscription_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE ping_subscription_version SET version = version + 1 WHERE id = 1;
  RETURN NULL;
END $$;

CREATE TRIGGER webhooks_ping_subscription_version
  AFTER INSERT OR DELETE OR UPDATE OF org_id, events, filter_monitor_ids, deleted_at ON webhooks
  FOR EACH STATEMENT EXECUTE FUNCTION jobmon_ping_subscription_changed();
CREATE TRIGGER webhooks_ping_subscription_version_truncate
  AFTER TRUNCATE ON webhooks
  FOR EACH STATEMENT EXECUTE FUNCTION jobmon_ping_subscription_changed();
