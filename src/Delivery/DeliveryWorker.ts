import { Clock, Deferred, Effect, Queue, Stream } from "effect"
import Pg from "pg"
import { Database } from "../Db/Database.js"
import { Attempts } from "./Attempts.js"
import { ChannelRegistry } from "./ChannelRegistry.js"
import { DeliveriesRepo } from "./DeliveriesRepo.js"
import { FanOut } from "./FanOut.js"
import { PingFeed } from "./PingFeed.js"
import { Reminders } from "./Reminders.js"
import { RATE_WINDOW_MS } from "./RetrySchedule.js"

/**
 * The delivery worker (docs/delivery.md, "How it works"), one fiber per service instance. Each
 * pass syncs which pings record events, fans new events out into deliveries, feeds the ping
 * subscribers, makes the reminders that are due, sends whatever is due and answers how long it may sleep. It is woken by PostgreSQL
 * (LISTEN: a trigger notifies on every write of events or deliveries, from any instance), by this
 * instance's commits of ping events, and otherwise sleeps on the Clock until the next retry, rate
 * window, chat or channel wait, or reminder is due, and at most SAFETY_POLL_MS. Nothing ticks while nothing is due.
 */

/** Without a notification, the worker still looks this often (a missed notification costs at most this). */
const SAFETY_POLL_MS = 30_000
const ERROR_RETRY_MS = 1_000
const LISTEN_RETRY = "1 second"
const WAKE_CHANNEL = "jobmon_delivery"
/** Ping events wake the worker at once, then at most once this often while they keep coming. */
const PING_FEED_MS = 1_000

export class DeliveryWorker extends Effect.Service<DeliveryWorker>()("jobmon/DeliveryWorker", {
  scoped: Effect.gen(function*() {
    const database = yield* Database
    const deliveries = yield* DeliveriesRepo
    const pingFeed = yield* PingFeed
    const fanOut = yield* FanOut
    const attempts = yield* Attempts
    const reminders = yield* Reminders
    const { claimedWhole } = yield* ChannelRegistry

    /**
     * Once a minute: rate counters of past minutes are of no use, and ping events every subscriber
     * has had are deleted after a day.
     */
    let purgedAt = Number.NEGATIVE_INFINITY
    const purgeOnceAMinute = (now: number) =>
      now - purgedAt < RATE_WINDOW_MS ? Effect.void : Effect.gen(function*() {
        purgedAt = now
        yield* deliveries.purgeRates(new Date(now - 2 * RATE_WINDOW_MS))
        yield* pingFeed.purge(now)
      })

    /**
     * Fans out every new event, feeds the ping subscribers and sends everything due; answers how long
     * to sleep. Under a stream of events, each fan-out batch runs beside the sending of what the one
     * before produced, so neither waits for the other (fanning everything out first sent almost
     * nothing while the stream lasted: docs/performance.md#figures-behind-code-comments).
     */
    const pass = Effect.gen(function*() {
      // Which pings record events: another instance may have changed the subscriptions. Its change
      // woke this worker (sql/0012), but a lost notification must not matter: every pass compares
      // the subscription version (sql/0020), however it was woken (notification, retry, poll).
      yield* pingFeed.sync
      // Reminders due now become deliveries, sent below with the rest.
      yield* reminders.makeDue
      for (;;) {
        const [events] = yield* Effect.all([fanOut.fanOutBatch, attempts.sendDue], { concurrency: "unbounded" })
        if (events < fanOut.batchSize) break
      }
      // Sending frees room in the subscribers' queues: fed again until nothing moves.
      yield* pingFeed.feedUntilStill(attempts.sendDue)
      const now = yield* Clock.currentTimeMillis
      yield* purgeOnceAMinute(now)
      const [delivery, reminder] = yield* Effect.all([deliveries.nextDue(claimedWhole), reminders.nextDue])
      const due = delivery === undefined ? reminder : reminder === undefined ? delivery : Math.min(delivery, reminder)
      return due === undefined ? SAFETY_POLL_MS : Math.min(SAFETY_POLL_MS, Math.max(1, due - now))
    })

    const wake = yield* Queue.unbounded<Deferred.Deferred<void> | undefined>()

    /**
     * This instance's LISTEN connection, as a stream of wake-ups that fails when the connection is
     * lost. (The sql-pg client's own `listen` keeps a lost connection without a word: its stream
     * neither ends nor fails, notifications just stop, and every alert then waited for the safety
     * poll until a restart.) Its first element comes once LISTEN is in place: what was notified
     * while no connection listened is caught up by the pass it starts.
     */
    const wakeups = Stream.asyncPush<void, Error>((emit) =>
      Effect.gen(function*() {
        const client = new Pg.Client(database.pool.options)
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            client.removeAllListeners()
            client.on("error", () => {})
            void client.end().catch(() => {})
          })
        )
        client.on("error", (e) => emit.fail(e))
        client.on("end", () => emit.fail(new Error("the LISTEN connection closed")))
        client.on("notification", (n) => {
          if (n.channel === WAKE_CHANNEL) emit.single(undefined)
        })
        // interruptible: a shutdown does not wait for a connection that does not come
        yield* Effect.tryPromise({
          try: async () => {
            await client.connect()
            await client.query(`LISTEN ${WAKE_CHANNEL}`)
          },
          catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
        })
        emit.single(undefined)
      })
    )

    // Woken by PostgreSQL (a trigger notifies on every write of events or deliveries, from any
    // instance); the Clock-timed sleep only waits for retries, rate windows, and as a safety poll.
    yield* wakeups.pipe(
      Stream.runForEach(() => Queue.offer(wake, undefined)),
      Effect.catchAllCause((cause) => Effect.logWarning("delivery LISTEN lost; polling until it is back", cause)),
      Effect.zipRight(Effect.sleep(LISTEN_RETRY)),
      Effect.forever,
      Effect.forkScoped
    )

    // Each pass starts by syncing which pings record events (the first one too, at start).
    const worker = Effect.gen(function*() {
      for (;;) {
        const waiting = yield* Queue.takeAll(wake)
        const wait = yield* pass.pipe(
          Effect.catchAllCause((cause) => Effect.as(Effect.logError("webhook delivery pass failed", cause), ERROR_RETRY_MS))
        )
        for (const d of waiting) if (d !== undefined) yield* Deferred.succeed(d, undefined)
        const more = yield* Queue.size(wake)
        if (more === 0) yield* Effect.raceFirst(Effect.sleep(wait), Queue.take(wake).pipe(Effect.flatMap((d) => Queue.offer(wake, d))))
      }
    })
    yield* Effect.forkScoped(worker)

    // Ping events notify nobody (a notification per ping would cost every ping's commit): the
    // instance that records them feeds them, woken by its intake's commit, at once and then at
    // most once a PING_FEED_MS while more keep coming. Idle, this waits without a timer.
    yield* pingFeed.recorded.pipe(
      Effect.zipRight(Queue.offer(wake, undefined)),
      Effect.zipRight(Effect.sleep(PING_FEED_MS)),
      Effect.forever,
      Effect.forkScoped
    )

    /** Runs one whole pass of the worker (fan-out and due deliveries) and waits for it (tests, test endpoint). */
    const flush = Effect.gen(function*() {
      const done = yield* Deferred.make<void>()
      yield* Queue.offer(wake, done)
      yield* Deferred.await(done)
    })

    return { flush } as const
  }),
  dependencies: [DeliveriesRepo.Default, PingFeed.Default, FanOut.Default, Attempts.Default, ChannelRegistry.Default, Reminders.Default]
}) {}
