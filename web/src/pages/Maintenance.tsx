import { useEffect, useState } from "preact/hooks"
import { api, errorText } from "../api"
import { ErrorLine } from "../components"
import type { HistoryEntry, MaintenanceWindow as Window, Monitor } from "../types"
import { fmtRemaining, fmtTime, isoToZoned, useNow, usePoll, zonedToIso, zones } from "../util"

export function MaintenancePage() {
  const [windows, setWindows] = useState<Window[] | null>(null)
  const [monitors, setMonitors] = useState<Monitor[]>([])
  const [history, setHistory] = useState<HistoryEntry[]>([])
  const [error, setError] = useState("")
  const now = useNow(1000)

  const load = async () => {
    try {
      const [w, m, h] = await Promise.all([
        api<{ windows: Window[] }>("GET", "/api/maintenance-windows"),
        api<{ monitors: Monitor[] }>("GET", "/api/monitors?limit=100"),
        api<HistoryEntry[]>("GET", "/api/maintenance-windows/history")
      ])
      setWindows(w.windows)
      setMonitors(m.monitors)
      setHistory(h)
      setError("")
    } catch (e) {
      setError(errorText(e))
    }
  }
  usePoll(load, 10_000)
  const names = Object.fromEntries(monitors.map((m) => [m.id, m.name]))

  return (
    <section>
      <h1>Maintenance windows</h1>
      <NewWindow monitors={monitors} onCreated={load} />
      <ErrorLine error={error} />
      {windows === null ? <p role="status">Loading…</p> : windows.length === 0 ? <p class="muted">No maintenance windows.</p> : (
        <ul class="windows">
          {windows.map((w) => <WindowItem key={w.id} w={w} names={names} now={now} onChange={load} />)}
        </ul>
      )}
      <h2>History (last 30 days)</h2>
      {history.length === 0 ? <p class="muted">No maintenance periods yet.</p> : (
        <div class="scroll">
          <table>
            <thead><tr><th scope="col">Window</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">Overrides</th><th scope="col">Suppressed incidents</th></tr></thead>
            <tbody>
              {history.map((h) => (
                <tr>
                  <td data-label="Window">{h.name}</td>
                  <td data-label="Started">{fmtTime(h.startedAt)}</td>
                  <td data-label="Ended">{h.endedAt ? `${fmtTime(h.endedAt)}${h.endReason && h.endReason !== "completed" ? ` (${h.endReason})` : ""}` : `running, ends ${fmtTime(h.endsAt)}`}</td>
                  <td data-label="Overrides">{h.overrides.length === 0 ? "—" : h.overrides.map((o) => `${o.reason} (${fmtTime(o.startedAt)})`).join("; ")}</td>
                  <td data-label="Suppressed">{h.suppressedIncidents}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

function WindowItem({ w, names, now, onChange }: { w: Window; names: Record<string, string>; now: number; onChange: () => Promise<void> }) {
  const [error, setError] = useState("")
  const [reason, setReason] = useState("")
  const [minutes, setMinutes] = useState("30")
  const act = async (f: () => Promise<unknown>) => {
    setError("")
    try {
      await f()
      await onChange()
    } catch (e) {
      setError(errorText(e))
    }
  }
  const endsIn = w.currentEnd ? (new Date(w.currentEnd).getTime() - now) / 1000 : null
  return (
    <li class="card window" data-window={w.id}>
      <div class="incident-head">
        <strong>{w.name}</strong>
        <span class={`badge win-${w.status}`}>{w.status}</span>
        {w.status === "active" && endsIn !== null && <span class="badge maint">{fmtRemaining(endsIn)} left</span>}
      </div>
      <p>
        {w.kind === "one-time"
          ? <>One-time, {fmtTime(w.start, w.timezone)} to {fmtTime(w.end, w.timezone)}</>
          : <>Recurring <code>{w.rrule}</code> for {Math.round((w.duration ?? 0) / 60)} min, in {w.timezone}</>}
        {w.nextStart && <> · next {fmtTime(w.nextStart, w.timezone)}</>}
        {w.overrideEndsAt && <> · overridden until {fmtTime(w.overrideEndsAt)} ({w.overrideReason})</>}
      </p>
      <p class="muted">Monitors: {w.monitorIds.map((id) => names[id] ?? id).join(", ")}{w.reason ? ` · ${w.reason}` : ""}</p>
      <div class="incident-actions">
        {w.status === "active" && (
          <form class="incident-actions" onSubmit={(e) => { e.preventDefault(); void act(() => api("POST", `/api/maintenance-windows/${w.id}/override`, { reason, durationSeconds: Number(minutes) * 60 })) }}>
            <label>Override reason<input required value={reason} onInput={(e) => setReason(e.currentTarget.value)} /></label>
            <label>for minutes<input type="number" min={1} required value={minutes} onInput={(e) => setMinutes(e.currentTarget.value)} /></label>
            <button type="submit" class="secondary">Resume alerts (override)</button>
          </form>
        )}
        <button type="button" class="danger" onClick={() => { if (confirm(`Delete the maintenance window "${w.name}"?`)) void act(() => api("DELETE", `/api/maintenance-windows/${w.id}`)) }}>Delete</button>
      </div>
      <ErrorLine error={error} />
    </li>
  )
}

function NewWindow({ monitors, onCreated }: { monitors: Monitor[]; onCreated: () => Promise<void> }) {
  const defaultZone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"
  const [name, setName] = useState("")
  const [selected, setSelected] = useState<string[]>([])
  const [kind, setKind] = useState<"one-time" | "recurring">("one-time")
  const [timezone, setTimezone] = useState(defaultZone)
  const [start, setStart] = useState(() => isoToZoned(Date.now(), defaultZone))
  const [end, setEnd] = useState(() => isoToZoned(Date.now() + 3600_000, defaultZone))
  const [rrule, setRrule] = useState("FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=30")
  const [duration, setDuration] = useState("60")
  const [reason, setReason] = useState("")
  const [preview, setPreview] = useState<{ start: string; end: string }[]>([])
  const [previewError, setPreviewError] = useState("")
  const [error, setError] = useState("")

  const body = () => {
    const common = { name, monitorIds: selected, timezone, reason: reason.trim() || null }
    return kind === "one-time"
      ? { ...common, start: zonedToIso(start, timezone), end: zonedToIso(end, timezone) }
      : { ...common, rrule, duration: Math.round(Number(duration) * 60) }
  }

  useEffect(() => {
    const t = setTimeout(async () => {
      try {
        const r = await api<{ occurrences: { start: string; end: string }[] }>("POST", "/api/maintenance-windows/preview", { ...body(), count: 5 })
        setPreview(r.occurrences)
        setPreviewError("")
      } catch (e) {
        setPreview([])
        setPreviewError(errorText(e))
      }
    }, 400)
    return () => clearTimeout(t)
  }, [kind, timezone, start, end, rrule, duration])

  return (
    <details class="card">
      <summary>New maintenance window</summary>
      <form class="grid" onSubmit={async (e) => {
        e.preventDefault()
        setError("")
        if (selected.length === 0) return setError("Choose at least one monitor.")
        try {
          await api("POST", "/api/maintenance-windows", body())
          setName("")
          await onCreated()
        } catch (err) {
          setError(errorText(err))
        }
      }}>
        <label>Name<input name="name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
        <fieldset>
          <legend>Kind</legend>
          <label class="check"><input type="radio" name="kind" checked={kind === "one-time"} onChange={() => setKind("one-time")} /> One-time</label>
          <label class="check"><input type="radio" name="kind" checked={kind === "recurring"} onChange={() => setKind("recurring")} /> Recurring</label>
        </fieldset>
        <label>Time zone
          <input name="timezone" list="mw-zones" required value={timezone} onInput={(e) => setTimezone(e.currentTarget.value)} />
          <datalist id="mw-zones">{zones().map((z) => <option value={z} />)}</datalist>
        </label>
        {kind === "one-time" ? (
          <>
            <label>Starts (in the window's zone)<input name="start" type="datetime-local" required value={start} onInput={(e) => setStart(e.currentTarget.value)} /></label>
            <label>Ends<input name="end" type="datetime-local" required value={end} onInput={(e) => setEnd(e.currentTarget.value)} /></label>
          </>
        ) : (
          <>
            <label>Recurrence rule (RFC 5545)<input name="rrule" required value={rrule} onInput={(e) => setRrule(e.currentTarget.value)} /></label>
            <label>Duration (minutes)<input name="duration" type="number" min={1} required value={duration} onInput={(e) => setDuration(e.currentTarget.value)} /></label>
          </>
        )}
        <label>Reason (optional)<input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} /></label>
        <fieldset class="wide">
          <legend>Monitors</legend>
          {monitors.length === 0 ? <p class="muted">No monitors yet.</p> : monitors.map((m) => (
            <label class="check"><input type="checkbox" checked={selected.includes(m.id)} onChange={(e) => setSelected(e.currentTarget.checked ? [...selected, m.id] : selected.filter((x) => x !== m.id))} /> {m.name}</label>
          ))}
        </fieldset>
        <div class="wide preview" aria-live="polite">
          <strong>Next occurrences ({timezone})</strong>
          {previewError ? <p class="error">{previewError}</p> : (
            <ol>{preview.map((p) => <li>{fmtTime(p.start, timezone)} → {fmtTime(p.end, timezone)}</li>)}</ol>
          )}
        </div>
        <div class="actions"><button type="submit">Create window</button></div>
        <ErrorLine error={error} />
      </form>
    </details>
  )
}
