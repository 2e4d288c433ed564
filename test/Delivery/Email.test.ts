import { describe, expect, it, layer } from "@effect/vitest"
import { Clock, Effect, Option, Redacted, TestClock } from "effect"
import { type ParsedMail, simpleParser } from "mailparser"
import type { AddressInfo } from "node:net"
import { SMTPServer, type SMTPServerSession } from "smtp-server"
import { emailOf, emailVerdict } from "../../src/Delivery/EmailChannel.js"
import { testAlertOf } from "../../src/Delivery/Alert.js"
import type { SendResult } from "../../src/Delivery/Sender.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"

// Email alerts through a real SMTP server started here (smtp-server), each message parsed back
// (mailparser): the relay is the operator's SMTP_URL, STARTTLS when offered, from SMTP_FROM.

const PUBLIC_URL = "https://jobmon.example"
const flush = Effect.flatMap(Webhooks, (w) => w.flush)

interface Got {
  readonly session: SMTPServerSession
  readonly mail: ParsedMail
}

/** What the server does next at DATA: accept, or answer with this code. */
let dataAnswer: number | undefined
const got: Array<Got> = []

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code })

const makeServer = () =>
  new SMTPServer({
    // STARTTLS offered with smtp-server's own self-signed certificate; AUTH only once the connection is secure
    logger: false,
    onAuth: (auth, _session, callback) =>
      auth.username === "jobmon" && auth.password === "s3cret pass"
        ? callback(null, { user: auth.username })
        : callback(smtpError(535, "5.7.8 Authentication failed")),
    onRcptTo: (address, _session, callback) =>
      address.address.startsWith("nobody@") ? callback(smtpError(550, "5.1.1 No such user here")) : callback(),
    onData: (stream, session, callback) => {
      simpleParser(stream).then((mail) => {
        if (dataAnswer !== undefined) return callback(smtpError(dataAnswer, "4.7.1 Greylisted, try again later"))
        got.push({ session: { ...session, envelope: { ...session.envelope } }, mail })
        callback()
      }, callback)
    }
  })

let server = makeServer()
const port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.server.address() as AddressInfo).port)))
const SMTP_URL = `smtp://jobmon:${encodeURIComponent("s3cret pass")}@127.0.0.1:${port}?tls.rejectUnauthorized=false`

const smtp = (status: number, text: string): SendResult => ({ outcome: { _tag: "Answered", status }, responseTimeMs: 3, responseText: text, protocol: "smtp" })

describe("email, pure", () => {
  it("the SMTP server's answer: 2xx delivered, 4xx and no answer retried, 5xx the message fails", () => {
    expect(emailVerdict(smtp(250, "2.0.0 Ok: queued"))._tag).toBe("Delivered")
    expect(emailVerdict(smtp(451, "4.7.1 Greylisted"))).toMatchObject({ _tag: "RetryLater", detail: "SMTP 451: 4.7.1 Greylisted" })
    expect(emailVerdict(smtp(421, "4.3.2 Shutting down"))._tag).toBe("RetryLater")
    expect(emailVerdict(smtp(550, "5.1.1 No such user"))).toEqual({ _tag: "Rejected", detail: "SMTP 550: 5.1.1 No such user" })
    expect(emailVerdict(smtp(535, "5.7.8 Authentication failed"))._tag).toBe("Rejected")
    expect(emailVerdict({ outcome: { _tag: "NoAnswer", error: "ECONNECTION: connect ECONNREFUSED" }, responseTimeMs: 1, protocol: "smtp" })._tag).toBe("RetryLater")
    expect(emailVerdict({ outcome: { _tag: "Refused", error: "refused: email is not set up" }, responseTimeMs: 0, protocol: "smtp" })._tag).toBe("Rejected")
  })
  it("a subject is one line; the HTML escapes what it shows", () => {
    const mail = emailOf({ ...testAlertOf("evil\r\nBcc: x@example.com <b>", 0), text: "<script>alert(1)</script>" })
    expect(mail.subject).toBe("[jobmon] Test message: evil Bcc: x@example.com <b>")
    expect(mail.html).not.toContain("<script>")
    expect(mail.html).toContain("&lt;script&gt;")
  })
})

const emailChannel = (to: ReadonlyArray<string>, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/channels", { body: { type: "email", config: { to }, ...extra } })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string; [key: string]: any }
  })

const deliveriesOf = (channelId: string) => Effect.map(call("GET", `/api/alerts/channels/${channelId}/deliveries`), (r) => r.body.deliveries as Array<any>)

layer(
  TestServer({
    allowPrivateTargets: true,
    publicUrl: PUBLIC_URL,
    smtpUrl: Option.some(Redacted.make(SMTP_URL)),
    smtpFrom: "jobmon alerts <alerts@jobmon.example>"
  }),
  { timeout: 120_000 }
)("email channels", (it) => {
  it.effect("config: 1 to 10 addresses, shown whole; a bad one is a 400 naming it", () =>
    Effect.gen(function*() {
      const made = yield* emailChannel(["oncall@example.com", "lead@example.com"])
      expect(made).toMatchObject({ type: "email", name: "oncall@example.com", config: { to: ["oncall@example.com", "lead@example.com"] } })
      for (const [to, path] of [[[], "config.to"], [["ok@example.com", "not an address"], "config.to.1"], [Array.from({ length: 11 }, (_, i) => `a${i}@example.com`), "config.to"], [["a\u0000@example.com"], "config.to.0"]] as const) {
        const r = yield* call("POST", "/api/alerts/channels", { body: { type: "email", config: { to } } })
        expect([r.status, r.body.path], JSON.stringify(to)).toEqual([400, path])
      }
      const patched = yield* call("PATCH", `/api/alerts/channels/${made.id}`, { body: { config: { to: ["x@example.com"] } } })
      expect(patched.body.config).toEqual({ to: ["x@example.com"] })
      expect((yield* call("DELETE", `/api/alerts/channels/${made.id}`)).status).toBe(204)
    }))

  it.effect("an incident's mail: subject for an inbox, a text and an HTML part, over STARTTLS, authenticated, from SMTP_FROM", () =>
    Effect.gen(function*() {
      got.length = 0
      const monitor = yield* createMonitor({ name: "nightly backup" })
      const channel = yield* emailChannel(["oncall@example.com", "lead@example.com"], { rules: { monitorIds: [monitor.id] } })
      const { incident } = yield* raise(monitor.id, {
        at: yield* Clock.currentTimeMillis,
        details: { exitCode: 2, durationMs: 5230, output: "x".repeat(6000) + "\n<dump> & disk full", expectedDurationMs: 4100 }
      })
      yield* flush
      expect(got).toHaveLength(1)
      const [{ mail, session }] = got
      expect(session.secure).toBe(true)
      expect(session.user).toBe("jobmon")
      expect(session.envelope.rcptTo.map((r) => r.address)).toEqual(["oncall@example.com", "lead@example.com"])
      expect(mail.from?.value).toEqual([{ address: "alerts@jobmon.example", name: "jobmon alerts" }])
      expect(mail.subject).toBe("[jobmon] FAIL: nightly backup")
      const text = mail.text ?? ""
      for (const line of ["FAIL: nightly backup", "Monitor: nightly backup", "Status: OPEN", "Severity: HIGH", "Exit code: 2", "Duration: 5.2 s", "Expected: 4.1 s"]) {
        expect(text).toContain(line)
      }
      expect(text).toContain("<dump> & disk full")
      expect(text).toContain(`View incident: ${PUBLIC_URL}/incidents/${incident.id}`)
      const html = typeof mail.html === "string" ? mail.html : ""
      expect(html).toContain("&lt;dump&gt; &amp; disk full")
      expect(html).not.toContain("<dump>")
      expect(html).toContain(`<a href="${PUBLIC_URL}/incidents/${incident.id}">View incident</a>`)
      const [delivery] = yield* deliveriesOf(channel.id)
      expect(delivery).toMatchObject({ event: "incident.opened", status: "succeeded", lastStatusCode: 250 })
      expect(delivery.requestHeaders).toEqual({ To: "oncall@example.com, lead@example.com", Subject: "[jobmon] FAIL: nightly backup" })

      yield* TestClock.adjust("65 minutes")
      expect((yield* call("POST", `/api/incidents/${incident.id}/resolve`, { body: { note: "restarted the dump" } })).status).toBe(200)
      yield* flush
      expect(got.map((g) => g.mail.subject)).toEqual(["[jobmon] FAIL: nightly backup", "[jobmon] RESOLVED: nightly backup (FAIL, lasted 1h 5m)"])
      expect(got[1]!.mail.text).toContain("Note: restarted the dump")
      expect((yield* call("DELETE", `/api/alerts/channels/${channel.id}`)).status).toBe(204)
    }))

  it.effect("4xx (greylisted) and a server that does not answer are retried 30 s later; 5xx fails the message, the channel stays", () =>
    Effect.gen(function*() {
      got.length = 0
      const monitor = yield* createMonitor({ name: "greylisted" })
      const channel = yield* emailChannel(["oncall@example.com"], { rules: { monitorIds: [monitor.id] } })
      dataAnswer = 451
      yield* raise(monitor.id)
      yield* flush
      dataAnswer = undefined
      const [first] = yield* deliveriesOf(channel.id)
      expect(first).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 451, lastError: expect.stringMatching(/^SMTP 451: .*Greylisted/) })
      yield* TestClock.adjust("29 seconds")
      yield* flush
      expect(got).toHaveLength(0)
      yield* TestClock.adjust("1 second")
      yield* flush
      expect(got).toHaveLength(1)
      expect((yield* deliveriesOf(channel.id))[0]).toMatchObject({ status: "succeeded", attempts: 2 })

      // the relay is down: no answer, retried
      yield* Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      yield* raise(monitor.id, { type: "LATE", severity: "MEDIUM", details: {} })
      yield* flush
      const [down] = yield* deliveriesOf(channel.id)
      expect(down).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: null, lastError: expect.stringContaining("ECONNREFUSED") })
      server = makeServer()
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", () => resolve())))
      yield* TestClock.adjust("30 seconds")
      yield* flush
      expect(got.map((g) => g.mail.subject)).toEqual(["[jobmon] FAIL: greylisted", "[jobmon] LATE: greylisted"])

      // a recipient the server refuses: that message fails for good
      const refused = yield* emailChannel(["nobody@example.com"], { rules: { monitorIds: [monitor.id] } })
      yield* raise(monitor.id, { type: "ANOMALY", severity: "LOW", details: {} })
      yield* flush
      const [failed] = yield* deliveriesOf(refused.id)
      expect(failed).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: 550, lastError: expect.stringMatching(/^SMTP 550: .*No such user/) })
      expect((yield* call("GET", `/api/alerts/channels/${refused.id}`)).body.status).toBe("active")
      for (const id of [channel.id, refused.id]) expect((yield* call("DELETE", `/api/alerts/channels/${id}`)).status).toBe(204)
    }))

  it.effect("the test endpoint sends a test mail and says what the server answered", () =>
    Effect.gen(function*() {
      got.length = 0
      const channel = yield* emailChannel(["oncall@example.com"], { name: "on-call mailbox" })
      const r = yield* call("POST", `/api/alerts/channels/${channel.id}/test`)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ sent: true, answer: expect.stringMatching(/^SMTP 250/), delivery: { event: "channel.test", status: "succeeded" } })
      expect(got.map((g) => g.mail.subject)).toEqual(["[jobmon] Test message: on-call mailbox"])
      expect(got[0]!.mail.text).toContain("jobmon alerts will arrive here")
    }))
})
