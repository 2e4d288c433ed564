import { lookup as dnsLookup, type LookupAddress } from "node:dns"
import * as http from "node:http"
import * as https from "node:https"
import { isIP } from "node:net"
import { echo } from "./Input.js"
import type { Outcome } from "./RetrySchedule.js"
import { isBlockedAddress } from "./Ssrf.js"

/**
 * The one outbound HTTP client of deliveries: a POST of exact bytes, no redirects followed, a
 * 5-second limit on the whole exchange, and (unless private targets are allowed) the SSRF guard
 * applied after DNS to every address a name resolves to, and again to the socket's remote address
 * once it is connected, so a name that changed its answer since the webhook was saved (DNS
 * rebinding) is still refused. Refusals never say what a name resolved to.
 */
export const SEND_TIMEOUT_MS = 5_000

export interface SendResult {
  readonly outcome: Outcome
  /** Real elapsed milliseconds. */
  readonly responseTimeMs: number
  /** The answer's Retry-After, in seconds, when it had one (chat services on 429). */
  readonly retryAfterSeconds?: number | undefined
  /** The start of the answer's body (at most ANSWER_TEXT_BYTES), or the SMTP server's reply. */
  readonly responseText?: string | undefined
  /** How it was sent: HTTP (this module, the default) or SMTP (Mailer.ts). */
  readonly protocol?: "http" | "smtp" | undefined
}

/** The most of an answer's body kept (a provider's error code: Slack's `no_service`, …). */
export const ANSWER_TEXT_BYTES = 1024

class RefusedTarget extends Error {}

const REFUSED_ADDRESS = "refused: the target is not a public address (ALLOW_PRIVATE_TARGETS is off)"
const refusedName = (hostname: string) =>
  `refused: ${echo(hostname)} resolves to a non-public address (ALLOW_PRIVATE_TARGETS is off)`

/**
 * Keep-alive connections, reused across deliveries to one host (a new TCP, and TLS, handshake per
 * delivery would cap the rate). Idle sockets close after 4 s, before the usual 5 s of servers, so a
 * reused socket is rarely one the server is closing. One pool per SSRF setting: a socket opened
 * while private targets were allowed is never reused when they are not.
 */
const agentOptions = { keepAlive: true, maxSockets: 32, maxFreeSockets: 32, timeout: 4_000, scheduling: "lifo" as const }
const agents = {
  open: { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) },
  guarded: { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) }
}

export const send = (
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { readonly allowPrivateTargets: boolean; readonly timeoutMs?: number }
): Promise<SendResult> =>
  new Promise((resolve) => {
    const started = performance.now()
    let done = false
    let retryAfterSeconds: number | undefined
    const kept: Array<Buffer> = []
    let keptBytes = 0
    let timer: ReturnType<typeof setTimeout> | undefined
    const finish = (outcome: Outcome) => {
      if (done) return
      done = true
      clearTimeout(timer)
      const responseText = keptBytes === 0 ? undefined : Buffer.concat(kept).subarray(0, ANSWER_TEXT_BYTES).toString("utf8")
      resolve({ outcome, responseTimeMs: Math.round(performance.now() - started), retryAfterSeconds, responseText })
    }
    const target = new URL(url)
    const host = target.hostname.replace(/^\[|\]$/g, "")
    if (!options.allowPrivateTargets && isIP(host) !== 0 && isBlockedAddress(host)) {
      return finish({ _tag: "Refused", error: REFUSED_ADDRESS })
    }
    const lookup = (
      hostname: string,
      opts: object,
      callback: (err: NodeJS.ErrnoException | null, address: string | Array<LookupAddress>, family?: number) => void
    ) => {
      dnsLookup(hostname, { ...opts, all: true }, (err, addresses) => {
        if (err) return callback(err, "", 4)
        const list = addresses as Array<LookupAddress>
        if (!options.allowPrivateTargets) {
          if (list.length === 0 || list.some((a) => isBlockedAddress(a.address))) {
            return callback(new RefusedTarget(refusedName(hostname)), "", 4)
          }
        }
        if ((opts as { all?: boolean }).all) return callback(null, list)
        callback(null, list[0]!.address, list[0]!.family)
      })
    }
    const bytes = Buffer.from(body, "utf8")
    const request = (target.protocol === "https:" ? https : http).request(target, {
      method: "POST",
      headers: { ...headers, "Content-Length": String(bytes.length) },
      lookup: lookup as never,
      agent: agents[options.allowPrivateTargets ? "open" : "guarded"][target.protocol === "https:" ? "https" : "http"]
    })
    if (!options.allowPrivateTargets) {
      // The address actually connected to, whatever resolved it (a reused keep-alive socket was
      // checked when it connected).
      request.on("socket", (socket) => {
        const check = () => {
          const remote = socket.remoteAddress
          if (remote !== undefined && isBlockedAddress(remote)) request.destroy(new RefusedTarget(REFUSED_ADDRESS))
        }
        if (socket.connecting) socket.once("connect", check)
        else check()
      })
    }
    timer = setTimeout(() => {
      finish({ _tag: "NoAnswer", error: `timeout: no answer within ${options.timeoutMs ?? SEND_TIMEOUT_MS} ms` })
      request.destroy()
    }, options.timeoutMs ?? SEND_TIMEOUT_MS)
    request.on("response", (response) => {
      const status = response.statusCode ?? 0
      const retryAfter = Number(response.headers["retry-after"])
      if (Number.isFinite(retryAfter) && retryAfter >= 0) retryAfterSeconds = retryAfter
      // Read a bounded answer so the socket closes cleanly; its start is kept.
      let seen = 0
      response.on("data", (chunk: Buffer) => {
        if (keptBytes < ANSWER_TEXT_BYTES) {
          kept.push(chunk)
          keptBytes += chunk.length
        }
        seen += chunk.length
        if (seen > 64 * 1024) response.destroy()
      })
      response.on("end", () => finish({ _tag: "Answered", status }))
      response.on("close", () => finish({ _tag: "Answered", status }))
      response.on("error", () => finish({ _tag: "Answered", status }))
    })
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (error instanceof RefusedTarget) return finish({ _tag: "Refused", error: error.message })
      const code = error.code === undefined ? "" : `${error.code}: `
      // Node's messages name the host (the user's value): kept short
      finish({ _tag: "NoAnswer", error: echo(`${code}${error.message}`, 160) })
    })
    request.end(bytes)
  })
