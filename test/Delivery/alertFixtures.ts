import { Effect } from "effect"
import { type Alert, alertOf } from "../../src/Delivery/Alert.js"
import { channelEventOf, type IncidentFacts } from "../../src/Delivery/Channel.js"
import type { Outcome } from "../../src/Delivery/RetrySchedule.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"

/** What the alert channels' tests share: an incident, its events as the fan-out gives them, and answers. */

export const PUBLIC_URL = "https://jobmon.example"

/** The delivery worker's pass, at once. */
export const flush = Effect.flatMap(Webhooks, (w) => w.flush)

/** A FAIL incident of "nightly backup"; a test changes what its channel must escape or cut. */
export const incidentWith = (changes: Partial<IncidentFacts> & { readonly output?: string } = {}): IncidentFacts => {
  const { output, ...rest } = changes
  return {
    id: "0d6f1c2e-1111-4222-8333-444455556666",
    type: "FAIL",
    severity: "HIGH",
    status: "OPEN",
    monitorId: "9a8b7c6d-1111-4222-8333-444455556666",
    monitorName: "nightly backup",
    monitorTags: ["db"],
    openedAt: "2026-01-31T03:00:00.000Z",
    details: { exitCode: 2, durationMs: 5230, output: output ?? "starting\ndisk full", expectedDurationMs: 4100 },
    ...rest
  }
}

/** An event about the incident, as the fan-out hands it to a channel. */
export const eventOf = (type: string, data: Record<string, unknown>, facts: IncidentFacts) =>
  channelEventOf({
    id: "e1",
    seq: 1,
    org_id: "o1",
    type,
    created_at: new Date("2026-01-31T03:00:01.000Z"),
    data: { incident: { id: facts.id }, ...data },
    monitor_ids: [facts.monitorId],
    severity: facts.severity
  } as never, facts)

/** The neutral alert every channel formats. */
export const alertFor = (type: string, data: Record<string, unknown>, facts: IncidentFacts): Alert =>
  alertOf(eventOf(type, data, facts), PUBLIC_URL)!

/** A provider's answer with a text body. */
export const answered = (status: number, text?: string, retryAfterSeconds?: number) => ({
  outcome: { _tag: "Answered", status } as Outcome,
  responseTimeMs: 5,
  responseText: text,
  retryAfterSeconds
})
