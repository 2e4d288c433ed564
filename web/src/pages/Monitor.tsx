import { useState } from "preact/hooks"
import { api, errorText } from "../api"
import { DurationChart } from "../Chart"
import { ErrorLine, Health, MaintenanceBadge, ScheduleText, StatusBadge } from "../components"
import { onLink } from "../router"
import type { Incident, Monitor, Run, RunSummary, Statistics as Stats } from "../types"
import { fmtDuration, fmtRelative, fmtTime, useNow, usePoll } from "../util"
import { IncidentList } from "./Incidents"

/** "0", "12 (3 failed)", "12 (0 failed, 1 running)" */
const runCount = (s: RunSummary) =>
  s.total === 0 ? "0" : `${s.total} (${s.failed} failed${s.running > 0 ? `, ${s.running} running` : ""})`

export function MonitorPage({ id }: { id: string }) {
  const [monitor, setMonitor] = useState<Monitor | null>(null)
  const [runs, setRuns] = useState<Run[]>([])
  const [stats, setStats] = useState<Stats | null>(null)
  const [summary, setSummary] = useState<RunSummary | null>(null)
  const [incidents, setIncidents] = useState<Incident[]>([])
  const [error, setError] = useState("")
  const now = useNow(5000)

  const load = async () => {
    try {
      const [m, r, s, c, i] = await Promise.all([
        api<Monitor>("GET", `/api/monitors/${id}`),
        api<{ runs: Run[] }>("GET", `/api/monitors/${id}/runs?limit=200`),
        api<Stats>("GET", `/api/monitors/${id}/percentiles?window=30d`),
        api<RunSummary>("GET", `/api/monitors/${id}/runs/summary?window=30d`),
        api<{ incidents: Incident[] }>("GET", `/api/incidents?monitorId=${encodeURIComponent(id)}&limit=50`)
      ])
      setMonitor(m)
      setRuns((old) => (JSON.stringify(old) === JSON.stringify(r.runs) ? old : r.runs))
      setStats((old) => (JSON.stringify(old) === JSON.stringify(s) ? old : s))
      setSummary(c)
      setIncidents(i.incidents)
      setError("")
    } catch (e) {
      setError(errorText(e))
    }
  }
  usePoll(load, 5000, [id])

  if (monitor === null) return <section><p><a href="/monitors" onClick={onLink}>← Monitors</a></p><ErrorLine error={error} />{!error && <p role="status">Loading…</p>}</section>

  const action = async (what: "pause" | "resume") => {
    try {
      setMonitor(await api<Monitor>("POST", `/api/monitors/${id}/${what}`))
    } catch (e) {
      setError(errorText(e))
    }
  }

  return (
    <section>
      <p><a href="/monitors" onClick={onLink}>← Monitors</a></p>
      <div class="head">
        <h1>{monitor.name}</h1>
        <StatusBadge status={monitor.status} />
        {monitor.paused
          ? <button type="button" onClick={() => action("resume")}>Resume</button>
          : <button type="button" class="secondary" onClick={() => action("pause")}>Pause</button>}
      </div>
      {monitor.maintenance && <p><MaintenanceBadge info={monitor.maintenance} /></p>}
      <dl class="facts">
        <div><dt>Schedule</dt><dd><ScheduleText schedule={monitor.schedule} /></dd></div>
        <div><dt>Last ping</dt><dd title={fmtTime(monitor.lastPingAt)}>{fmtRelative(monitor.lastPingAt, now)}</dd></div>
        <div><dt>Next expected</dt><dd title={fmtTime(monitor.nextExpectedAt)}>{monitor.paused ? "paused" : fmtRelative(monitor.nextExpectedAt, now)}</dd></div>
        <div><dt>Health</dt><dd><Health score={monitor.healthScore} /></dd></div>
        <div><dt>Runs (30 d)</dt><dd>{summary ? runCount(summary) : "—"}</dd></div>
        <div><dt>p50 / p95 / p99</dt><dd title={stats ? `of ${stats.sampleSize} successful runs with a duration in 30 days` : undefined}>{stats?.percentiles ? `${fmtDuration(stats.percentiles.p50)} / ${fmtDuration(stats.percentiles.p95)} / ${fmtDuration(stats.percentiles.p99)}` : "—"}</dd></div>
      </dl>
      <ErrorLine error={error} />

      <PingAndBadges monitor={monitor} onChanged={setMonitor} />

      <h2>Duration</h2>
      {runs.length === 0
        ? <p class="muted">No runs yet.</p>
        : <DurationChart runs={runs} percentiles={stats?.percentiles ?? null} slaMs={monitor.sla?.maxDurationMs ?? null} />}

      <h2>Incidents</h2>
      {incidents.length === 0 ? <p class="muted">No incidents.</p> : <IncidentList incidents={incidents} onChange={load} names={{ [monitor.id]: monitor.name }} />}

      <h2>Runs</h2>
      {runs.length === 0 ? <p class="muted">No runs yet.</p> : (
        <div class="scroll">
          <table>
            <thead><tr><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Exit code</th><th scope="col">Output (redacted)</th></tr></thead>
            <tbody>
              {runs.slice(0, 100).map((r) => (
                <tr key={r.id}>
                  <td data-label="Status"><StatusBadge status={r.status === "SUCCESS" ? "OK" : r.status === "FAIL" ? "FAILING" : r.status} /></td>
                  <td data-label="Started">{fmtTime(r.startedAt)}</td>
                  <td data-label="Duration">{fmtDuration(r.durationMs)}</td>
                  <td data-label="Exit code">{r.exitCode ?? "—"}</td>
                  <td data-label="Output">{r.output
                    ? <details><summary>{r.output.split("\n")[0]!.slice(0, 60) || "output"}{r.outputTruncated ? " (truncated)" : ""}</summary><pre>{r.output}</pre></details>
                    : <span class="muted">—</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Settings</h2>
      <MonitorSettings monitor={monitor} onSaved={setMonitor} />
    </section>
  )
}

/** A URL to copy: shown as code, with a Copy button (the clipboard needs a secure context). */
function CopyLine({ label, url }: { label: string; url: string }) {
  const [copied, setCopied] = useState(false)
  return (
    <div class="copy-line">
      <dt>{label}</dt>
      <dd>
        <code>{url}</code>{" "}
        <button type="button" class="secondary" aria-label={`Copy ${label}`} onClick={() => {
          void navigator.clipboard?.writeText(url).then(() => { setCopied(true); setTimeout(() => setCopied(false), 1500) })
        }}>{copied ? "Copied" : "Copy"}</button>
      </dd>
    </div>
  )
}

interface OrganizationKeys { pingKey: string; slugPingUrl: string; badgeKey: string; badgeUrl: string }

/**
 * The monitor's ping URL (write and admin: the API leaves it out for read), its slug URL and badges
 * (admin: the organization's keys). docs/pings.md#ping-urls, docs/badges.md.
 */
function PingAndBadges({ monitor, onChanged }: { monitor: Monitor; onChanged: (m: Monitor) => void }) {
  const [keys, setKeys] = useState<OrganizationKeys | null>(null)
  const [error, setError] = useState("")
  usePoll(async () => {
    try {
      setKeys(await api<OrganizationKeys>("GET", "/api/keys"))
    } catch {
      setKeys(null) // not an admin: no slug URL, no badges
    }
  }, 60_000, [monitor.id])
  if (monitor.pingUrl === undefined && keys === null) return null
  const rotate = async () => {
    if (!confirm("Give this monitor a new ping URL? Jobs using the current one get 404 until they are changed.")) return
    try {
      onChanged(await api<Monitor>("POST", `/api/monitors/${monitor.id}/ping-url/rotate`))
      setError("")
    } catch (e) {
      setError(errorText(e))
    }
  }
  const name = monitor.slug ?? null
  return (
    <>
      <h2>Ping URL and badges</h2>
      <dl class="facts urls">
        <div><dt>Slug</dt><dd>{name ?? <span class="muted">none (set one in the settings)</span>}</dd></div>
        {monitor.pingUrl !== undefined && <CopyLine label="Ping URL" url={monitor.pingUrl} />}
        {keys !== null && name !== null && <CopyLine label="Slug ping URL" url={`${keys.slugPingUrl}/${name}`} />}
        {keys !== null && name !== null && <CopyLine label="Badge (SVG)" url={`${keys.badgeUrl}/${name}.svg`} />}
        {keys !== null && name !== null && <CopyLine label="Badge (JSON)" url={`${keys.badgeUrl}/${name}.json`} />}
        {keys !== null && name !== null && <CopyLine label="Badge (Shields.io endpoint)" url={`${keys.badgeUrl}/${name}.shields`} />}
        {keys !== null && monitor.tags.map((tag) => <CopyLine key={tag} label={`Badge of tag ${tag}`} url={`${keys.badgeUrl}/${encodeURIComponent(tag)}.svg`} />)}
      </dl>
      {keys !== null && name !== null && <p><img alt={`badge of ${name}`} src={`${new URL(keys.badgeUrl).pathname}/${name}.svg`} /></p>}
      {monitor.pingUrl !== undefined && (
        <p class="muted">
          The URL is the credential: <code>curl -fsS -m 10 --retry 5 {monitor.pingUrl}</code> records a success;
          append <code>/start</code>, <code>/fail</code>, <code>/log</code> or the exit status.{" "}
          <button type="button" class="secondary" onClick={() => void rotate()}>Rotate ping URL</button>
        </p>
      )}
      <ErrorLine error={error} />
    </>
  )
}

function MonitorSettings({ monitor, onSaved }: { monitor: Monitor; onSaved: (m: Monitor) => void }) {
  const [f, setF] = useState(() => ({
    name: monitor.name,
    slug: monitor.slug ?? "",
    type: monitor.schedule.type,
    expression: monitor.schedule.expression,
    timezone: monitor.schedule.timezone,
    grace: String(monitor.graceSeconds),
    maxRuntime: monitor.maxRuntimeSeconds === null ? "" : String(monitor.maxRuntimeSeconds),
    maxOutput: String(monitor.maxOutputSizeKb),
    capture: monitor.captureOutput,
    slaTarget: monitor.sla?.durationTarget ?? "p95",
    slaMs: monitor.sla ? String(monitor.sla.maxDurationMs) : "",
    tags: monitor.tags.join(", "),
    autoResolve: monitor.autoResolve,
    failureThreshold: String(monitor.failureThreshold),
    recoveryThreshold: String(monitor.recoveryThreshold)
  }))
  const [msg, setMsg] = useState("")
  const [error, setError] = useState("")
  const set = (k: keyof typeof f) => (e: Event) => {
    const t = e.currentTarget as HTMLInputElement
    setF({ ...f, [k]: t.type === "checkbox" ? t.checked : t.value })
  }
  return (
    <form class="card grid" onSubmit={async (e) => {
      e.preventDefault()
      setMsg("")
      setError("")
      try {
        const saved = await api<Monitor>("PATCH", `/api/monitors/${monitor.id}`, {
          name: f.name,
          slug: f.slug.trim() === "" ? null : f.slug.trim(),
          schedule: f.type === "cron" ? { type: f.type, expression: f.expression, timezone: f.timezone } : { type: f.type, expression: f.expression },
          graceSeconds: Number(f.grace),
          maxRuntimeSeconds: f.maxRuntime === "" ? null : Number(f.maxRuntime),
          maxOutputSizeKb: Number(f.maxOutput),
          captureOutput: f.capture,
          sla: f.slaMs === "" ? null : { durationTarget: f.slaTarget, maxDurationMs: Number(f.slaMs) },
          tags: f.tags.split(",").map((t) => t.trim()).filter(Boolean),
          autoResolve: f.autoResolve,
          failureThreshold: Number(f.failureThreshold),
          recoveryThreshold: Number(f.recoveryThreshold)
        })
        onSaved(saved)
        setMsg("Saved.")
      } catch (err) {
        setError(errorText(err))
      }
    }}>
      <label>Name<input value={f.name} onInput={set("name")} required /></label>
      <label title="a-z, 0-9, - and _: the monitor's name in slug ping URLs and badges; unique in the organization">Slug<input value={f.slug} onInput={set("slug")} pattern="[a-z0-9][a-z0-9_-]{0,99}" /></label>
      <label>Schedule type<select value={f.type} onChange={set("type")}><option value="cron">cron expression</option><option value="interval">fixed interval</option></select></label>
      <label>Expression<input value={f.expression} onInput={set("expression")} required /></label>
      {f.type === "cron" && <label>Time zone<input value={f.timezone} onInput={set("timezone")} /></label>}
      <label>Grace (seconds)<input type="number" min={0} value={f.grace} onInput={set("grace")} /></label>
      <label>Max runtime (seconds, empty: none)<input type="number" min={1} value={f.maxRuntime} onInput={set("maxRuntime")} /></label>
      <label>Output kept per ping (KiB)<input type="number" min={1} max={1024} value={f.maxOutput} onInput={set("maxOutput")} /></label>
      <label>SLA target<select value={f.slaTarget} onChange={set("slaTarget")}><option value="p95">p95</option><option value="p99">p99</option></select></label>
      <label>SLA max duration (ms, empty: none)<input type="number" min={1} value={f.slaMs} onInput={set("slaMs")} /></label>
      <label>Tags (comma separated)<input value={f.tags} onInput={set("tags")} /></label>
      <label title="Failed or missed runs in a row before a FAIL or MISSED incident opens and alerts (1: the first one)">Failures in a row before an incident<input type="number" min={1} max={100} value={f.failureThreshold} onInput={set("failureThreshold")} /></label>
      <label title="Successful runs in a row before an open FAIL or MISSED incident resolves automatically">Successes in a row to resolve<input type="number" min={1} max={100} value={f.recoveryThreshold} onInput={set("recoveryThreshold")} /></label>
      <label class="check"><input type="checkbox" checked={f.capture} onChange={set("capture")} /> Capture output</label>
      <label class="check"><input type="checkbox" checked={f.autoResolve} onChange={set("autoResolve")} /> Resolve incidents automatically</label>
      <div class="actions"><button type="submit">Save settings</button> <span role="status">{msg}</span></div>
      <ErrorLine error={error} />
    </form>
  )
}
