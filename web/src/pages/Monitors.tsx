import { useEffect, useRef, useState } from "preact/hooks"
import { api, ApiError, errorText } from "../api"
import { ErrorLine, Health, MaintenanceBadge, ScheduleText, StatusBadge } from "../components"
import { navigate, onLink } from "../router"
import type { Monitor, MonitorPage, MonitorSort, MonitorSummary } from "../types"
import { fmtRelative, fmtTime, useNow, usePoll, zones } from "../util"

const STATUSES = ["FAILING", "MISSED", "LATE", "RUNNING", "NEW", "OK", "PAUSED"] as const
/** The status filter's first choice past "All": what needs a person. */
const ATTENTION = "FAILING,MISSED,LATE"

const SORTS: ReadonlyArray<[MonitorSort, string]> = [
  ["status", "Most urgent first"],
  ["-status", "Least urgent first"],
  ["name", "Name, A to Z"],
  ["-name", "Name, Z to A"],
  ["-lastPingAt", "Latest ping first"],
  ["lastPingAt", "Oldest ping first"],
  ["nextExpectedAt", "Next expected soonest"],
  ["-nextExpectedAt", "Next expected latest"],
  ["healthScore", "Lowest health first"],
  ["-healthScore", "Highest health first"],
  ["-createdAt", "Newest first"],
  ["createdAt", "Oldest first"]
]
const DEFAULT_SORT: MonitorSort = "status"
const PAGE_SIZE = 50

interface Filters {
  readonly q: string
  readonly status: string
  readonly tag: string
  readonly sort: MonitorSort
}

/** The filters kept in the page's address (so the browser's Back button brings them back). */
function filtersFromUrl(): Filters {
  const p = new URL(location.href).searchParams
  const sort = p.get("sort")
  return {
    q: p.get("q") ?? "",
    status: p.get("status") ?? "",
    tag: p.get("tag") ?? "",
    sort: SORTS.some(([s]) => s === sort) ? (sort as MonitorSort) : DEFAULT_SORT
  }
}

function filtersToUrl(f: Filters) {
  const p = new URLSearchParams()
  if (f.q) p.set("q", f.q)
  if (f.status) p.set("status", f.status)
  if (f.tag) p.set("tag", f.tag)
  if (f.sort !== DEFAULT_SORT) p.set("sort", f.sort)
  const query = p.toString()
  const target = `/monitors${query ? `?${query}` : ""}`
  if (location.pathname + location.search !== target) history.replaceState(null, "", target)
}

/**
 * The monitors page asks the service for the one page it shows (filtered, sorted and paged by the
 * service: GET /api/monitors with q, status, tag, sort, cursor) and for the counts by status
 * (GET /api/monitors/summary), and refreshes those two every 5 s, whatever the size of the fleet.
 */
export function MonitorsPage() {
  const initial = useRef(filtersFromUrl()).current
  const [search, setSearch] = useState(initial.q)
  const [filters, setFilters] = useState<Filters>(initial)
  /** The cursors of the pages before this one's successor: [] on page 1, [c2] on page 2, … */
  const [cursors, setCursors] = useState<ReadonlyArray<string>>([])
  const [page, setPage] = useState<MonitorPage | null>(null)
  const [summary, setSummary] = useState<MonitorSummary | null>(null)
  const [error, setError] = useState("")
  const [updated, setUpdated] = useState<number | null>(null)
  const now = useNow(5000)
  const asked = useRef(0)

  const change = (next: Partial<Filters>) => {
    setFilters((f) => ({ ...f, ...next }))
    setCursors([])
  }

  // The search box asks once typing pauses.
  useEffect(() => {
    const t = setTimeout(() => {
      if (search.trim() !== filters.q) change({ q: search.trim() })
    }, 300)
    return () => clearTimeout(t)
  }, [search])

  useEffect(() => filtersToUrl(filters), [filters])

  const cursor = cursors[cursors.length - 1]
  const load = async () => {
    const n = ++asked.current
    const p = new URLSearchParams({ limit: String(PAGE_SIZE), sort: filters.sort })
    if (filters.q) p.set("q", filters.q)
    if (filters.status) p.set("status", filters.status)
    if (filters.tag) p.set("tag", filters.tag)
    if (cursor !== undefined) p.set("cursor", cursor)
    try {
      const [list, counts] = await Promise.all([
        api<MonitorPage>("GET", `/api/monitors?${p}`),
        api<MonitorSummary>("GET", "/api/monitors/summary")
      ])
      if (n !== asked.current) return // an answer to filters no longer shown
      // This page emptied since it was opened (its monitors recovered, were deleted…): the one before.
      if (list.monitors.length === 0 && cursors.length > 0) {
        setCursors((c) => c.slice(0, -1))
        return
      }
      setPage(list)
      setSummary(counts)
      setUpdated(Date.now())
      setError("")
    } catch (e) {
      if (n !== asked.current) return
      // A cursor the service no longer takes (another version of it): back to the first page.
      if (e instanceof ApiError && e.path === "cursor" && cursors.length > 0) setCursors([])
      else setError(errorText(e))
    }
  }
  usePoll(load, 5000, [filters, cursor])

  const filtered = filters.q !== "" || filters.status !== "" || filters.tag !== ""
  const pages = page === null ? 0 : Math.max(1, Math.ceil(page.total / page.limit))
  const first = page === null ? 0 : (page.page - 1) * page.limit + 1
  const tags = [...(summary?.tags ?? [])].map((t) => t.tag).sort((a, b) => a.localeCompare(b))
  if (filters.tag && !tags.includes(filters.tag)) tags.unshift(filters.tag)
  const count = (status: string) => summary === null ? "" : ` (${status.split(",").reduce((n, s) => n + (summary.byStatus[s as keyof MonitorSummary["byStatus"]] ?? 0), 0)})`

  return (
    <section>
      <div class="head">
        <h1>Monitors</h1>
        <p class="muted" aria-live="off">{updated ? `Refreshed ${new Date(updated).toLocaleTimeString()}, every 5 s` : ""}</p>
      </div>
      <NewMonitor onCreated={(m) => navigate(`/monitors/${m.id}`)} />
      <div class="filters" role="group" aria-label="Filters">
        <div class="field">
          <label for="filter-q">Search</label>
          <input id="filter-q" type="search" placeholder="part of a name" maxLength={200} value={search}
            onInput={(e) => setSearch(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="filter-status">Status</label>
          <select id="filter-status" value={filters.status} onChange={(e) => change({ status: e.currentTarget.value })}>
            <option value="">All{summary ? ` (${summary.total})` : ""}</option>
            <option value={ATTENTION}>Needs attention{count(ATTENTION)}</option>
            {STATUSES.map((s) => <option value={s}>{s}{count(s)}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="filter-tag">Tag</label>
          <select id="filter-tag" value={filters.tag} onChange={(e) => change({ tag: e.currentTarget.value })}>
            <option value="">All</option>
            {tags.map((t) => <option value={t}>{t}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="filter-sort">Sort</label>
          <select id="filter-sort" value={filters.sort} onChange={(e) => change({ sort: e.currentTarget.value as MonitorSort })}>
            {SORTS.map(([value, label]) => <option value={value}>{label}</option>)}
          </select>
        </div>
        <span class="muted" aria-live="polite">
          {page && summary ? (filtered ? `${page.total} of ${summary.total} match` : `${page.total} monitors`) : ""}
        </span>
      </div>
      <ErrorLine error={error} />
      {page === null ? <p role="status">Loading…</p> : page.monitors.length === 0 ? <p>No monitors{filtered ? " match these filters" : " yet: create one above"}.</p> : (
        <>
          <div class="scroll">
            <table class="monitors">
              <thead>
                <tr><th scope="col">Status</th><th scope="col">Name</th><th scope="col">Schedule</th><th scope="col">Last ping</th><th scope="col">Next expected</th><th scope="col">Health</th></tr>
              </thead>
              <tbody>
                {page.monitors.map((m) => (
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
          {(pages > 1 || cursors.length > 0) && <nav class="pager" aria-label="Pages">
            <button type="button" disabled={cursors.length === 0} onClick={() => setCursors((c) => c.slice(0, -1))}>← Previous</button>
            <span aria-live="polite">
              {`${first}–${first + page.monitors.length - 1} of ${page.total}`}{pages > 1 ? `, page ${Math.min(page.page, pages)} of ${pages}` : ""}
            </span>
            <button type="button" disabled={page.nextCursor === null} onClick={() => {
              const next = page.nextCursor
              if (next !== null) setCursors((c) => [...c, next])
            }}>Next →</button>
          </nav>}
        </>
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
  const [slug, setSlug] = useState("")
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
            tags: tags.split(",").map((t) => t.trim()).filter(Boolean),
            ...(slug.trim() === "" ? {} : { slug: slug.trim() })
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
        <label title="a-z, 0-9, - and _: the monitor's name in slug ping URLs and badges; unique in the organization">Slug (optional)<input name="slug" pattern="[a-z0-9][a-z0-9_-]{0,99}" value={slug} onInput={(e) => setSlug(e.currentTarget.value)} /></label>
        <div class="actions"><button type="submit" disabled={busy}>Create monitor</button></div>
        <ErrorLine error={error} />
      </form>
    </details>
  )
}
