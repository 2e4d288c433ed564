import { useEffect, useState } from "preact/hooks"
import { api, errorText } from "../api"
import { ErrorLine } from "../components"
import { onLink } from "../router"
import type { Incident, Monitor } from "../types"
import { fmtTime, usePoll } from "../util"

const TABS = [["OPEN", "Open"], ["ACKNOWLEDGED", "Acknowledged"], ["RESOLVED", "Resolved"]] as const

/** `focus`: an incident id from the path (/incidents/<id>, the links in chat alerts): its tab is shown and it is highlighted. */
export function IncidentsPage({ focus }: { focus?: string | undefined }) {
  const [tab, setTab] = useState<Incident["status"]>("OPEN")
  const [focused, setFocused] = useState<string | null>(null)
  const [lists, setLists] = useState<Record<string, Incident[]> | null>(null)
  const [names, setNames] = useState<Record<string, string>>({})
  const [error, setError] = useState("")

  const load = async () => {
    try {
      const [open, ack, resolved, monitors] = await Promise.all([
        ...TABS.map(([s]) => api<{ incidents: Incident[] }>("GET", `/api/incidents?status=${s}&limit=200`)),
        api<{ monitors: Monitor[] }>("GET", "/api/monitors?limit=100")
      ]) as [{ incidents: Incident[] }, { incidents: Incident[] }, { incidents: Incident[] }, { monitors: Monitor[] }]
      setLists({ OPEN: open.incidents, ACKNOWLEDGED: ack.incidents, RESOLVED: resolved.incidents })
      setNames(Object.fromEntries(monitors.monitors.map((m) => [m.id, m.name])))
      setError("")
    } catch (e) {
      setError(errorText(e))
    }
  }
  usePoll(load, 5000)

  useEffect(() => {
    if (!focus || focused === focus || lists === null) return
    const status = TABS.find(([st]) => lists[st]!.some((i) => i.id === focus))?.[0]
    if (status) setTab(status)
    setFocused(focus)
    requestAnimationFrame(() => document.querySelector(`[data-incident="${CSS.escape(focus)}"]`)?.scrollIntoView({ block: "center" }))
  }, [focus, lists])

  return (
    <section>
      <h1>Incidents</h1>
      <div role="tablist" aria-label="Incident status" class="tabs">
        {TABS.map(([s, label]) => (
          <button type="button" role="tab" id={`tab-${s}`} aria-selected={tab === s} aria-controls="incident-panel" onClick={() => setTab(s)}
            onKeyDown={(e) => {
              const i = TABS.findIndex(([t]) => t === tab)
              const next = e.key === "ArrowRight" ? (i + 1) % 3 : e.key === "ArrowLeft" ? (i + 2) % 3 : -1
              if (next >= 0) { setTab(TABS[next]![0]); document.getElementById(`tab-${TABS[next]![0]}`)?.focus() }
            }}
            tabIndex={tab === s ? 0 : -1}>
            {label} <span class="count">{lists ? lists[s]!.length : "…"}</span>
          </button>
        ))}
      </div>
      <ErrorLine error={error} />
      <div id="incident-panel" role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {lists === null ? <p role="status">Loading…</p> : lists[tab]!.length === 0
          ? <p class="muted">No {tab.toLowerCase()} incidents.</p>
          : <IncidentList incidents={lists[tab]!} names={names} onChange={load} focus={focus} />}
      </div>
    </section>
  )
}

export function IncidentList({ incidents, names, onChange, focus }: { incidents: Incident[]; names: Record<string, string>; onChange: () => Promise<void> | void; focus?: string | undefined }) {
  return <ul class="incidents">{incidents.map((i) => <IncidentItem key={i.id} incident={i} name={names[i.monitorId]} onChange={onChange} focused={i.id === focus} />)}</ul>
}

function IncidentItem({ incident: i, name, onChange, focused }: { incident: Incident; name: string | undefined; onChange: () => Promise<void> | void; focused: boolean }) {
  const [note, setNote] = useState("")
  const [error, setError] = useState("")
  const [busy, setBusy] = useState(false)
  const act = async (path: string, body: unknown) => {
    setBusy(true)
    setError("")
    try {
      await api("POST", `/api/incidents/${i.id}/${path}`, body)
      setNote("")
      await onChange()
    } catch (e) {
      setError(errorText(e))
    } finally {
      setBusy(false)
    }
  }
  const d = i.details
  const summary = [
    d.exitCode !== undefined ? `exit code ${String(d.exitCode)}` : null,
    typeof d.output === "string" && d.output ? `output: ${d.output.slice(0, 120)}` : null
  ].filter(Boolean).join("; ")
  return (
    <li class={`incident sev-${i.severity.toLowerCase()}${focused ? " focused" : ""}`} data-incident={i.id} aria-current={focused ? "true" : undefined}>
      <div class="incident-head">
        <strong>{i.type}</strong>
        <span class="badge">{i.severity}</span>
        <span class="badge">{i.status}</span>
        <a href={`/monitors/${i.monitorId}`} onClick={onLink}>{name ?? "monitor"}</a>
        <span class="muted">opened {fmtTime(i.createdAt)}{i.occurrences > 1 ? `, ${i.occurrences} times` : ""}</span>
      </div>
      {summary && <p class="details">{summary}</p>}
      <p class="muted">
        {i.acknowledgedBy && `Acknowledged by ${i.acknowledgedBy.name} ${fmtTime(i.acknowledgedAt)}. `}
        {i.resolvedBy && `Resolved by ${i.resolvedBy.name} ${fmtTime(i.resolvedAt)}`}
        {i.mttrSeconds !== null && ` (time to resolve ${Math.round(i.mttrSeconds / 60)} min).`}
      </p>
      {i.notes.length > 0 && (
        <ul class="notes" aria-label="Notes">
          {i.notes.map((n) => <li><span class="muted">{fmtTime(n.at)} · {n.by}:</span> {n.text}</li>)}
        </ul>
      )}
      <form class="incident-actions" onSubmit={(e) => { e.preventDefault(); if (note.trim()) void act("notes", { note }) }}>
        <label class="grow">Note<input value={note} onInput={(e) => setNote(e.currentTarget.value)} maxLength={10000} placeholder="What you found or did" /></label>
        <button type="submit" class="secondary" disabled={busy || !note.trim()}>Add note</button>
        {i.status === "OPEN" && <button type="button" disabled={busy} onClick={() => act("acknowledge", note.trim() ? { note } : {})}>Acknowledge</button>}
        {i.status !== "RESOLVED" && <button type="button" disabled={busy} onClick={() => act("resolve", note.trim() ? { note } : {})}>Resolve</button>}
      </form>
      <ErrorLine error={error} />
    </li>
  )
}
