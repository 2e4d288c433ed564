/** What the benchmark asks of the load driver (a JSON file) and what the driver answers (JSON on stdout). */

export type LoadMode =
  /** `POST /api/ping/{id}/success` with `{"durationMs": n, "output": "ok …"}`, rotating over the monitors. */
  | "success"
  /** A start, then the success of the run it opened (`runId` from the start's answer), rotating over the monitors. */
  | "pairs"
  /**
   * `POST /ping/{pingId}` without a token (the Healthchecks-compatible ping URL), the body the
   * output text, rotating over the monitors: `monitorIds` then holds their ping ids.
   */
  | "pingUrl"

export interface DriverConfig {
  readonly title: string
  /** http://127.0.0.1:port */
  readonly url: string
  /**
   * Several servers instead of `url` (several instances of the service): the connections are dealt
   * out over them in turn (connection i to `urls[i % urls.length]`), as a load balancer keeping
   * connections alive would, so each gets the same share of the pings.
   */
  readonly urls?: ReadonlyArray<string>
  /** When set, the run id of every 200-answered ping is written there, one per line, at the end. */
  readonly runIdsFile?: string
  readonly token: string
  readonly monitorIds: ReadonlyArray<string>
  readonly mode: LoadMode
  readonly connections: number
  readonly seconds: number
  /**
   * A fixed offered rate instead of as-fast-as-possible:
   * - `even`: each connection sends at evenly spaced instants (random phase), latency counted from
   *   the instant a request was due, so queueing behind a slow answer is not hidden;
   * - `autocannon`: autocannon's own `overallRate`, which lets each connection send its per-second
   *   quota back to back at the start of every second (bursts), latency from the actual send.
   */
  readonly rate?: { readonly perSecond: number; readonly pacing: "even" | "autocannon" }
}

export interface LatencySummary {
  readonly count: number
  readonly mean: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly p999: number
  readonly max: number
}

export interface DriverResult {
  readonly title: string
  readonly mode: LoadMode
  readonly connections: number
  /** From the first request sent to the last answer received, seconds (requests go out for `seconds`). */
  readonly duration: number
  /** autocannon's exact counters. */
  readonly count2xx: number
  readonly non2xx: number
  readonly statusCodes: Readonly<Record<string, number>>
  /** Answers per ping kind and status (pairs: start and success). */
  readonly byKind: Readonly<Record<string, Readonly<Record<string, number>>>>
  readonly sent: number
  readonly errors: number
  readonly timeouts: number
  readonly resets: number
  /** 2xx per second. */
  readonly rps: number
  /** Exact, from every answer (ms). With `even` pacing: from the instant each request was due. */
  readonly latency: LatencySummary
  /** The same without the first second (connections opening, caches filling): the steady state. */
  readonly latencyAfterFirstSecond: LatencySummary
  /** The same by second of the run (when each request was sent, or due): stalls show here. */
  readonly perSecond: ReadonlyArray<{ readonly count: number; readonly p99: number; readonly max: number }>
  /** autocannon's own histogram (ms), for comparison. */
  readonly autocannonLatency: { readonly p50: number; readonly p99: number; readonly max: number }
  /** CPU time the driver process itself used during the run, µs (load generation has a cost too). */
  readonly driverCpuUs: number
  readonly pacing?: {
    readonly perSecond: number
    readonly pacing: "even" | "autocannon"
    /** Requests sent later than due because the answer to the previous one came late. */
    readonly lateSends: number
    readonly maxLagMs: number
  }
}
