import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../Config.js"
import { BadGateway } from "../Domain/Errors.js"
import { type DeliveryOutcome, Metrics } from "../Metrics/Metrics.js"
import {
  answerOf,
  type Channel,
  describeAnswer,
  retryWait,
  stateAfter,
  type StoredMessage,
  type Transmission,
  type Verdict
} from "./Channel.js"
import { ChannelRegistry, type Registered } from "./ChannelRegistry.js"
import { type Attempted, DeliveriesRepo, type DeliveryRow } from "./DeliveriesRepo.js"
import { type ChatWebhookRow, type ClaimedWholeTable, type DestinationRows, DestinationsRepo, type WebhookRow } from "./DestinationsRepo.js"
import { echo } from "./Input.js"
import { Mailer } from "./Mailer.js"
import { RATE_WINDOW_MS } from "./RetrySchedule.js"
import { send, type SendResult } from "./Sender.js"
import type { WebhookDestination } from "./WebhookChannel.js"

/**
 * Attempts (docs/delivery.md, "How it works"): due deliveries claimed, the destination's rate
 * limit taken, the request its channel builds sent through the one outbound client, every attempt
 * recorded and each delivery rescheduled per the channel's verdict and retry table.
 *
 * Two cycles. Outbound webhooks are claimed per delivery, several lanes side by side, each claim
 * sent at once (many POSTs in flight). The destinations of every other kind (chat webhooks, alert
 * channels) are claimed whole, one worker at a time per destination, so that what piled up while
 * it waited goes out packed into few messages, at the channel's pace.
 *
 * A request is HTTP (Sender.ts) or a mail (Mailer.ts): the channel says which.
 */

/** Outbound deliveries claimed at once by one lane, and lanes claiming side by side. */
const CLAIM_BATCH = 200
const CLAIM_LANES = 3
/** POSTs in flight per lane. */
const SEND_CONCURRENCY = 100
/** Destinations claimed whole at once (per kind), and one destination's messages read at once (then packed). */
const WHOLE_CLAIM_BATCH = 20
const WHOLE_ROWS_PER_ROUND = 200
const LEASE_MS = 60_000

/** Runs `work` over `items`, at most `limit` at a time; answers the results in order. */
const inPool = async <A, B>(items: ReadonlyArray<A>, limit: number, work: (item: A) => Promise<B>): Promise<Array<B>> => {
  const results: Array<B> = new Array(items.length)
  let next = 0
  const runner = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await work(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner))
  return results
}

/** A kind's channel type as the API names it, the `channel` label of the delivery metrics (docs/metrics.md). */
const channelTypeOf = (kind: { readonly table: string; readonly type?: string | undefined }): string =>
  kind.type ?? (kind.table === "chat_webhooks" ? "discord" : "webhook")

const OUTCOME_OF: Record<Attempted["status"], DeliveryOutcome> = { succeeded: "delivered", pending: "retrying", failed: "failed" }

const minuteOf = (now: number) => Math.floor(now / RATE_WINDOW_MS) * RATE_WINDOW_MS

/** A stored delivery as its channel reads it, with its row. */
const messageOf = (row: DeliveryRow): StoredMessage & { readonly row: DeliveryRow } => ({
  deliveryId: row.id,
  eventType: row.event_type,
  body: row.body,
  row
})

/**
 * One request's answer, for the deliveries it carried: the channel's verdict, each delivery's
 * attempt and new state, and how long the destination waits when told to retry later (the
 * backoff of the group's oldest message, or the answer's Retry-After when longer).
 */
const settle = <D>(channel: Channel<D>, group: ReadonlyArray<DeliveryRow>, result: SendResult, headers: Record<string, string>, at: number) => {
  const verdict = channel.verdictOn(result)
  const { error, statusCode } = answerOf(result, verdict)
  const waitUntil = verdict._tag === "RetryLater"
    ? at + retryWait(channel.retry, Math.max(...group.map((d) => d.attempts)) + 1, verdict.retryAfterMs)
    : undefined
  const attempts = group.map((d): Attempted => {
    const attempt = d.attempts + 1
    const status = stateAfter(channel.retry, verdict, attempt)
    return {
      id: d.id,
      attempt,
      at,
      headers,
      statusCode,
      responseTimeMs: result.responseTimeMs,
      error,
      status,
      next: status === "pending" ? new Date(waitUntil!) : null
    }
  })
  return { verdict, attempts, waitUntil }
}

export class Attempts extends Effect.Service<Attempts>()("jobmon/Attempts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const deliveries = yield* DeliveriesRepo
    const destinations = yield* DestinationsRepo
    const config = yield* AppConfig
    const registry = yield* ChannelRegistry
    const mailer = yield* Mailer
    const metrics = yield* Metrics
    const { chat, webhook } = registry
    /** Attempts recorded, counted by what they came to (once written: counted what the history shows). */
    const countAttempts = (channel: string, attempts: ReadonlyArray<{ readonly status: Attempted["status"] }>) => {
      for (const a of attempts) metrics.delivered(channel, OUTCOME_OF[a.status])
    }
    const webhookChannel = webhook.channel
    /** One attempt, over the transport its channel chose. */
    const sendRequest = (request: Transmission): Promise<SendResult> =>
      request.transport === "mail"
        ? mailer.send(request)
        : send(request.url, request.body, { ...request.headers, ...request.secretHeaders }, { allowPrivateTargets: config.allowPrivateTargets })

    /**
     * Takes up to `wanted` slots of each webhook's current minute (`limit` a minute), in one
     * transaction that locks the webhooks' counters; answers, per webhook, the count before and how
     * many were granted.
     */
    const takeRates = (windowStart: Date, wanted: ReadonlyMap<string, number>, limit: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const ids = [...wanted.keys()]
        yield* deliveries.ensureRateCounters(windowStart, ids)
        const counters = yield* deliveries.lockRateCounters(windowStart, ids)
        const rates = new Map<string, { before: number; granted: number }>()
        for (const c of counters) {
          rates.set(c.webhook_id, { before: c.count, granted: Math.max(0, Math.min(wanted.get(c.webhook_id) ?? 0, limit - c.count)) })
        }
        const taken = [...rates].filter(([, r]) => r.granted > 0).map(([webhook_id, r]) => ({ webhook_id, n: r.granted }))
        if (taken.length > 0) yield* deliveries.addToRateCounters(windowStart, taken)
        return rates
      }))

    /**
     * Attempts claimed outbound deliveries: the rate limit first (over it, a delivery waits for the
     * next minute without using an attempt), then every POST at once (at most SEND_CONCURRENCY in
     * flight, over keep-alive connections), then all attempts recorded in one statement.
     */
    const attemptWebhooks = (claimed: ReadonlyArray<DeliveryRow>, answer = false): Effect.Effect<ReadonlyArray<DeliveryRow>> =>
      Effect.gen(function*() {
        if (claimed.length === 0) return []
        const now = yield* Clock.currentTimeMillis
        const ids = [...new Set(claimed.map((d) => d.webhook_id!))]
        const hooks = new Map((yield* destinations.liveWebhooks(ids)).map((h) => [h.id, webhook.destinationOf(h)]))
        const windowStart = minuteOf(now)
        const limit = webhookChannel.perMinute
        const wanted = new Map<string, number>()
        for (const d of claimed) if (hooks.has(d.webhook_id!)) wanted.set(d.webhook_id!, (wanted.get(d.webhook_id!) ?? 0) + 1)
        const rates = wanted.size === 0 ? new Map() : yield* takeRates(new Date(windowStart), wanted, limit)
        const used = new Map<string, number>()
        const toSend: Array<{ delivery: DeliveryRow; hook: WebhookDestination; count: number }> = []
        const waiting: Array<string> = []
        /** Webhooks over their limit this minute. */
        const full = new Set<string>()
        const orphaned: Array<string> = []
        for (const d of claimed) {
          const hook = hooks.get(d.webhook_id!)
          if (hook === undefined) {
            orphaned.push(d.id)
            continue
          }
          const rate = rates.get(hook.id)
          const i = used.get(hook.id) ?? 0
          if (rate === undefined || i >= rate.granted) {
            waiting.push(d.id)
            full.add(hook.id)
            continue
          }
          used.set(hook.id, i + 1)
          toSend.push({ delivery: d, hook, count: rate.before + i + 1 })
        }
        const settled: Array<DeliveryRow> = []
        const nextMinute = new Date(windowStart + RATE_WINDOW_MS)
        if (waiting.length > 0) {
          // Over the limit: wait for the next minute (nothing is dropped). The other due, unclaimed
          // deliveries of those webhooks wait too, in one statement: otherwise a backlog (pings at
          // thousands a second against 100 a minute) is claimed and put back on every pass.
          yield* deliveries.postponeUnclaimed([...full], nextMinute, new Date(now))
          settled.push(...yield* deliveries.postponeClaimed(waiting, nextMinute))
        }
        if (orphaned.length > 0) {
          settled.push(...yield* deliveries.failOrphaned(orphaned))
          metrics.delivered("webhook", "dropped", orphaned.length)
        }
        const attemptOne = async ({ count, delivery, hook }: (typeof toSend)[number]): Promise<Attempted> => {
          const request = webhookChannel.requestFor(hook, [messageOf(delivery)], {
            at: now,
            rate: { limit, count, resetAt: windowStart + RATE_WINDOW_MS }
          })
          const result = await sendRequest(request)
          return settle(webhookChannel, [delivery], result, request.headers, now).attempts[0]!
        }
        // one promise pool, not a fiber per POST: a fiber each cost far more CPU at a thousand a second
        // (docs/performance.md#figures-behind-code-comments)
        const attempts = yield* Effect.promise(() => inPool(toSend, SEND_CONCURRENCY, attemptOne))
        settled.push(...yield* deliveries.recordAttempts(attempts, answer))
        countAttempts("webhook", attempts)
        return settled
      }).pipe(Effect.orDie)

    /** Claims due outbound deliveries (SKIP LOCKED and a lease: concurrent workers never share one) and attempts them. */
    const claimAndSendWebhooks = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* deliveries.claimDueWebhookDeliveries(new Date(now), new Date(now + LEASE_MS), CLAIM_BATCH)
      const ordered = [...claimed].sort((a, b) =>
        a.next_attempt_at!.getTime() - b.next_attempt_at!.getTime() || Number(a.event_seq ?? 0) - Number(b.event_seq ?? 0)
      )
      yield* attemptWebhooks(ordered)
      return claimed.length
    })

    /**
     * Sends a claimed destination's due messages, oldest first, packed as its channel allows. A
     * RetryLater or a full minute makes the destination wait (`waitUntil`); what is not sent stays
     * pending and goes with what arrives meanwhile. An Invalid verdict ends it. A channel with a
     * pace (`spacingMs`) sends one request and waits that long before the next.
     */
    const sendWaiting = <T extends ClaimedWholeTable, D>(
      kind: Registered<T, D>,
      id: string,
      destination: D,
      due: ReadonlyArray<DeliveryRow>,
      now: number
    ) =>
      Effect.gen(function*() {
        const channel = kind.channel
        const windowStart = minuteOf(now)
        let waitUntil: number | undefined
        for (const group of channel.pack(due.map(messageOf))) {
          const count = yield* deliveries.takeRate(id, new Date(windowStart), channel.perMinute)
          if (count === undefined) {
            waitUntil = windowStart + RATE_WINDOW_MS
            break
          }
          const request = channel.requestFor(destination, group, {
            at: now,
            rate: { limit: channel.perMinute, count, resetAt: windowStart + RATE_WINDOW_MS }
          })
          const result = yield* Effect.promise(() => sendRequest(request))
          const answer = settle(channel, group.map((m) => m.row), result, request.headers, now)
          waitUntil = answer.waitUntil
          yield* deliveries.recordAttempts(answer.attempts)
          countAttempts(channelTypeOf(kind), answer.attempts)
          if (answer.verdict._tag === "Invalid") {
            yield* deliveries.invalidate(kind, id, answer.verdict.reason, new Date(now))
            break
          }
          if (answer.verdict._tag === "RetryLater") break
          if (channel.spacingMs > 0) {
            // the provider's pace: the next request (of this round or a later one) waits
            waitUntil = (yield* Clock.currentTimeMillis) + channel.spacingMs
            break
          }
        }
        return waitUntil
      })

    /** A destination claimed whole: its due messages sent (or failed, when it was deleted or is invalid), its lease ended. */
    const sendWhole = <T extends ClaimedWholeTable, D>(kind: Registered<T, D>, row: DestinationRows[T] & { deleted: boolean }) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const due = yield* deliveries.dueOf(kind, row.id, new Date(now), WHOLE_ROWS_PER_ROUND)
        if (row.deleted || row.status !== "active") {
          yield* deliveries.failClaimed(due.map((d) => d.id), `${kind.noun} ${row.deleted ? "deleted" : "invalid"}`)
          metrics.delivered(channelTypeOf(kind), "dropped", due.length)
          return yield* deliveries.release(kind, row.id)
        }
        const waitUntil = yield* sendWaiting(kind, row.id, kind.destinationOf(row), due, now)
        yield* deliveries.release(kind, row.id, waitUntil === undefined ? null : new Date(waitUntil))
      }).pipe(Effect.orDie)

    const claimAndSendWhole = <T extends ClaimedWholeTable, D>(kind: Registered<T, D>) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* deliveries.claimWhole(kind, new Date(now), new Date(now + LEASE_MS), WHOLE_CLAIM_BATCH)
        yield* Effect.forEach(claimed, (row) => sendWhole(kind, row), { concurrency: "unbounded", discard: true })
        return claimed.length
      })

    const drain = (step: Effect.Effect<number>, batch: number) =>
      Effect.gen(function*() {
        while ((yield* step) === batch) {
          // more due
        }
      })

    /** Everything due now: the destinations claimed whole, and the outbound deliveries in CLAIM_LANES lanes. */
    const sendDue = Effect.all([
      ...registry.claimedWhole.map((kind) => drain(claimAndSendWhole(kind as Registered<any, unknown>), WHOLE_CLAIM_BATCH)),
      ...Array.from({ length: CLAIM_LANES }, () => drain(claimAndSendWebhooks, CLAIM_BATCH))
    ], { concurrency: "unbounded", discard: true })

    /** POST /api/webhooks/{id}/test: a webhook.test delivery, attempted at once; answers its row. */
    const testWebhook = (hook: WebhookRow) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const eventId = randomUUID()
        const row = yield* deliveries.insertLeased({
          webhookId: hook.id,
          eventId,
          eventType: "webhook.test",
          body: webhookChannel.testMessageFor(webhook.destinationOf(hook), { id: eventId, at: now }),
          now: new Date(now),
          leaseUntil: new Date(now + LEASE_MS)
        })
        return (yield* attemptWebhooks([row], true))[0]!
      })

    /** POST /api/alerts/chat/test: one message now, not counted against the minute; 502 names the chat service's answer. */
    const testChat = (row: ChatWebhookRow) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const destination = chat.destinationOf(row)
        const id = randomUUID()
        const message: StoredMessage = {
          deliveryId: id,
          eventType: "chat.test",
          body: chat.channel.testMessageFor(destination, { id, at: now })
        }
        const request = chat.channel.requestFor(destination, [message], {
          at: now,
          rate: { limit: chat.channel.perMinute, count: 0, resetAt: minuteOf(now) + RATE_WINDOW_MS }
        })
        const result = yield* Effect.promise(() => sendRequest(request))
        const verdict = chat.channel.verdictOn(result)
        if (verdict._tag === "Delivered") return { sent: true as const, status: row.status }
        if (verdict._tag === "Invalid") {
          yield* deliveries.invalidate(chat, row.id, verdict.reason, new Date(now))
          return yield* new BadGateway({ message: verdict.reason })
        }
        const outcome = result.outcome
        return yield* new BadGateway({
          message: outcome._tag === "Answered"
            ? `The chat service answered ${outcome.status}; the test message was not accepted.`
            : `The chat service could not be reached (${echo(outcome.error, 160)}).`
        })
      })

    /**
     * The channels resource's test (POST /api/alerts/channels/{id}/test): one message now, not
     * counted against the minute and never retried, recorded as a delivery with its attempt; an
     * answer that says the destination is gone makes it invalid. Answers the delivery, the verdict
     * and the provider's answer in one line.
     */
    const testWhole = <T extends ClaimedWholeTable, D>(kind: Registered<T, D>, row: DestinationRows[T]) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const destination = kind.destinationOf(row)
        const id = randomUUID()
        const eventType = "channel.test"
        const body = kind.channel.testMessageFor(destination, { id, at: now })
        const request = kind.channel.requestFor(destination, [{ deliveryId: id, eventType, body }], {
          at: now,
          rate: { limit: kind.channel.perMinute, count: 0, resetAt: minuteOf(now) + RATE_WINDOW_MS }
        })
        const result = yield* Effect.promise(() => sendRequest(request))
        const verdict: Verdict = kind.channel.verdictOn(result)
        const { error, statusCode } = answerOf(result, verdict)
        const delivery = yield* deliveries.insertAttempted({
          column: kind.column,
          destinationId: row.id,
          eventId: id,
          eventType,
          body,
          attempt: {
            id,
            attempt: 1,
            at: now,
            headers: request.headers,
            statusCode,
            responseTimeMs: result.responseTimeMs,
            error,
            status: verdict._tag === "Delivered" ? "succeeded" : "failed",
            next: null
          }
        })
        metrics.delivered(channelTypeOf(kind), verdict._tag === "Delivered" ? "delivered" : "failed")
        if (verdict._tag === "Invalid") yield* deliveries.invalidate(kind, row.id, verdict.reason, new Date(now))
        return { delivery, verdict, answer: describeAnswer(result) }
      })

    return { sendDue, testWebhook, testChat, testWhole } as const
  }),
  dependencies: [DeliveriesRepo.Default, DestinationsRepo.Default, ChannelRegistry.Default, Mailer.Default, Metrics.Default]
}) {}
