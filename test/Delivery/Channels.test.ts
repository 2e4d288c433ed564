import { describe, expect, it } from "@effect/vitest"
import type { Channel, StoredMessage } from "../../src/Delivery/Channel.js"
import { retryWait, stateAfter } from "../../src/Delivery/Channel.js"
import { chatChannel, type ChatDestination } from "../../src/Delivery/ChatChannel.js"
import type { Outcome } from "../../src/Delivery/RetrySchedule.js"
import { ntfyChannel, type NtfyDestination } from "../../src/Delivery/NtfyChannel.js"
import { slackChannel, type SlackDestination } from "../../src/Delivery/SlackChannel.js"
import { telegramChannel, type TelegramDestination } from "../../src/Delivery/TelegramChannel.js"
import { teamsChannel, type TeamsDestination } from "../../src/Delivery/TeamsChannel.js"
import { webhookChannel, type WebhookDestination } from "../../src/Delivery/WebhookChannel.js"

// The contract every channel implements (docs/delivery.md, "The modules"): pure, no server needed.

const answered = (status: number, retryAfterSeconds?: number) => ({
  outcome: { _tag: "Answered", status } as Outcome,
  responseTimeMs: 5,
  retryAfterSeconds
})
const noAnswer = { outcome: { _tag: "NoAnswer", error: "timeout" } as Outcome, responseTimeMs: 5000 }
const refused = { outcome: { _tag: "Refused", error: "refused: not public" } as Outcome, responseTimeMs: 0 }

const webhook: WebhookDestination = {
  id: "w1",
  url: "https://example.com/hook",
  secret: "0123456789abcdef0123",
  events: ["incident.opened"],
  filterMonitorIds: [],
  filterSeverity: []
}
const chat: ChatDestination = { id: "c1", name: "ops", url: "https://discord.com/api/webhooks/1/t", rulesSeverity: [], rulesTypes: [], mention: null }
const slack: SlackDestination = { id: "s1", name: "ops", url: "https://hooks.slack.com/services/T/B/x", mention: "<!here>" }
const telegram: TelegramDestination = { id: "t1", name: "ops", botToken: "123:abc", chatId: -100123, baseUrl: "https://api.telegram.org" }
const teams: TeamsDestination = { id: "t1", name: "ops", url: "https://prod-1.westus.logic.azure.com/workflows/x/triggers/manual/paths/invoke?sig=s" }
const ntfy: NtfyDestination = { id: "n1", name: "ops", server: "https://ntfy.sh", topic: "ops", token: "tk_x" }

describe("channels", () => {
  const channels: ReadonlyArray<[string, Channel<any>, unknown]> = [
    ["webhook", webhookChannel, webhook],
    ["chat", chatChannel("https://jobmon.example.com"), chat],
    ["slack", slackChannel("https://jobmon.example.com"), slack],
    ["telegram", telegramChannel("https://jobmon.example.com"), telegram],
    ["teams", teamsChannel("https://jobmon.example.com"), teams],
    ["ntfy", ntfyChannel("https://jobmon.example.com"), ntfy]
  ]

  for (const [name, channel, destination] of channels) {
    it(`${name}: 2xx is delivered; 5xx and no answer retry later; a refused target is not retried`, () => {
      expect(channel.verdictOn(answered(204))._tag).toBe("Delivered")
      expect(channel.verdictOn(answered(503))._tag).toBe("RetryLater")
      expect(channel.verdictOn(noAnswer)._tag).toBe("RetryLater")
      expect(channel.verdictOn(refused)._tag).toBe("Rejected")
      expect(channel.verdictOn(answered(302))._tag).toBe("Rejected")
    })

    it(`${name}: a retried message stays pending until its last attempt`, () => {
      const retry = channel.verdictOn(answered(500))
      for (let attempt = 1; attempt < channel.retry.maxAttempts; attempt++) expect(stateAfter(channel.retry, retry, attempt)).toBe("pending")
      expect(stateAfter(channel.retry, retry, channel.retry.maxAttempts)).toBe("failed")
      expect(stateAfter(channel.retry, channel.verdictOn(answered(200)), 1)).toBe("succeeded")
    })

    it(`${name}: packing keeps every message once, in order`, () => {
      const body = channel.testMessageFor(destination, { id: "e1", at: 0 })
      const messages: Array<StoredMessage> = Array.from({ length: 25 }, (_, i) => ({ deliveryId: `d${i}`, eventType: "x", body }))
      expect(channel.pack(messages).flat()).toEqual(messages)
    })
  }

  it("webhook: a 4xx fails the delivery (the webhook stays); Retry-After is not honoured", () => {
    expect(webhookChannel.verdictOn(answered(401))._tag).toBe("Rejected")
    expect(webhookChannel.verdictOn(answered(404))._tag).toBe("Rejected")
    expect(webhookChannel.verdictOn(answered(429, 30))._tag).toBe("Rejected")
    expect(webhookChannel.verdictOn(answered(503, 30))).toEqual({ _tag: "RetryLater", retryAfterMs: undefined })
    // 1, 2, 4, … s after attempts 1, 2, 3, …
    expect([1, 2, 3, 7].map((n) => retryWait(webhookChannel.retry, n, undefined))).toEqual([1000, 2000, 4000, 64_000])
  })

  it("chat: 404 and 401 make the webhook invalid with a reason; 429 waits its Retry-After when longer than the backoff", () => {
    const channel = chatChannel("https://jobmon.example.com")
    for (const status of [404, 401]) {
      expect(channel.verdictOn(answered(status))).toEqual({ _tag: "Invalid", reason: expect.stringContaining(`answered ${status}`) })
    }
    expect(channel.verdictOn(answered(400))._tag).toBe("Rejected")
    const limited = channel.verdictOn(answered(429, 7))
    expect(limited).toEqual({ _tag: "RetryLater", retryAfterMs: 7000 })
    expect(retryWait(channel.retry, 1, 7000)).toBe(7000)
    expect(retryWait(channel.retry, 4, 1000)).toBe(8000)
    // past the table, a batch waits as long as after the last attempt that can retry
    expect(retryWait(channel.retry, channel.retry.maxAttempts, undefined)).toBe(16_000)
  })

  it("webhook: the request is the envelope's bytes, signed at the attempt's time, with the minute's rate", () => {
    const message: StoredMessage = { deliveryId: "d1", eventType: "incident.opened", body: '{"event":"incident.opened"}' }
    const request = webhookChannel.requestFor(webhook, [message], { at: 1_700_000_000_500, rate: { limit: 100, count: 3, resetAt: 1_700_000_040_000 } })
    expect(request.url).toBe(webhook.url)
    expect(request.body).toBe(message.body)
    expect(request.headers).toMatchObject({
      "X-Service-Delivery": "d1",
      "webhook-id": "d1",
      "webhook-timestamp": "1700000000",
      "X-RateLimit-Remaining": "97",
      "X-RateLimit-Reset": "1700000040"
    })
    expect(JSON.stringify(request.headers)).not.toContain(webhook.secret)
  })
})
