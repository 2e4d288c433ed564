import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface Received {
  readonly headers: http.IncomingHttpHeaders
  /** The request's path and query, as sent. */
  readonly url: string
  readonly raw: Buffer
  readonly body: any
  /** Real time of arrival (ms). */
  readonly at: number
}

/**
 * An answer: a status, or a status with headers, a body (default `ok`) and a delay in real
 * milliseconds; or "hang" (never answer).
 */
export type Answer =
  | number
  | {
    readonly status: number
    readonly headers?: Record<string, string>
    readonly body?: string
    readonly delayMs?: number
  }
  | "hang"

/**
 * A real HTTP receiver on 127.0.0.1: answers each request with the next of `answers` (the last one
 * repeats), or with what `answers` decides for it when it is a function, and keeps what it got.
 */
export const receiver = (answers: ReadonlyArray<Answer> | ((request: Received) => Answer) = [200]) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; received: Array<Received>; server: http.Server }>((resume) => {
      const received: Array<Received> = []
      const server = http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const raw = Buffer.concat(chunks)
          let body: unknown = undefined
          try {
            body = JSON.parse(raw.toString("utf8"))
          } catch {
            body = undefined
          }
          const request: Received = { headers: req.headers, url: req.url ?? "", raw, body, at: Date.now() }
          const answer = typeof answers === "function" ? answers(request) : answers[Math.min(received.length, answers.length - 1)]!
          received.push(request)
          if (answer === "hang") return
          const { body: text = "ok", delayMs = 0, headers = {}, status } = typeof answer === "number" ? { status: answer } : answer
          const reply = () => {
            res.writeHead(status, { "content-type": "text/plain", ...headers })
            res.end(text)
          }
          if (delayMs > 0) setTimeout(reply, delayMs)
          else reply()
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hook`, received, server }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )
