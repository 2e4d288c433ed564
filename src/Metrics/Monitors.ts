import { Gauge, Registry } from "prom-client"

/**
 * The per-monitor metrics of one scrape (docs/metrics.md): a registry of its own, made for the
 * organization that scrapes from what the database holds now, so every instance of a cluster
 * answers the same values, and nothing of another organization is ever in it.
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

const LABELS = ["monitor_id", "name", "tags"] as const

export const monitorRegistry = (monitors: ReadonlyArray<MonitorSample>, statuses: ReadonlyArray<string>): Registry => {
  const registry = new Registry()
  const gauge = <L extends string>(name: string, help: string, labelNames: ReadonlyArray<L>) =>
    new Gauge<L>({ name, help, labelNames, registers: [registry] })
  const status = gauge(
    "jobmon_monitor_status",
    "1 for the monitor's current status (as the API shows it), 0 for each of the others.",
    [...LABELS, "status"]
  )
  const up = gauge("jobmon_monitor_up", "0 while the monitor is LATE, MISSED or FAILING; 1 otherwise (NEW, OK, RUNNING, PAUSED).", LABELS)
  const lastPing = gauge(
    "jobmon_monitor_last_ping_timestamp_seconds",
    "When the monitor's last ping arrived, in seconds since the Unix epoch (absent before its first ping).",
    LABELS
  )
  const nextExpected = gauge(
    "jobmon_monitor_next_expected_timestamp_seconds",
    "When the monitor's next ping is expected, in seconds since the Unix epoch (absent while none is: paused).",
    LABELS
  )
  const health = gauge("jobmon_monitor_health_score", "The monitor's health score, 0 to 100 (100 with no runs yet).", LABELS)
  const incidents = gauge(
    "jobmon_monitor_open_incidents",
    "The monitor's unresolved incidents (OPEN or ACKNOWLEDGED).",
    LABELS
  )
  for (const m of monitors) {
    const labels = { monitor_id: m.id, name: m.name, tags: tagsLabel(m.tags) }
    for (const s of statuses) status.set({ ...labels, status: s }, s === m.status ? 1 : 0)
    up.set(labels, DOWN_STATUSES.has(m.status) ? 0 : 1)
    if (m.last_ping_at !== null) lastPing.set(labels, m.last_ping_at.getTime() / 1000)
    if (m.next_expected_at !== null) nextExpected.set(labels, m.next_expected_at.getTime() / 1000)
    health.set(labels, m.health_score)
    incidents.set(labels, m.open_incidents)
  }
  return registry
}
