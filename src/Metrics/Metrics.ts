import { Effect } from "effect"
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client"

/**
 * The service's own Prometheus metrics (docs/metrics.md): one prom-client `Registry` per app (not
 * prom-client's global one, so that several servers in one process, as in the tests, keep their
 * counts apart), the process metrics prom-client collects (one registry per process), and the
 * recorders the ping intake, the engine and the delivery worker call.
 *
 * What the hot paths pay: the ping intake adds one to a slot of a plain array per answered ping
 * (`pingAnswered`; the counter takes the increase at scrape time), and the run writer two
 * histogram observations per committed batch (`writerBatch`). The engine observes once per
 * deadline that fires, the delivery worker once per recorded attempt.
 *
 * The per-monitor metrics are not here: they depend on who scrapes (the token's organization) and
 * are read from the database at each scrape (src/Metrics/Scrape.ts).
 */

/** How an answered ping is counted, by its HTTP status (docs/metrics.md, `jobmon_pings_total`). */
export const PING_OUTCOMES = [
  "accepted",
  "invalid",
  "unauthorized",
  "forbidden",
  "not_found",
  "conflict",
  "too_large",
  "rate_limited",
  "unavailable",
  "error"
] as const
export type PingOutcome = (typeof PING_OUTCOMES)[number]

const outcomeSlot = (status: number): number => {
  switch (status) {
    case 200:
    case 201: // a ping URL that created its monitor (?create=1)
      return 0
    case 400:
      return 1
    case 401:
      return 2
    case 403:
      return 3
    case 404:
      return 4
    case 409:
      return 5
    case 413:
      return 6
    case 429:
      return 7
    case 503:
      return 8
    default:
      return 9
  }
}

/**
 * What a delivery attempt came to (docs/metrics.md, `jobmon_deliveries_total`): delivered; failed
 * and to be retried; failed for good; or dropped without an attempt (its destination was deleted or
 * is invalid).
 */
export type DeliveryOutcome = "delivered" | "retrying" | "failed" | "dropped"

/** Rows per committed batch of the run writer: 1 when idle, up to MAX_BATCH (2000) under load. */
const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]
/** Seconds: a local commit takes well under a millisecond to a few; network storage more. */
const COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
/** Seconds from a deadline to the engine firing it: milliseconds normally; longer after a restart or a failover. */
const LAG_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300]

/** prom-client's default metrics that are gauges named like counters: left out (`sum(nodejs_active_handles)` gives each). */
const NOT_COUNTERS_NAMED_TOTAL = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]

let processMetrics: Registry | undefined

/**
 * The process's metrics (prom-client's defaults: CPU, memory, event loop, heap, GC), in a registry
 * of their own made once per process: they describe the process whichever app in it answers, and
 * what collects them (an event-loop delay monitor, a GC observer) is never stopped, so it is not
 * made again for every app a process builds (the tests build many).
 */
const processRegistry = (): Registry => {
  if (processMetrics !== undefined) return processMetrics
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  // Gauges whose names end in `_total`, which Prometheus keeps for counters (`promtool check
  // metrics` says so): each is the sum of its by-type gauge (`nodejs_active_handles` …), kept.
  for (const name of NOT_COUNTERS_NAMED_TOTAL) registry.removeSingleMetric(name)
  return processMetrics = registry
}

export class Metrics extends Effect.Service<Metrics>()("jobmon/Metrics", {
  sync: () => {
    const registry = new Registry()
    processRegistry()

    // ---- ping intake --------------------------------------------------------------------------
    // The intake counts into plain numbers; the counter takes what was added since the last scrape.
    const answered = new Array<number>(PING_OUTCOMES.length).fill(0)
    const reported = new Array<number>(PING_OUTCOMES.length).fill(0)
    const pings: Counter<"outcome"> = new Counter({
      name: "jobmon_pings_total",
      help: "Pings answered by this instance, by outcome (accepted: stored and answered 200).",
      labelNames: ["outcome"],
      registers: [registry],
      collect() {
        for (let i = 0; i < PING_OUTCOMES.length; i++) {
          const added = answered[i]! - reported[i]!
          reported[i] = answered[i]!
          pings.inc({ outcome: PING_OUTCOMES[i]! }, added)
        }
      }
    })
    for (const outcome of PING_OUTCOMES) pings.inc({ outcome }, 0)

    const batchSize = new Histogram({
      name: "jobmon_ping_writer_batch_size",
      help: "Runs written per committed batch of the ping writer.",
      buckets: BATCH_BUCKETS,
      registers: [registry]
    })
    const commitSeconds = new Histogram({
      name: "jobmon_ping_writer_commit_seconds",
      help: "Time from sending a batch of runs to PostgreSQL to its commit, in seconds.",
      buckets: COMMIT_BUCKETS,
      registers: [registry]
    })

    // ---- engine -------------------------------------------------------------------------------
    const deadlineLag = new Histogram({
      name: "jobmon_engine_deadline_lag_seconds",
      help: "Time from a monitor's deadline (expected ping, grace, max runtime) to this instance's engine firing it, in seconds.",
      buckets: LAG_BUCKETS,
      registers: [registry]
    })
    const engineMonitors = new Gauge({
      name: "jobmon_engine_monitors",
      help: "Monitors whose actors run on this instance (in cluster mode, those of the shards it owns).",
      registers: [registry]
    })

    // ---- deliveries ---------------------------------------------------------------------------
    const deliveries = new Counter({
      name: "jobmon_deliveries_total",
      help: "Deliveries (alerts and webhooks) attempted or dropped by this instance, by channel type and outcome.",
      labelNames: ["channel", "outcome"] as const,
      registers: [registry]
    })
    const queueDepth = new Gauge({
      name: "jobmon_delivery_queue_depth",
      help: "Deliveries waiting to be sent or retried (the outbox, shared by every instance), by channel type.",
      labelNames: ["channel"] as const,
      registers: [registry]
    })

    return {
      registry,
      /** A ping was answered with this HTTP status (the intake's fast route and its HttpApi form). */
      pingAnswered: (status: number): void => {
        answered[outcomeSlot(status)]!++
      },
      /** A batch of `rows` runs committed `seconds` after it was sent. */
      writerBatch: (rows: number, seconds: number): void => {
        batchSize.observe(rows)
        commitSeconds.observe(seconds)
      },
      /** The engine fired a deadline `ms` milliseconds after it was due. */
      deadlineFired: (ms: number): void => {
        deadlineLag.observe(ms / 1000)
      },
      /** Delivery attempts recorded: `n` of this channel type came to `outcome`. */
      delivered: (channel: string, outcome: DeliveryOutcome, n = 1): void => {
        if (n > 0) deliveries.inc({ channel, outcome }, n)
      },
      /** This instance's metrics, the process's first, in the text format. */
      render: (): Promise<string> => Registry.merge([processRegistry(), registry]).metrics(),
      /** Set at scrape time: the engine's actors here, and the outbox by channel type. */
      setEngineMonitors: (n: number): void => engineMonitors.set(n),
      setQueueDepth: (byChannel: ReadonlyArray<{ readonly channel: string; readonly n: number }>): void => {
        queueDepth.reset()
        for (const { channel, n } of byChannel) queueDepth.set({ channel }, n)
      }
    } as const
  }
}) {}
