import { SqlClient } from "@effect/sql"
import { Clock, Effect, Queue } from "effect"
import { Intake } from "../Pings/Intake.js"
import { channelEventOf } from "./Channel.js"
import { webhookDestinationOf } from "./DestinationsRepo.js"
import { PingFeedRepo } from "./PingFeedRepo.js"
import { RATE_LIMIT_PER_MINUTE } from "./RetrySchedule.js"
import { webhookChannel } from "./WebhookChannel.js"

/**
 * ping.received (docs/delivery.md, "ping.received"): pings arrive thousands of times a second, a
 * webhook takes 100 deliveries a minute. So ping events are recorded only while some webhook
 * subscribes to them (the intake's switch, kept in sync here), as narrow rows of `ping_events`, and
 * turned into deliveries as each subscriber can take them (the feed). A ping costs the intake its
 * row and nothing else: no delivery row per ping, no notification per ping.
 */

/** ping.received deliveries a webhook has pending at most (RATE_LIMIT_PER_MINUTE: a minute's worth). */
const PING_QUEUE = RATE_LIMIT_PER_MINUTE
/** Ping events one feed of a webhook looks through at most (a filter that matches few moves on anyway). */
const PING_SCAN = 100_000
/** Ping events are kept this long at least (GET /api/events?type=ping.received). */
const PING_EVENTS_KEEP_MS = 24 * 3_600_000
const PURGE_CHUNK = 50_000

export class PingFeed extends Effect.Service<PingFeed>()("jobmon/PingFeed", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* PingFeedRepo
    const intake = yield* Intake

    /**
     * ping.received events are written only while some webhook subscribes to them, and only for
     * the monitors such a webhook can receive: every monitor of its organization when it has no
     * monitor filter (one organization's choice costs the others nothing), else those it names.
     *
     * Cheap enough for every pass: the subscription version (sql/0020, moved by a trigger in the
     * transaction of any change to a webhook's subscription) is read first, and the webhooks only
     * when it moved since the last sync. Read before the webhooks, so the state applied is at least
     * as new as the version remembered (at worst one sync more). One sync at a time: a slow one
     * could otherwise apply an older state after a newer one (the API's sync after a change, and
     * the worker's pass, run side by side).
     */
    const syncLock = yield* Effect.makeSemaphore(1)
    let syncedVersion: string | undefined = undefined
    const sync = syncLock.withPermits(1)(Effect.gen(function*() {
      const current = yield* repo.subscriptionVersion
      if (current !== undefined && current === syncedVersion) return
      const rows = yield* repo.subscriptions
      yield* intake.setPingEvents({
        orgs: new Set(rows.filter((r) => r.every_monitor).map((r) => r.org_id)),
        monitors: new Set(rows.filter((r) => !r.every_monitor).flatMap((r) => r.monitor_ids))
      })
      // No version row (removed by hand): read the webhooks on every pass.
      syncedVersion = current
    }))

    /**
     * This instance's intake committed ping events: the worker's wake-up (ping events notify nobody;
     * the instance that records them feeds them). One pending signal stands for any number.
     */
    const recorded = yield* Queue.dropping<void>(1)
    yield* intake.onPingEventsRecorded(() => void recorded.unsafeOffer(undefined))
    yield* Effect.addFinalizer(() => intake.onPingEventsRecorded(() => {}))

    /**
     * One subscriber's next ping events, up to seq `upTo`, into deliveries: as many as it has room
     * for (PING_QUEUE pending at most), oldest first, in one transaction with its row locked;
     * `ping_seq` moves past them, so the rows after it are its queue. Answers whether it moved.
     */
    const feedOne = (id: string, upTo: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const hook = yield* repo.lockSubscriber(id)
        if (hook === undefined) return false
        const room = PING_QUEUE - (yield* repo.pendingPingDeliveries(id))
        if (room <= 0) return false
        const from = Number(hook.ping_seq)
        const until = Math.min(upTo, from + PING_SCAN)
        if (until <= from) return false
        const events = yield* repo.pingEventsBetween(hook.org_id, from, until, hook.filter_monitor_ids, room)
        const reached = events.length === room ? Number(events[events.length - 1]!.seq) : until
        if (events.length > 0) {
          const now = new Date(yield* Clock.currentTimeMillis)
          const destination = webhookDestinationOf(hook)
          const rows = events.flatMap((e) => {
            const body = webhookChannel.messageFor(destination, channelEventOf(e))
            return body === undefined ? [] : [{ event_id: e.id, event_seq: Number(e.seq), body }]
          })
          yield* repo.insertPingDeliveries(id, rows, now)
        }
        yield* repo.movePingSeq(id, reached)
        return true
      })).pipe(Effect.orDie)

    /**
     * Feeds every subscriber, then runs `send` (sending what was made frees room), and again until
     * no subscriber moves on: a backlog goes out as fast as the subscribers' rate limits allow,
     * without waiting for a timer. Up to the newest ping event when it starts, so it stops however
     * fast pings arrive (those wake the worker again).
     */
    const feedUntilStill = (send: Effect.Effect<void>) =>
      Effect.gen(function*() {
        const subscribers = yield* repo.subscribers
        const upTo = subscribers.length === 0 ? 0 : yield* repo.newestSeq
        // Those fed up to the newest already have nothing to take: no transaction for them.
        const behind = subscribers.filter((s) => s.pingSeq < upTo)
        if (behind.length === 0) return yield* send
        for (;;) {
          let moved = false
          for (const { id } of behind) moved = (yield* feedOne(id, upTo)) || moved
          yield* send
          if (!moved) return
        }
      })

    /**
     * Ping events every subscriber has been fed and that are over a day old are deleted, oldest
     * first, in chunks (they stay a day for GET /api/events?type=ping.received).
     */
    const purge = (now: number) =>
      Effect.gen(function*() {
        const cutoff = new Date(now - PING_EVENTS_KEEP_MS)
        while ((yield* repo.deleteFed(cutoff, PURGE_CHUNK)) >= PURGE_CHUNK) {
          // more to delete
        }
      })

    return {
      sync,
      /** Waits until this instance's intake has committed ping events (since the last wait). */
      recorded: Queue.take(recorded),
      feedUntilStill,
      purge
    } as const
  }),
  dependencies: [PingFeedRepo.Default]
}) {}
