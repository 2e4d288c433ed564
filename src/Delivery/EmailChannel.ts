import { Schema } from "effect"
import { StoredString } from "../Domain/Text.js"
import { type Alert, alertOf, linksOf, clip, tail, testAlertOf } from "./Alert.js"
import { type Channel, DELIVERED, describeAnswer, type MailRequest, oneByOne, rejected, retryLater, type SendResult } from "./Channel.js"
import type { AlertChannelType } from "./ChannelType.js"

/**
 * Email (docs/alerts.md#email): one mail per alert, sent over SMTP by the service's relay
 * (Mailer.ts: SMTP_URL, from SMTP_FROM), with a subject that reads in an inbox list
 * (`[jobmon] FAIL: nightly backup`), a text part and an HTML part saying the same. The SMTP
 * server's answer: 2xx delivered; 4xx (a full mailbox, greylisting, a busy server) and no answer
 * retry, 30 s, 1, 2, 4 and 8 minutes apart; 5xx (no such mailbox, refused, authentication failed)
 * fails the message. No SMTP answer makes the channel invalid: a refused recipient is said on its
 * message, and the relay is the operator's.
 */

/** At most this many recipients per channel (one mail to all of them). */
export const MAX_RECIPIENTS = 10

/** A mailbox as people write it: local@domain, ASCII, no display name (RFC 5321 lengths). */
const ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/

const Address = StoredString.pipe(
  Schema.filter((value) => ADDRESS.test(value) || `must be an email address such as oncall@example.com, not '${clip(value, 100)}'`)
)

export const EmailConfig = Schema.Struct({
  to: Schema.Array(Address).pipe(Schema.minItems(1), Schema.maxItems(MAX_RECIPIENTS)).annotations({
    description: `1 to ${MAX_RECIPIENTS} addresses; one mail goes to all of them`
  })
})
export type EmailConfig = typeof EmailConfig.Type

export interface EmailDestination {
  readonly id: string
  readonly name: string
  readonly to: ReadonlyArray<string>
}

/** What is stored for one alert: the parts of the mail (the recipients are read when it is sent). */
export interface EmailBody {
  readonly subject: string
  readonly text: string
  readonly html: string
}

/** The end of the output a mail shows. */
const OUTPUT_CHARS = 4000
const SUBJECT_CHARS = 200

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

/** A subject is one line. */
const oneLine = (text: string) => text.replace(/[\r\n\t]+/g, " ")

const COLORS: Record<Alert["kind"], string> = {
  opened: "#d93025",
  reminder: "#e37400",
  acknowledged: "#1a73e8",
  resolved: "#188038",
  maintenance: "#6d28d9",
  test: "#5f6368"
}

/** The mail for one alert (pure). */
export const emailOf = (alert: Alert): EmailBody => {
  const subject = clip(oneLine(`[jobmon] ${alert.summary}`), SUBJECT_CHARS)
  const output = alert.output === undefined ? undefined : tail(alert.output, OUTPUT_CHARS)
  const links = linksOf(alert).filter(
    (link): link is [string, string] => link[1] !== undefined
  )
  const text = [
    alert.title,
    "",
    ...(alert.text === undefined ? [] : [alert.text, ""]),
    ...alert.facts.map((f) => `${f.label}: ${f.value}`),
    ...(output === undefined ? [] : ["", "Output (the end):", output]),
    ...(alert.note === null || alert.note === "" ? [] : ["", `Note: ${alert.note}`]),
    ...(links.length === 0 ? [] : ["", ...links.map(([label, url]) => `${label}: ${url}`)]),
    "",
    `-- jobmon, ${alert.at}`
  ].join("\n")
  const html = [
    "<!doctype html>",
    `<html><body style="font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; color: #202124;">`,
    `<h2 style="margin: 0 0 12px; color: ${COLORS[alert.kind]};">${escapeHtml(alert.title)}</h2>`,
    ...(alert.text === undefined ? [] : [`<p>${escapeHtml(alert.text)}</p>`]),
    ...(alert.facts.length === 0 ? [] : [
      `<table style="border-collapse: collapse;">`,
      ...alert.facts.map((f) =>
        `<tr><th style="text-align: left; padding: 2px 16px 2px 0; color: #5f6368;">${escapeHtml(f.label)}</th>` +
        `<td style="padding: 2px 0;">${escapeHtml(f.value)}</td></tr>`
      ),
      "</table>"
    ]),
    ...(output === undefined ? [] : [
      `<p style="margin: 16px 0 4px; color: #5f6368;">Output (the end)</p>`,
      `<pre style="background: #f1f3f4; padding: 8px; white-space: pre-wrap; word-break: break-all;">${escapeHtml(output)}</pre>`
    ]),
    ...(alert.note === null || alert.note === "" ? [] : [`<p><strong>Note:</strong> ${escapeHtml(alert.note)}</p>`]),
    ...(links.length === 0 ? [] : [
      `<p>${links.map(([label, url]) => `<a href="${escapeHtml(url)}">${escapeHtml(label)}</a>`).join(" &middot; ")}</p>`
    ]),
    `<p style="color: #5f6368; font-size: 12px;">jobmon, ${escapeHtml(alert.at)}</p>`,
    "</body></html>"
  ].join("\n")
  return { subject, text, html }
}

/** What the SMTP server's answer means. */
export const emailVerdict = (result: SendResult) => {
  const { outcome } = result
  const detail = describeAnswer(result)
  if (outcome._tag === "Refused") return rejected(detail)
  if (outcome._tag === "NoAnswer") return retryLater(undefined, detail)
  if (outcome.status >= 200 && outcome.status < 300) return DELIVERED
  if (outcome.status >= 400 && outcome.status < 500) return retryLater(undefined, detail)
  return rejected(detail)
}

/** Retries after 30 s, 1, 2, 4, 8 min (greylisting asks for minutes): 6 attempts in all. */
export const EMAIL_MAX_ATTEMPTS = 6
export const emailDelayAfterAttempt = (attempt: number): number | undefined =>
  attempt >= EMAIL_MAX_ATTEMPTS ? undefined : 30_000 * 2 ** (attempt - 1)
export const EMAIL_PER_MINUTE = 30

export const emailChannel = (publicUrl: string): Channel<EmailDestination, MailRequest> => ({
  kind: "email",
  perMinute: EMAIL_PER_MINUTE,
  spacingMs: 0,
  retry: { maxAttempts: EMAIL_MAX_ATTEMPTS, delayAfterAttempt: emailDelayAfterAttempt },
  incidentEvents: ["incident.opened", "incident.acknowledged", "incident.resolved"],
  messageFor: (_, event) => {
    const alert = alertOf(event, publicUrl)
    return alert === undefined ? undefined : JSON.stringify(emailOf(alert))
  },
  testMessageFor: (email, test) => JSON.stringify(emailOf(testAlertOf(email.name, test.at))),
  pack: oneByOne,
  requestFor: (email, [message]) => {
    const body = JSON.parse(message!.body) as EmailBody
    return {
      transport: "mail",
      to: email.to,
      subject: body.subject,
      text: body.text,
      html: body.html,
      headers: { To: email.to.join(", "), Subject: body.subject }
    }
  },
  verdictOn: emailVerdict
})

export const emailType: AlertChannelType<EmailConfig, EmailDestination> = {
  type: "email",
  config: EmailConfig,
  secrets: {},
  urlFields: [],
  defaultName: (config) => config.to[0] ?? "email",
  unavailable: (settings) =>
    settings.emailConfigured ? undefined : "email channels need the operator to set SMTP_URL (docs/alerts.md#email); it is not set on this server.",
  channel: (settings) => emailChannel(settings.publicUrl),
  destinationOf: ({ config, id, name }) => ({ id, name, to: config.to })
}
