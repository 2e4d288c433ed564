import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import { api, errorText } from "../api"
import { ErrorLine } from "../components"
import type { AlertChannel, AlertChannelType, ChannelRules, ChannelTest, ChannelUpdate, Delivery, Monitor } from "../types"
import { usePoll } from "../util"

/**
 * Settings → Alert channels (docs/alerts.md): the organization's channels with their status and
 * why a channel is invalid, a form per type saying what to paste and where to find it, the Test
 * button with the provider's answer, delete. Discord channels are the chat webhooks, added in
 * their own section; they are listed, tested and deleted here too.
 */

/** One field of a type's `config`. */
interface Field {
  readonly key: string
  readonly label: string
  /** `list`: comma-separated, sent as an array; `chat`: a number when it is one, else the text; `secret`: a password input. */
  readonly kind: "text" | "url" | "secret" | "list" | "chat"
  readonly required: boolean
  /** A secret the API shows masked (a webhook url): editing never shows it, it is only replaced. */
  readonly masked?: true
  readonly placeholder?: string
  readonly help?: string
}

interface TypeForm {
  readonly label: string
  /** What to set up on the provider's side, and where to find what is pasted here. */
  readonly where: ComponentChildren
  readonly fields: ReadonlyArray<Field>
}

type FormType = Exclude<AlertChannelType, "discord">

/**
 * One form per type the API takes (discord excepted: the chat webhooks). Keyed by the API's own
 * type list: a type added to `AlertChannelTypes` fails `tsc -p web` until it has its form here.
 */
const FORMS: { readonly [T in FormType]: TypeForm } = {
  email: {
    label: "Email",
    where: (
      <>One mail per alert, to every address below, sent through this server's mail relay (<code>SMTP_URL</code>; without it, email channels cannot be added).</>
    ),
    fields: [
      { key: "to", label: "Addresses", kind: "list", required: true, placeholder: "oncall@example.com, ops@example.com", help: "1 to 10, comma-separated" }
    ]
  },
  slack: {
    label: "Slack",
    where: (
      <>
        In Slack: <a href="https://api.slack.com/apps" target="_blank" rel="noreferrer">api.slack.com/apps</a> → Create New App → From
        scratch → Incoming Webhooks: on → Add New Webhook to Workspace → pick the channel → copy the webhook URL
        (<code>https://hooks.slack.com/services/T…/B…/…</code>). It is a secret: it is shown masked once saved.
      </>
    ),
    fields: [
      { key: "url", label: "Webhook URL", kind: "url", required: true, masked: true, placeholder: "https://hooks.slack.com/services/…" },
      { key: "mention", label: "Mention (optional)", kind: "text", required: false, placeholder: "<!here>", help: "<!here>, <!channel>, <@U012AB3CD> or <!subteam^S012AB3CD>" }
    ]
  },
  pagerduty: {
    label: "PagerDuty",
    where: (
      <>
        In PagerDuty: Services → Service Directory → your service → Integrations → Add an integration → <b>Events API V2</b>, and copy
        its Integration Key (32 characters; a secret, never shown again). PagerDuty's incident follows ours: acknowledged and resolved
        here, acknowledged and resolved there.
      </>
    ),
    fields: [
      { key: "routingKey", label: "Integration key", kind: "secret", required: true, placeholder: "R0123456789ABCDEF0123456789ABCDE" },
      { key: "baseUrl", label: "Events API address (optional)", kind: "url", required: false, placeholder: "https://events.pagerduty.com", help: "https://events.eu.pagerduty.com for EU accounts" }
    ]
  },
  opsgenie: {
    label: "Opsgenie",
    where: (
      <>
        In Opsgenie: Teams → your team → Integrations → Add integration → <b>API</b>, keep "Create and Update Access" on, save, and copy the
        API Key (a secret, never shown again). Pick the region your account lives in (<code>app.eu.opsgenie.com</code> means EU).
      </>
    ),
    fields: [
      { key: "apiKey", label: "API key", kind: "secret", required: true, placeholder: "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" },
      { key: "region", label: "Region (optional)", kind: "text", required: false, placeholder: "us", help: "us or eu" }
    ]
  },
  teams: {
    label: "Microsoft Teams",
    where: (
      <>
        In Teams: the channel's ⋯ → Workflows → "Post to a channel when a webhook request is received" → pick the team and channel → copy
        the URL it shows (<code>https://prod-…logic.azure.com/workflows/…</code>; the old Office 365 connectors are retired). It is a
        secret: it is shown masked once saved.
      </>
    ),
    fields: [
      { key: "url", label: "Workflow URL", kind: "url", required: true, masked: true, placeholder: "https://prod-00.westus.logic.azure.com/workflows/…" }
    ]
  },
  ntfy: {
    label: "ntfy",
    where: (
      <>
        A topic on <a href="https://ntfy.sh" target="_blank" rel="noreferrer">ntfy.sh</a> or your own ntfy server; subscribe to it in the
        ntfy app. On a public server anyone who knows the topic can read it: pick a long, unguessable name, or reserve it and give an
        access token (<code>tk_…</code>; a secret, never shown again).
      </>
    ),
    fields: [
      { key: "topic", label: "Topic", kind: "text", required: true, placeholder: "ops-alerts-7f3k2q" },
      { key: "server", label: "Server (optional)", kind: "url", required: false, placeholder: "https://ntfy.sh" },
      { key: "token", label: "Access token (optional)", kind: "secret", required: false, placeholder: "tk_…" }
    ]
  },
  telegram: {
    label: "Telegram",
    where: (
      <>
        In Telegram: talk to <a href="https://t.me/BotFather" target="_blank" rel="noreferrer">@BotFather</a>, <code>/newbot</code>, and copy
        the token it gives (<code>123456789:AAE…</code>; a secret, never shown again). Add the bot to the group, or as an administrator of the
        channel. For the chat id, send a message in the chat and open <code>https://api.telegram.org/bot&lt;token&gt;/getUpdates</code>:
        it is <code>message.chat.id</code> (negative for groups), or use <code>@channelusername</code> for a public channel.
      </>
    ),
    fields: [
      { key: "botToken", label: "Bot token", kind: "secret", required: true, placeholder: "123456789:AAE…" },
      { key: "chatId", label: "Chat id", kind: "chat", required: true, placeholder: "-1001234567890 or @mychannel" },
      { key: "baseUrl", label: "Bot API server (optional)", kind: "url", required: false, placeholder: "https://api.telegram.org", help: "only for a local Bot API server" }
    ]
  }
}

const TYPES = Object.keys(FORMS) as Array<FormType>

const labelOf = (type: string) => (type in FORMS ? FORMS[type as FormType].label : type === "discord" ? "Discord" : type)

/** One field's text as the API takes it. */
const valueOf = (field: Field, raw: string): unknown =>
  field.kind === "list"
    ? raw.split(/[,\s]+/).filter((s) => s !== "")
    : field.kind === "chat" && /^-?\d{1,15}$/.test(raw)
    ? Number(raw)
    : raw

/** The form's values as the type's `config`; empty optional fields left out. */
const configOf = (form: TypeForm, values: Record<string, string>) => {
  const config: Record<string, unknown> = {}
  for (const field of form.fields) {
    const raw = (values[field.key] ?? "").trim()
    if (raw === "") continue
    config[field.key] = valueOf(field, raw)
  }
  return config
}

const isSecret = (field: Field) => field.kind === "secret" || field.masked === true

/** A stored config value as the edit form's text. */
const textOf = (value: unknown) => (Array.isArray(value) ? value.join(", ") : value === undefined || value === null ? "" : String(value))

type EventKind = ChannelRules["events"][number]

/** The events a channel may take (the API's `rules.events`), as the edit form offers them. */
const EVENTS: ReadonlyArray<{ readonly value: EventKind; readonly label: string }> = [
  { value: "incident.opened", label: "opened" },
  { value: "incident.acknowledged", label: "acknowledged" },
  { value: "incident.resolved", label: "resolved" },
  { value: "maintenance.upcoming", label: "maintenance upcoming" },
  { value: "maintenance.started", label: "maintenance started" },
  { value: "maintenance.ended", label: "maintenance ended" }
]
const INCIDENT_TYPES: ReadonlyArray<ChannelRules["types"][number]> = ["MISSED", "FAIL", "LATE", "ANOMALY"]
const SEVERITIES: ReadonlyArray<ChannelRules["severity"][number]> = ["HIGH", "MEDIUM", "LOW"]

/** A set of checkboxes over `options`; none checked means every one (the API's empty list). */
function Checks<T extends string>(props: {
  legend: string
  options: ReadonlyArray<{ readonly value: T; readonly label: string }>
  value: ReadonlyArray<T>
  onChange: (value: Array<T>) => void
}) {
  return (
    <fieldset class="wide">
      <legend>{props.legend} <span class="muted">(none checked: all)</span></legend>
      {props.options.map((o) => (
        <label class="check">
          <input
            type="checkbox"
            checked={props.value.includes(o.value)}
            onChange={(e) => props.onChange(e.currentTarget.checked ? [...props.value, o.value] : props.value.filter((v) => v !== o.value))}
          />{" "}
          {o.label}
        </label>
      ))}
    </fieldset>
  )
}

/**
 * Editing one channel: its name, its settings (secrets never shown: a blank secret field keeps the
 * stored one, text typed replaces it, an optional one can be removed), its routing rules and its
 * reminders. Saving PATCHes the channel, which makes an invalid channel active again.
 */
function ChannelEditor(props: { channel: AlertChannel; monitors: ReadonlyArray<Monitor>; onDone: (saved: boolean) => void; run: <T>(f: () => Promise<T>) => Promise<T | undefined> }) {
  const c = props.channel
  const form = FORMS[c.type as FormType]
  const [name, setName] = useState(c.name)
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(form.fields.filter((f) => !isSecret(f)).map((f) => [f.key, textOf(c.config[f.key])]))
  )
  const [removed, setRemoved] = useState<Record<string, boolean>>({})
  const [monitorIds, setMonitorIds] = useState<Array<string>>([...c.rules.monitorIds])
  const [tags, setTags] = useState(c.rules.tags.join(", "))
  const [types, setTypes] = useState([...c.rules.types])
  const [severity, setSeverity] = useState([...c.rules.severity])
  const [events, setEvents] = useState([...c.rules.events])
  const [remind, setRemind] = useState(c.reminders !== null)
  const [every, setEvery] = useState(String(c.reminders?.everyMinutes ?? 30))
  const [max, setMax] = useState(String(c.reminders?.max ?? 3))
  const known = new Set(props.monitors.map((m) => m.id))
  const save = async (e: Event) => {
    e.preventDefault()
    const config: Record<string, unknown> = {}
    for (const field of form.fields) {
      const raw = (values[field.key] ?? "").trim()
      if (isSecret(field)) {
        if (removed[field.key]) config[field.key] = null
        else if (raw !== "") config[field.key] = valueOf(field, raw)
      } else if (raw !== "") config[field.key] = valueOf(field, raw)
      else if (!field.required && c.config[field.key] !== undefined) config[field.key] = null
    }
    const body: ChannelUpdate = {
      name: name.trim(),
      config,
      rules: { monitorIds, tags: tags.split(",").map((t) => t.trim()).filter((t) => t !== ""), types, severity, events },
      reminders: remind ? { everyMinutes: Number(every), max: Number(max) } : null
    }
    const r = await props.run(() => api<AlertChannel>("PATCH", `/api/alerts/channels/${c.id}`, body))
    if (r) props.onDone(true)
  }
  return (
    <form class="grid" aria-label={`Edit ${c.name}`} data-edit-channel={c.id} onSubmit={save}>
      <h3 class="wide">Edit {form.label} channel “{c.name}”</h3>
      {c.status === "invalid" && <p class="wide error-text">This channel is invalid: saving makes it active again (fix it on the provider's side, or here, first).</p>}
      <label>Name<input name="edit-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
      {form.fields.map((f) => isSecret(f)
        ? (
          <label key={`edit.${f.key}`}>{f.label}
            <input
              name={`edit-${f.key}`}
              type="password"
              autocomplete="off"
              disabled={removed[f.key] === true}
              placeholder="saved; type to replace it"
              value={values[f.key] ?? ""}
              onInput={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })}
            />
            <span class="muted">A secret: never shown. Leave empty to keep it.</span>
            {!f.required && (
              <span class="check"><input type="checkbox" aria-label={`Remove ${f.label}`} checked={removed[f.key] === true} onChange={(e) => setRemoved({ ...removed, [f.key]: e.currentTarget.checked })} /> remove it</span>
            )}
          </label>
        )
        : (
          <label key={`edit.${f.key}`}>{f.label}
            <input
              name={`edit-${f.key}`}
              type={f.kind === "url" ? "url" : "text"}
              required={f.required}
              placeholder={f.placeholder}
              value={values[f.key] ?? ""}
              onInput={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })}
            />
            {f.help && <span class="muted">{f.help}</span>}
          </label>
        ))}
      <label class="wide">Monitors <span class="muted">(none selected: every monitor)</span>
        <select multiple name="rules-monitors" aria-label="Monitors" size={Math.min(6, Math.max(2, props.monitors.length + monitorIds.filter((id) => !known.has(id)).length))} onChange={(e) => setMonitorIds(Array.from(e.currentTarget.selectedOptions, (o) => o.value))}>
          {props.monitors.map((m) => <option value={m.id} selected={monitorIds.includes(m.id)}>{m.name}</option>)}
          {monitorIds.filter((id) => !known.has(id)).map((id) => <option value={id} selected>{id}</option>)}
        </select>
      </label>
      <label>Tags (comma separated) <input name="rules-tags" value={tags} placeholder="any tag" onInput={(e) => setTags(e.currentTarget.value)} /><span class="muted">the monitor carries one of them</span></label>
      <Checks legend="Incident types" options={INCIDENT_TYPES.map((t) => ({ value: t, label: t }))} value={types} onChange={setTypes} />
      <Checks legend="Severity" options={SEVERITIES.map((t) => ({ value: t, label: t }))} value={severity} onChange={setSeverity} />
      <Checks legend="Events" options={EVENTS} value={events} onChange={setEvents} />
      <fieldset class="wide">
        <legend>Reminders while an incident stays open</legend>
        <label class="check"><input type="checkbox" name="reminders-on" checked={remind} onChange={(e) => setRemind(e.currentTarget.checked)} /> Send reminders</label>
        <label>every (minutes)<input name="reminders-every" type="number" min={1} max={10080} disabled={!remind} value={every} onInput={(e) => setEvery(e.currentTarget.value)} /></label>
        <label>at most (reminders)<input name="reminders-max" type="number" min={1} max={100} disabled={!remind} value={max} onInput={(e) => setMax(e.currentTarget.value)} /></label>
      </fieldset>
      <div class="actions">
        <button type="submit">Save</button>
        <button type="button" class="secondary" onClick={() => props.onDone(false)}>Cancel</button>
      </div>
    </form>
  )
}

/** A delivery's outcome in words: delivered, failed, or waiting (with its attempts so far). */
const outcomeOf = (d: Delivery) =>
  d.status === "succeeded" ? "delivered" : d.status === "failed" ? "failed" : d.attempts === 0 ? "waiting" : `retrying (${d.attempts} attempts)`

/** The channel's delivery log (GET …/deliveries): newest first, what the provider answered. */
function DeliveryLog({ channel, revision }: { channel: AlertChannel; revision: number }) {
  const [rows, setRows] = useState<Delivery[] | null>(null)
  const [error, setError] = useState("")
  usePoll(async () => {
    try {
      setRows((await api<{ deliveries: Delivery[] }>("GET", `/api/alerts/channels/${channel.id}/deliveries?limit=50`)).deliveries)
    } catch (e) {
      setError(errorText(e))
    }
  }, 10_000, [revision])
  return (
    <div class="scroll" data-delivery-log={channel.id}>
      <h3>Deliveries of “{channel.name}”</h3>
      {rows && (rows.length === 0 ? <p class="muted">Nothing sent to this channel yet.</p> : (
        <table aria-label={`Deliveries of ${channel.name}`}>
          <thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Outcome</th><th scope="col">Provider's answer</th></tr></thead>
          <tbody>
            {rows.map((d) => (
              <tr data-delivery-id={d.id}>
                <td data-label="When"><time dateTime={d.createdAt} title={d.createdAt}>{new Date(d.createdAt).toLocaleString()}</time></td>
                <td data-label="Event"><code>{d.event}</code></td>
                <td data-label="Outcome"><span class={`badge ${d.status === "succeeded" ? "ok" : d.status === "failed" ? "bad" : ""}`}>{outcomeOf(d)}</span></td>
                <td data-label="Provider's answer">
                  {d.lastError ?? (d.lastStatusCode === null ? "—" : `answered ${d.lastStatusCode}`)}
                  {d.nextAttemptAt && d.status === "pending" && <div class="muted">next attempt {new Date(d.nextAttemptAt).toLocaleString()}</div>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}
      <ErrorLine error={error} />
    </div>
  )
}

/** A stored channel's config in one line (secrets are masked or left out by the API). */
const configText = (config: AlertChannel["config"]) =>
  Object.entries(config)
    .filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : String(v)}`)
    .join(" · ")

/** A channel's rules and reminders in one line. */
const rulesText = (c: AlertChannel) => {
  const r = c.rules
  const parts = [
    r.monitorIds.length > 0 ? `${r.monitorIds.length} monitor${r.monitorIds.length === 1 ? "" : "s"}` : "",
    r.tags.length > 0 ? `tags ${r.tags.join(", ")}` : "",
    r.types.length > 0 ? r.types.join("/") : "",
    r.severity.length > 0 ? r.severity.join("/") : "",
    r.events.length > 0 ? `events: ${r.events.join(", ")}` : ""
  ].filter((p) => p !== "")
  const reminders = c.reminders === null ? "" : ` · reminds every ${c.reminders.everyMinutes} min, at most ${c.reminders.max}×`
  return `${parts.length === 0 ? "every incident" : parts.join(" · ")}${reminders}`
}

export function AlertChannels() {
  const [channels, setChannels] = useState<AlertChannel[] | null>(null)
  const [type, setType] = useState<FormType>("slack")
  const [name, setName] = useState("")
  const [values, setValues] = useState<Record<string, string>>({})
  const [error, setError] = useState("")
  const [tests, setTests] = useState<Record<string, { sent: boolean; answer: string } | "sending">>({})
  const [editing, setEditing] = useState<string | null>(null)
  const [logOf, setLogOf] = useState<string | null>(null)
  const [monitors, setMonitors] = useState<Monitor[]>([])
  const [revision, setRevision] = useState(0)
  const load = async () => {
    setChannels((await api<{ channels: AlertChannel[] }>("GET", "/api/alerts/channels")).channels)
    setRevision((n) => n + 1)
  }
  const edit = async (id: string) => {
    setEditing(id)
    try {
      setMonitors((await api<{ monitors: Monitor[] }>("GET", "/api/monitors?limit=100")).monitors)
    } catch (e) {
      setError(errorText(e))
    }
  }
  usePoll(async () => {
    try {
      await load()
    } catch (e) {
      setError(errorText(e))
    }
  }, 30_000)
  const run = async <T,>(f: () => Promise<T>): Promise<T | undefined> => {
    setError("")
    try {
      const r = await f()
      await load()
      return r
    } catch (e) {
      setError(errorText(e))
      return undefined
    }
  }
  const form = FORMS[type]
  const test = async (c: AlertChannel) => {
    setTests((t) => ({ ...t, [c.id]: "sending" }))
    const r = await run(() => api<ChannelTest>("POST", `/api/alerts/channels/${c.id}/test`))
    setTests((t) => {
      const next = { ...t }
      if (r) next[c.id] = { sent: r.sent, answer: r.answer }
      else delete next[c.id]
      return next
    })
  }
  return (
    <section aria-labelledby="channels-h" class="card" data-section="alert-channels">
      <h2 id="channels-h">Alert channels</h2>
      <p class="muted">Where incident alerts go: each channel gets the incidents its rules take (all of them by default), opened, acknowledged and resolved.</p>
      {channels && (channels.length === 0 ? <p class="muted">No alert channels yet.</p> : (
        <div class="scroll">
          <table>
            <thead><tr><th scope="col">Type</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Settings</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {channels.map((c) => {
                const t = tests[c.id]
                return (
                  <tr data-channel-id={c.id} class={c.status === "invalid" ? "invalid-row" : undefined}>
                    <td data-label="Type">{labelOf(c.type)}</td>
                    <td data-label="Name">{c.name}</td>
                    <td data-label="Status">
                      <span class={`badge ${c.status === "invalid" ? "bad" : "ok"}`} data-status>{c.status}</span>
                      {c.statusReason && <div class="error-text" data-status-reason>{c.statusReason}</div>}
                      {c.status === "invalid" && <div class="muted">Nothing is sent to it until it is edited.</div>}
                    </td>
                    <td data-label="Settings">
                      <code class="url">{configText(c.config)}</code>
                      <div class="muted" data-rules>{rulesText(c)}</div>
                    </td>
                    <td>
                      {c.type === "discord"
                        ? <span class="muted">edit under Chat webhooks</span>
                        : <button type="button" class="secondary" aria-label={`Edit ${c.name}`} onClick={() => void edit(c.id)}>Edit</button>}
                      <button type="button" class="secondary" aria-label={`Deliveries of ${c.name}`} aria-expanded={logOf === c.id} onClick={() => setLogOf(logOf === c.id ? null : c.id)}>Deliveries</button>
                      <button type="button" class="secondary" aria-label={`Test ${c.name}`} disabled={t === "sending"} onClick={() => void test(c)}>Test</button>
                      <button type="button" class="danger" aria-label={`Delete ${c.name}`} onClick={() => { if (confirm(`Delete the ${labelOf(c.type)} channel "${c.name}"? Alerts not sent yet are dropped.`)) void run(() => api("DELETE", `/api/alerts/channels/${c.id}`)) }}>Delete</button>
                      {t !== undefined && (
                        <p role="status" data-test-answer class={t !== "sending" && !t.sent ? "error-text" : "muted"}>
                          {t === "sending" ? "Sending a test message…" : `${t.sent ? "Sent" : "Not sent"}: ${t.answer}`}
                        </p>
                      )}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      ))}
      {channels?.filter((c) => c.id === editing && c.type !== "discord").map((c) => (
        <ChannelEditor key={c.id} channel={c} monitors={monitors} run={run} onDone={() => setEditing(null)} />
      ))}
      {channels?.filter((c) => c.id === logOf).map((c) => <DeliveryLog key={c.id} channel={c} revision={revision} />)}
      <form class="grid" aria-label="Add an alert channel" onSubmit={async (e) => {
        e.preventDefault()
        const r = await run(() => api<AlertChannel>("POST", "/api/alerts/channels", { type, ...(name.trim() ? { name: name.trim() } : {}), config: configOf(form, values) }))
        if (r) { setName(""); setValues({}) }
      }}>
        <label>Type
          <select name="channel-type" aria-label="Channel type" value={type} onChange={(e) => { setType(e.currentTarget.value as FormType); setValues({}) }}>
            {TYPES.map((t) => <option value={t}>{FORMS[t].label}</option>)}
          </select>
        </label>
        <label>Name (optional)<input name="channel-name" maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
        <p class="wide muted" data-where>{form.where}</p>
        {form.fields.map((f) => (
          <label key={`${type}.${f.key}`}>{f.label}
            <input
              name={`config-${f.key}`}
              type={f.kind === "secret" ? "password" : f.kind === "url" ? "url" : "text"}
              autocomplete={f.kind === "secret" ? "off" : undefined}
              required={f.required}
              placeholder={f.placeholder}
              value={values[f.key] ?? ""}
              onInput={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })}
            />
            {f.help && <span class="muted">{f.help}</span>}
          </label>
        ))}
        <div class="actions"><button type="submit">Add {form.label} channel</button></div>
      </form>
      <ErrorLine error={error} />
    </section>
  )
}
