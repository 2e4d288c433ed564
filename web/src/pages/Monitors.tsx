import { useState } from "preact/hooks"
import { api, errorText } from "../api"
import { ErrorLine, Health, MaintenanceBadge, ScheduleText, StatusBadge } from "../components"
import { navigate, onLink } from "../router"
import type { Monitor } from "../types"
import { fmtRelative, fmtTime, useNow, usePoll, zones } from "../util"

const STATUSES = ["NEW", "OK", "RUNNING", "LATE", "MISSED", "FAILING", "PAUSED"]

async function loadAll(): Promise<Monitor[]> {
  const all: Monitor[] = []
  for (let page = 1; ; page++) {
    const r = await api<{ monitors: Monitor[]; total: number }>("GET", `/api/monitors?limit=100&page=${page}`)
    all.push(...r.monitors)
    if (all.length >= r.total || r.monitors.length === 0) return all
  }
}

export function MonitorsPage() {
  const [monitors, setMonitors] = useState<Monitor[] | null>(null)
  const [error, setError] = useState("")
  const [status, setStatus] = useState("")
  const [tag, setTag] = useState("")
  const [updated, setUpdated] = useState<number | null>(null)
  const now = useNow(5000)

  const load = async () => {
    try {
      setMonitors(await loadAll())
      setUpdated(Date.now())
      setError("")
    } catch (e) {
      setError(errorText(e))
    }
  }
  // Every monitor is loaded (filters and tags work on the whole list): a large organization is polled less often.
  const every = (monitors?.length ?? 0) > 500 ? 30_000 : 5000
  usePoll(load, every)

  const tags = [...new Set((monitors ?? []).flatMap((m) => m.tags))].sort()
  const shown = (monitors ?? []).filter((m) => (status === "" || m.status === status) && (tag === "" || m.tags.includes(tag)))

  return (
    <section>
      <div class="head">
        <h1>Monitors</h1>
        <p class="muted" aria-live="off">{updated ? `Refreshed ${new Date(updated).toLocaleTimeString()}, every ${every / 1000} s` : ""}</p>
      </div>
      <NewMonitor onCreated={(m) => navigate(`/monitors/${m.id}`)} />
      <div class="filters" role="group" aria-label="Filters">
        <div class="field">
          <label for="filter-status">Status</label>
          <select id="filter-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">All</option>
            {STATUSES.map((s) => <option value={s}>{s}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="filter-tag">Tag</label>
          <select id="filter-tag" value={tag} onChange={(e) => setTag(e.currentTarget.value)}>
            <option value="">All</option>
            {tags.map((t) => <option value={t}>{t}</option>)}
          </select>
        </div>
        <span class="muted">{monitors ? `${shown.length} of ${monitors.length}` : ""}</span>
      </div>
      <ErrorLine error={error} />
      {monitors === null ? <p role="status">Loading…</p> : shown.length === 0 ? <p>No monitors{monitors.length ? " match these filters" : " yet: create one above"}.</p> : (
        <div class="scroll">
          <table class="monitors">
            <thead>
              <tr><th scope="col">Status</th><th scope="col">Name</th><th scope="col">Schedule</th><th scope="col">Last ping</th><th scope="col">Next expected</th><th scope="col">Health</th></tr>
            </thead>
            <tbody>
              {shown.map((m) => (
                <tr key={m.id} data-monitor={m.id}>
                  <td data-label="Status"><StatusBadge status={m.status} /></td>
                  <td data-label="Name">
                    <a href={`/monitors/${m.id}`} onClick={onLink}>{m.name}</a>
                    {m.tags.length > 0 && <span class="tags">{m.tags.map((t) => <span class="tag">{t}</span>)}</span>}
                    {m.maintenance && <div><MaintenanceBadge info={m.maintenance} /></div>}
                  </td>
                  <td data-label="Schedule"><ScheduleText schedule={m.schedule} /></td>
                  <td data-label="Last ping" title={fmtTime(m.lastPingAt)}>{fmtRelative(m.lastPingAt, now)}</td>
                  <td data-label="Next expected" title={fmtTime(m.nextExpectedAt)}>{m.paused ? "paused" : fmtRelative(m.nextExpectedAt, now)}</td>
                  <td data-label="Health"><Health score={m.healthScore} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

function NewMonitor({ onCreated }: { onCreated: (m: Monitor) => void }) {
  const [name, setName] = useState("")
  const [type, setType] = useState<"cron" | "interval">("cron")
  const [expression, setExpression] = useState("0 3 * * *")
  const [timezone, setTimezone] = useState("UTC")
  const [grace, setGrace] = useState("60")
  const [tags, setTags] = useState("")
  const [error, setError] = useState("")
  const [busy, setBusy] = useState(false)

  return (
    <details class="card">
      <summary>New monitor</summary>
      <form class="grid" onSubmit={async (e) => {
        e.preventDefault()
        setBusy(true)
        setError("")
        try {
          const m = await api<Monitor>("POST", "/api/monitors", {
            name,
            schedule: type === "cron" ? { type, expression, timezone } : { type, expression },
            graceSeconds: Number(grace),
            tags: tags.split(",").map((t) => t.trim()).filter(Boolean)
          })
          onCreated(m)
        } catch (err) {
          setError(errorText(err))
        } finally {
          setBusy(false)
        }
      }}>
        <label>Name<input name="name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
        <label>Schedule type
          <select name="type" value={type} onChange={(e) => { const t = e.currentTarget.value as "cron" | "interval"; setType(t); setExpression(t === "cron" ? "0 3 * * *" : "5m") }}>
            <option value="cron">cron expression</option>
            <option value="interval">fixed interval</option>
          </select>
        </label>
        <label>{type === "cron" ? "Cron expression" : "Interval (30s, 5m, 1h, 1d)"}
          <input name="expression" required value={expression} onInput={(e) => setExpression(e.currentTarget.value)} />
        </label>
        {type === "cron" && (
          <label>Time zone
            <input name="timezone" list="zones" value={timezone} onInput={(e) => setTimezone(e.currentTarget.value)} />
            <datalist id="zones">{zones().map((z) => <option value={z} />)}</datalist>
          </label>
        )}
        <label>Grace (seconds)<input name="grace" type="number" min={0} required value={grace} onInput={(e) => setGrace(e.currentTarget.value)} /></label>
        <label>Tags (comma separated)<input name="tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} /></label>
        <div class="actions"><button type="submit" disabled={busy}>Create monitor</button></div>
        <ErrorLine error={error} />
      </form>
    </details>
  )
}
