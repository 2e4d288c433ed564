import { Effect } from "effect"
import { Gauge, Registry } from "prom-client"

/**
 * The per-monitor metrics of one scrape (docs/metrics.md): made for the organization that scrapes
 * from what the database holds now, so every instance of a cluster answers the same values, and
 * nothing of another organization is ever in them.
 *
 * An organization may have 10,000 monitors: each family is filled a chunk of monitors at a time and
 * written by prom-client on its own, and the event loop is given back between two steps, so that
 * pings are not held up for the whole scrape (about 40 ms to write a family of 10,000 series on the
 * test machine, the longest step).
 */

/** A monitor as the scrape reads it (src/Metrics/Http.ts). */
export interface MonitorSample {
  readonly id: string
  readonly name: string
  readonly tags: ReadonlyArray<string>
  /** As the API shows it: PAUSED while paused. */
  readonly status: string
  readonly health_score: number
  readonly last_ping_at: Date | null
  readonly next_expected_at: Date | null
  readonly open_incidents: number
}

/** Statuses in which a monitor is down: `jobmon_monitor_up` is 0 in these, 1 otherwise. */
export const DOWN_STATUSES: ReadonlySet<string> = new Set(["LATE", "MISSED", "FAILING"])

/**
 * The `tags` label: the tags sorted (by code unit, the same order wherever it is computed), without
 * repeats, joined by commas. prom-client escapes what a label value needs (`\`, `"`, new lines).
 */
export const tagsLabel = (tags: ReadonlyArray<string>): string => [...new Set(tags)].sort().join(",")

type Labels = { monitor_id: string; name: string; tags: string }

interface Family {
  readonly name: string
  readonly help: string
  /** A label beyond the monitor's own (the status), with its value. */
  readonly extra?: { readonly label: string; readonly of: (m: MonitorSample) => string }
  /** The monitor's value; undefined: no series for it. */
  readonly value: (m: MonitorSample) => number | undefined
}

const seconds = (at: Date | null) => (at === null ? undefined : at.getTime() / 1000)

export const MONITOR_FAMILIES: ReadonlyArray<Family> = [
  {
    name: "jobmon_monitor_status",
    help: "The monitor's status (as the API shows it) in the status label; always 1.",
    extra: { label: "status", of: (m) => m.status },
    value: () => 1
  },
  {
    name: "jobmon_monitor_up",
    help: "0 while the monitor is LATE, MISSED or FAILING; 1 otherwise (NEW, OK, RUNNING, PAUSED).",
    value: (m) => (DOWN_STATUSES.has(m.status) ? 0 : 1)
  },
  {
    name: "jobmon_monitor_last_ping_timestamp_seconds",
    help: "When the monitor's last ping arrived, in seconds since the Unix epoch (absent before its first ping).",
    value: (m) => seconds(m.last_ping_at)
  },
  {
    name: "jobmon_monitor_next_expected_timestamp_seconds",
    help: "When the monitor's next ping is expected, in seconds since the Unix epoch (absent while none is: paused).",
    value: (m) => seconds(m.next_expected_at)
  },
  {
    name: "jobmon_monitor_health_score",
    help: "The monitor's health score, 0 to 100 (100 with no runs yet).",
    value: (m) => m.health_score
  },
  {
    name: "jobmon_monitor_open_incidents",
    help: "The monitor's unresolved incidents (OPEN or ACKNOWLEDGED).",
    value: (m) => m.open_incidents
  }
]

const LABELS = ["monitor_id", "name", "tags"] as const

/** Gives the event loop back: the requests (pings) that arrived meanwhile are read before going on. */
const yieldToEventLoop = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Monitors whose series are set between two returns to the event loop. */
const CHUNK = 2_000

/**
 * One family in the text format, written by prom-client: its series set a chunk of monitors at a
 * time, then written (the one step that cannot be split: some 40 ms for 10,000 series).
 */
const familyText = (family: Family, monitors: ReadonlyArray<MonitorSample>, labels: ReadonlyArray<Labels>) =>
  Effect.gen(function*() {
    const registry = new Registry()
    const extra = family.extra
    const gauge = new Gauge<string>({
      name: family.name,
      help: family.help,
      labelNames: extra === undefined ? LABELS : [...LABELS, extra.label],
      registers: [registry]
    })
    for (let start = 0; start < monitors.length; start += CHUNK) {
      yield* yieldToEventLoop
      for (let i = start; i < Math.min(start + CHUNK, monitors.length); i++) {
        const m = monitors[i]!
        const value = family.value(m)
        if (value === undefined) continue
        gauge.set(extra === undefined ? labels[i]! : { ...labels[i]!, [extra.label]: extra.of(m) }, value)
      }
    }
    yield* yieldToEventLoop
    return yield* Effect.promise(() => registry.metrics())
  })

/** The organization's monitors' metrics, every family, in the text format. */
export const renderMonitors = (monitors: ReadonlyArray<MonitorSample>) =>
  Effect.gen(function*() {
    const labels = monitors.map((m): Labels => ({ monitor_id: m.id, name: m.name, tags: tagsLabel(m.tags) }))
    const parts: Array<string> = []
    for (const family of MONITOR_FAMILIES) parts.push(yield* familyText(family, monitors, labels))
    return parts.join("\n")
  })
