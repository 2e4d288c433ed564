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

/** An answer: a status, or a status with headers, or "hang" (never answer). */
export type Answer = number | { readonly status: number; readonly headers: Record<string, string> } | "hang"

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
          const { headers, status } = typeof answer === "number" ? { status: answer, headers: {} } : answer
          res.writeHead(status, { "content-type": "text/plain", ...headers })
          res.end("ok")
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
