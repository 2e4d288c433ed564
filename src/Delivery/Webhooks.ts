import { Effect } from "effect"
import { iso } from "../Domain/Instant.js"
import type { Delivery } from "./Api.js"
import { Attempts } from "./Attempts.js"
import { DeliveriesRepo, type DeliveryRow } from "./DeliveriesRepo.js"
import { DeliveryWorker } from "./DeliveryWorker.js"
import { Destinations } from "./Destinations.js"

/**
 * Outbound webhooks and chat webhooks as the API serves them (docs/decisions.md#delivery,
 * docs/delivery.md): their configuration (Destinations.ts), their deliveries, the test sends
 * (Attempts.ts); and the delivery worker (DeliveryWorker.ts), which runs as long as this service.
 */

export const toDelivery = (row: DeliveryRow): Delivery => ({
  id: row.id,
  eventId: row.event_id,
  event: row.event_type,
  createdAt: iso(row.created_at),
  status: row.status,
  attempts: row.attempts,
  retryCount: Math.max(0, row.attempts - 1),
  lastStatusCode: row.last_status_code,
  lastResponseTimeMs: row.last_response_time_ms,
  lastError: row.last_error,
  nextAttemptAt: row.status === "pending" ? iso(row.next_attempt_at) : null,
  requestHeaders: row.request_headers
})

export class Webhooks extends Effect.Service<Webhooks>()("jobmon/Webhooks", {
  effect: Effect.gen(function*() {
    const { chats, webhooks } = yield* Destinations
    const deliveriesRepo = yield* DeliveriesRepo
    const attempts = yield* Attempts
    const worker = yield* DeliveryWorker

    /** A webhook's deliveries, newest first. */
    const deliveries = (orgId: string, id: string, limit: number) =>
      Effect.gen(function*() {
        yield* webhooks.find(orgId, id)
        return (yield* deliveriesRepo.ofWebhook(id, limit)).map(toDelivery)
      })

    /** POST /api/webhooks/{id}/test: a webhook.test delivery, attempted at once. */
    const test = Effect.fn("Webhooks.test")(function*(orgId: string, id: string) {
      const hook = yield* webhooks.find(orgId, id)
      return toDelivery(yield* attempts.testWebhook(hook))
    })

    /** POST /api/alerts/chat/test: one message now; 502 names the chat service's answer. */
    const chatTest = Effect.fn("Webhooks.chatTest")(function*(orgId: string, id: string) {
      return yield* attempts.testChat(yield* chats.find(orgId, id))
    })

    return {
      create: webhooks.create,
      list: webhooks.list,
      get: webhooks.get,
      update: webhooks.update,
      remove: webhooks.remove,
      deliveries,
      test,
      /** Runs one whole pass of the worker (fan-out and due deliveries) and waits for it (tests). */
      flush: worker.flush,
      chatCreate: chats.create,
      chatList: chats.list,
      chatGet: chats.get,
      chatUpdate: chats.update,
      chatRemove: chats.remove,
      chatTest
    } as const
  }),
  dependencies: [Destinations.Default, DeliveriesRepo.Default, Attempts.Default, DeliveryWorker.Default]
}) {}
