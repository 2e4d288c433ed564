import { Effect, Option, Redacted } from "effect"
import nodemailer from "nodemailer"
import { AppConfig } from "../Config.js"
import type { MailRequest } from "./Channel.js"
import { echo } from "./Input.js"
import type { SendResult } from "./Sender.js"

/**
 * The one SMTP client of deliveries (docs/alerts.md#email), the mail counterpart of Sender.ts:
 * sends a channel's MailRequest through the operator's relay (`SMTP_URL`, e.g.
 * `smtp://user:pass@host:587`, upgraded with STARTTLS when the server offers it; `smtps://` for TLS
 * from the start) from `SMTP_FROM`, and answers a SendResult as Sender does: the server's reply
 * code as the status (250, 450, 550…) with its text, or NoAnswer when no server answered. The
 * relay is the operator's, so no SSRF guard applies to it.
 */

/** Connecting, the greeting, and silence on the connection: each at most this long. */
const CONNECT_TIMEOUT_MS = 10_000
const SOCKET_TIMEOUT_MS = 20_000

export const SMTP_NOT_SET = "refused: email is not set up on this server (the operator sets SMTP_URL)"

interface SmtpError extends Error {
  readonly code?: string
  readonly responseCode?: number
  readonly response?: string
}

/** A sending failure as a SendResult: the server's reply when there was one, else no answer. */
const failureOf = (error: SmtpError, responseTimeMs: number): SendResult =>
  typeof error.responseCode === "number"
    ? { outcome: { _tag: "Answered", status: error.responseCode }, responseTimeMs, responseText: error.response ?? error.message, protocol: "smtp" }
    : {
      outcome: { _tag: "NoAnswer", error: echo(`${error.code === undefined ? "" : `${error.code}: `}${error.message}`, 160) },
      responseTimeMs,
      protocol: "smtp"
    }

export class Mailer extends Effect.Service<Mailer>()("jobmon/Mailer", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const transport = Option.map(config.smtpUrl, (url) =>
      nodemailer.createTransport({
        url: Redacted.value(url),
        connectionTimeout: CONNECT_TIMEOUT_MS,
        greetingTimeout: CONNECT_TIMEOUT_MS,
        socketTimeout: SOCKET_TIMEOUT_MS
      }, { from: config.smtpFrom }))

    /** Whether email can be sent at all (SMTP_URL is set). */
    const configured = Option.isSome(transport)

    /** Sends one mail; never fails: the answer says what happened. */
    const send = (mail: MailRequest): Promise<SendResult> => {
      if (Option.isNone(transport)) {
        return Promise.resolve({ outcome: { _tag: "Refused", error: SMTP_NOT_SET }, responseTimeMs: 0, protocol: "smtp" })
      }
      const started = performance.now()
      const elapsed = () => Math.round(performance.now() - started)
      return transport.value
        .sendMail({ to: [...mail.to], subject: mail.subject, text: mail.text, html: mail.html })
        .then(
          (info): SendResult => ({
            outcome: { _tag: "Answered", status: Number(/^\d{3}/.exec(String(info.response))?.[0] ?? 250) },
            responseTimeMs: elapsed(),
            responseText: String(info.response ?? ""),
            protocol: "smtp"
          }),
          (error: SmtpError) => failureOf(error, elapsed())
        )
    }

    return { configured, send } as const
  })
}) {}
