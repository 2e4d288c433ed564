import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import { api, errorText } from "../api"
import { ErrorLine } from "../components"
import type { AlertChannel, AlertChannelType, ChannelTest } from "../types"
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
      { key: "url", label: "Webhook URL", kind: "url", required: true, placeholder: "https://hooks.slack.com/services/…" },
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
      { key: "url", label: "Workflow URL", kind: "url", required: true, placeholder: "https://prod-00.westus.logic.azure.com/workflows/…" }
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

/** The form's values as the type's `config`; empty optional fields left out. */
const configOf = (form: TypeForm, values: Record<string, string>) => {
  const config: Record<string, unknown> = {}
  for (const field of form.fields) {
    const raw = (values[field.key] ?? "").trim()
    if (raw === "") continue
    config[field.key] = field.kind === "list"
      ? raw.split(/[,\s]+/).filter((s) => s !== "")
      : field.kind === "chat" && /^-?\d{1,15}$/.test(raw)
      ? Number(raw)
      : raw
  }
  return config
}

/** A stored channel's config in one line (secrets are masked or left out by the API). */
const configText = (config: AlertChannel["config"]) =>
  Object.entries(config)
    .filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : String(v)}`)
    .join(" · ")

export function AlertChannels() {
  const [channels, setChannels] = useState<AlertChannel[] | null>(null)
  const [type, setType] = useState<FormType>("slack")
  const [name, setName] = useState("")
  const [values, setValues] = useState<Record<string, string>>({})
  const [error, setError] = useState("")
  const [tests, setTests] = useState<Record<string, { sent: boolean; answer: string } | "sending">>({})
  const load = async () => setChannels((await api<{ channels: AlertChannel[] }>("GET", "/api/alerts/channels")).channels)
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
                  <tr data-channel-id={c.id}>
                    <td data-label="Type">{labelOf(c.type)}</td>
                    <td data-label="Name">{c.name}</td>
                    <td data-label="Status">
                      <span class={`badge ${c.status === "invalid" ? "bad" : "ok"}`}>{c.status}</span>
                      {c.statusReason && <div class="error-text" data-status-reason>{c.statusReason}</div>}
                    </td>
                    <td data-label="Settings"><code class="url">{configText(c.config)}</code></td>
                    <td>
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
