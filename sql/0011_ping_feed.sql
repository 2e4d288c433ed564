-- ping.received deliveries are made as the endpoint can take them, not one per ping at once
-- (docs/delivery.md, "ping.received").

-- How far each webhook's ping.received deliveries have been made from the events table (events.seq;
-- null: from after_seq). The events themselves are the queue of what is still to be delivered.
ALTER TABLE webhooks ADD COLUMN ping_seq bigint;

-- The fan-out into deliveries reads only the other events: this index holds just those.
CREATE INDEX events_fanout_idx ON events (seq) WHERE type <> 'ping.received';

-- Ping events no longer wake the delivery workers (a statement of the ping writer every few
-- milliseconds, each NOTIFY serialising commits): the events repository notifies for the others
-- in the statement that writes them (src/Events/EventsRepo.ts); deliveries still wake by trigger.
DROP TRIGGER events_notify_delivery ON events;
