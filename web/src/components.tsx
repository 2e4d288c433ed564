import { useEffect, useState } from "preact/hooks"
import { api } from "./api"
import type { Monitor, Schedule } from "./types"
import { fmtRemaining, useNow } from "./util"

export const StatusBadge = ({ status }: { status: string }) => (
  <span class={`status status-${status.toLowerCase()}`}><span class="dot" aria-hidden="true" />{status}</span>
)

/** "In maintenance: <name>, 12m 04s left", counting down every second. */
export function MaintenanceBadge({ info }: { info: NonNullable<Monitor["maintenance"]> }) {
  const now = useNow(1000)
  const left = (new Date(info.endsAt).getTime() - now) / 1000
  return (
    <span class="badge maint" title={`Alerts are suppressed until ${new Date(info.endsAt).toLocaleString()}`}>
      In Maintenance: <strong>{info.name}</strong>, <span class="remaining">{fmtRemaining(left)} left</span>
    </span>
  )
}

const described = new Map<string, Promise<string>>()

/** The schedule in words, from the service's own describer (cached per schedule). */
export function ScheduleText({ schedule }: { schedule: Schedule }) {
  const key = `${schedule.type}|${schedule.expression}|${schedule.timezone}`
  const [text, setText] = useState<string | null>(null)
  useEffect(() => {
    let p = described.get(key)
    if (!p) {
      p = api<{ description: string }>("POST", "/api/schedules/preview", { schedule, count: 1 })
        .then((r) => r.description)
        .catch(() => schedule.expression)
      described.set(key, p)
    }
    let live = true
    void p.then((t) => live && setText(t))
    return () => { live = false }
  }, [key])
  return (
    <span>
      {text ?? schedule.expression}
      {schedule.type === "cron" && !(text ?? "").includes(schedule.timezone) && <span class="muted"> ({schedule.timezone})</span>}
    </span>
  )
}

export const Health = ({ score }: { score: number }) => (
  <span class={`health ${score >= 90 ? "good" : score >= 60 ? "fair" : "poor"}`} aria-label={`health ${Math.round(score)} of 100`}>
    {Math.round(score)}
  </span>
)

export function ErrorLine({ error }: { error: string }) {
  return error ? <p class="error" role="alert">{error}</p> : null
}
