import { useState } from "preact/hooks"
import { api, errorText } from "../api"
import { ErrorLine } from "../components"
import type { ChatWebhook as Chat, Delivery, Token, UserRow, Webhook as Hook } from "../types"
import { fmtTime, usePoll } from "../util"
import { AlertChannels } from "./AlertChannels"

export function SettingsPage() {
  return (
    <section>
      <h1>Settings</h1>
      <Tokens />
      <AlertChannels />
      <ChatWebhooks />
      <Webhooks />
      <Users />
    </section>
  )
}

/** Runs an action, reporting its error; reloads on success. */
function useAction(reload: () => Promise<void>) {
  const [error, setError] = useState("")
  usePoll(async () => {
    try {
      await reload()
    } catch (e) {
      setError(errorText(e))
    }
  }, 30_000)
  const run = async (f: () => Promise<unknown>) => {
    setError("")
    try {
      const r = await f()
      await reload()
      return r
    } catch (e) {
      setError(errorText(e))
      return undefined
    }
  }
  return [error, run] as const
}

function Tokens() {
  const [tokens, setTokens] = useState<Token[] | null>(null)
  const [name, setName] = useState("")
  const [scope, setScope] = useState("read")
  const [expiry, setExpiry] = useState("90")
  const [created, setCreated] = useState<{ name: string; token: string } | null>(null)
  const load = async () => setTokens((await api<{ tokens: Token[] }>("GET", "/api/tokens")).tokens)
  const [error, run] = useAction(load)
  return (
    <section aria-labelledby="tokens-h" class="card">
      <h2 id="tokens-h">Tokens</h2>
      <form class="inline" onSubmit={async (e) => {
        e.preventDefault()
        const expiresAt = expiry === "" ? null : new Date(Date.now() + Number(expiry) * 86400_000).toISOString()
        const r = await run(() => api<{ token: string; name: string }>("POST", "/api/tokens", { name, scope, expiresAt }))
        if (r) { setCreated(r as { token: string; name: string }); setName("") }
      }}>
        <label>Name<input name="token-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
        <label>Scope
          <select name="scope" value={scope} onChange={(e) => setScope(e.currentTarget.value)}>
            <option value="read">read: GET only</option>
            <option value="write">write: read and change</option>
            <option value="ping">ping: the ping intake only</option>
            <option value="metrics">metrics: the Prometheus scrape only</option>
            <option value="admin">admin: everything</option>
          </select>
        </label>
        <label>Expires
          <select name="expiry" value={expiry} onChange={(e) => setExpiry(e.currentTarget.value)}>
            <option value="7">in 7 days</option>
            <option value="30">in 30 days</option>
            <option value="90">in 90 days</option>
            <option value="365">in a year</option>
            <option value="">never</option>
          </select>
        </label>
        <button type="submit">Create token</button>
      </form>
      {created && (
        <div class="once" role="status">
          <p>Token <strong>{created.name}</strong>, shown only this once: copy it now.</p>
          <code class="secret" data-token>{created.token}</code>
          <button type="button" class="secondary" onClick={() => void navigator.clipboard?.writeText(created.token)}>Copy</button>
          <button type="button" class="link" onClick={() => setCreated(null)}>Done</button>
        </div>
      )}
      <ErrorLine error={error} />
      {tokens && (
        <div class="scroll">
          <table>
            <thead><tr><th scope="col">Name</th><th scope="col">Scope</th><th scope="col">Prefix</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {tokens.map((t) => (
                <tr data-token-id={t.id}>
                  <td data-label="Name">{t.name}</td>
                  <td data-label="Scope">{t.scope}</td>
                  <td data-label="Prefix"><code>{t.prefix}…</code></td>
                  <td data-label="Expires">{t.expiresAt ? fmtTime(t.expiresAt) : "never"}</td>
                  <td data-label="Last used">{fmtTime(t.lastUsedAt)}</td>
                  <td><button type="button" class="danger" aria-label={`Revoke ${t.name}`} onClick={() => { if (confirm(`Revoke the token "${t.name}"? Anything using it stops working at once.`)) void run(() => api("DELETE", `/api/tokens/${t.id}`)) }}>Revoke</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

function ChatWebhooks() {
  const [hooks, setHooks] = useState<Chat[] | null>(null)
  const [url, setUrl] = useState("")
  const [name, setName] = useState("")
  const [mention, setMention] = useState("")
  const [result, setResult] = useState("")
  const load = async () => setHooks((await api<{ webhooks: Chat[] }>("GET", "/api/alerts/chat/webhooks")).webhooks)
  const [error, run] = useAction(load)
  return (
    <section aria-labelledby="chat-h" class="card">
      <h2 id="chat-h">Chat webhooks</h2>
      <p class="muted">
        Discord incoming webhooks (or services that accept Discord's message format) that receive incident alerts. They are
        also listed under Alert channels (type Discord), where they can be tested and deleted.
      </p>
      <form class="inline" onSubmit={async (e) => {
        e.preventDefault()
        const r = await run(() => api("POST", "/api/alerts/chat/webhooks", { url, ...(name ? { name } : {}), mention: mention || null }))
        if (r) { setUrl(""); setName(""); setMention("") }
      }}>
        <label>Webhook URL<input type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} /></label>
        <label>Name (optional)<input value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
        <label>Mention (optional)<input value={mention} onInput={(e) => setMention(e.currentTarget.value)} placeholder="@oncall" /></label>
        <button type="submit">Add chat webhook</button>
      </form>
      <ErrorLine error={error} />
      <p role="status">{result}</p>
      {hooks && hooks.length > 0 && (
        <ul class="plain">
          {hooks.map((h) => (
            <li class="row">
              <strong>{h.name}</strong>
              <span class={`badge ${h.status === "invalid" ? "bad" : "ok"}`}>{h.status}</span>
              {h.statusReason && <span class="error-text">{h.statusReason}</span>}
              <code class="url">{h.url}</code>
              <button type="button" class="secondary" onClick={async () => {
                setResult("")
                const r = await run(() => api<{ status: string }>("POST", "/api/alerts/chat/test", { webhookId: h.id }))
                if (r) setResult(`Test message sent to ${h.name}.`)
              }}>Send test</button>
              <button type="button" class="danger" onClick={() => { if (confirm(`Delete the chat webhook "${h.name}"?`)) void run(() => api("DELETE", `/api/alerts/chat/webhooks/${h.id}`)) }}>Delete</button>
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}

const EVENTS = ["incident.opened", "incident.acknowledged", "incident.resolved", "incident.note_added", "monitor.created", "monitor.updated", "monitor.deleted", "ping.received", "maintenance.upcoming", "maintenance.started", "maintenance.ended"]

function Webhooks() {
  const [hooks, setHooks] = useState<Hook[] | null>(null)
  const [url, setUrl] = useState("")
  const [events, setEvents] = useState<string[]>(["incident.opened", "incident.resolved"])
  const [secret, setSecret] = useState<string | null>(null)
  const load = async () => setHooks((await api<{ webhooks: Hook[] }>("GET", "/api/webhooks")).webhooks)
  const [error, run] = useAction(load)
  return (
    <section aria-labelledby="hooks-h" class="card">
      <h2 id="hooks-h">Outbound webhooks</h2>
      <form class="grid" onSubmit={async (e) => {
        e.preventDefault()
        const r = await run(() => api<{ secret: string }>("POST", "/api/webhooks", { url, events }))
        if (r) { setSecret((r as { secret: string }).secret); setUrl("") }
      }}>
        <label class="wide">URL<input type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} /></label>
        <fieldset class="wide">
          <legend>Events</legend>
          {EVENTS.map((ev) => (
            <label class="check"><input type="checkbox" checked={events.includes(ev)} onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))} /> {ev}</label>
          ))}
        </fieldset>
        <div class="actions"><button type="submit">Add webhook</button></div>
      </form>
      {secret && <div class="once" role="status"><p>Signing secret, shown only this once:</p><code class="secret">{secret}</code> <button type="button" class="link" onClick={() => setSecret(null)}>Done</button></div>}
      <ErrorLine error={error} />
      {hooks && hooks.map((h) => <WebhookItem key={h.id} hook={h} run={run} />)}
    </section>
  )
}

function WebhookItem({ hook, run }: { hook: Hook; run: (f: () => Promise<unknown>) => Promise<unknown> }) {
  const [deliveries, setDeliveries] = useState<Delivery[] | null>(null)
  const [open, setOpen] = useState(false)
  const load = async () => setDeliveries((await api<{ deliveries: Delivery[] }>("GET", `/api/webhooks/${hook.id}/deliveries?limit=50`)).deliveries)
  return (
    <div class="hook">
      <div class="row">
        <code class="url">{hook.url}</code>
        <span class="muted">{hook.events.join(", ")}</span>
        <button type="button" class="secondary" onClick={async () => { await run(() => api("POST", `/api/webhooks/${hook.id}/test`)); setOpen(true); await load() }}>Send test</button>
        <button type="button" class="secondary" aria-expanded={open} onClick={async () => { setOpen(!open); if (!open) await load() }}>Deliveries</button>
        <button type="button" class="danger" onClick={() => { if (confirm(`Delete the webhook to ${hook.url}?`)) void run(() => api("DELETE", `/api/webhooks/${hook.id}`)) }}>Delete</button>
      </div>
      {open && deliveries && (deliveries.length === 0 ? <p class="muted">No deliveries yet.</p> : (
        <div class="scroll">
          <table>
            <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Result</th><th scope="col">HTTP status</th><th scope="col">Response time</th><th scope="col">Retries</th><th scope="col">Headers</th></tr></thead>
            <tbody>
              {deliveries.map((d) => (
                <tr>
                  <td data-label="Time">{fmtTime(d.createdAt)}</td>
                  <td data-label="Event">{d.event}</td>
                  <td data-label="Result"><span class={`badge ${d.status === "failed" ? "bad" : d.status === "succeeded" ? "ok" : ""}`}>{d.status}</span>{d.lastError && <div class="error-text">{d.lastError}</div>}</td>
                  <td data-label="HTTP status">{d.lastStatusCode ?? "—"}</td>
                  <td data-label="Response time">{d.lastResponseTimeMs === null ? "—" : `${d.lastResponseTimeMs} ms`}</td>
                  <td data-label="Retries">{d.retryCount}</td>
                  <td data-label="Headers">{d.requestHeaders ? <details><summary>{Object.keys(d.requestHeaders).length} headers</summary><pre>{Object.entries(d.requestHeaders).map(([k, v]) => `${k}: ${v}`).join("\n")}</pre></details> : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </div>
  )
}

function Users() {
  const [users, setUsers] = useState<UserRow[] | null>(null)
  const [email, setEmail] = useState("")
  const [name, setName] = useState("")
  const [role, setRole] = useState("member")
  const [link, setLink] = useState("")
  const load = async () => setUsers((await api<{ users: UserRow[] }>("GET", "/api/users")).users)
  const [error, run] = useAction(load)
  return (
    <section aria-labelledby="users-h" class="card">
      <h2 id="users-h">Users</h2>
      {users && (
        <ul class="plain">{users.map((u) => <li>{u.name} <span class="muted">&lt;{u.email}&gt;</span></li>)}</ul>
      )}
      <form class="inline" onSubmit={async (e) => {
        e.preventDefault()
        const r = await run(() => api<{ token: string }>("POST", "/api/auth/invites", { email, role, ...(name ? { name } : {}) }))
        if (r) { setLink(`${location.origin}/invite?token=${encodeURIComponent((r as { token: string }).token)}`); setEmail(""); setName("") }
      }}>
        <label>Email<input type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} /></label>
        <label>Name (optional)<input value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
        <label>Role
          <select value={role} onChange={(e) => setRole(e.currentTarget.value)}>
            <option value="member">member: read and change</option>
            <option value="admin">admin: also tokens and invites</option>
          </select>
        </label>
        <button type="submit">Invite</button>
      </form>
      {link && <div class="once" role="status"><p>Send this invitation link (shown once):</p><code class="secret">{link}</code></div>}
      <ErrorLine error={error} />
    </section>
  )
}
