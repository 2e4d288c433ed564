import { Effect, Layer } from "effect"
import type * as http from "node:http"
import { MAX_BODY_BYTES, PAYLOAD_TOO_LARGE_REPLY } from "../Domain/Errors.js"
import { FastRoutes, refuseRestOfBody, sendJson } from "../Http/Server.js"
import { Metrics } from "../Metrics/Metrics.js"
import { Intake, type PingReply } from "./Intake.js"

// Any letter case, as the router matches (the request target is already canonical: src/Http/Canonical.ts).
const PING_PATH = /^\/api\/ping\/([^/]+)\/(start|success|fail)$/i

const send = (res: http.ServerResponse, reply: PingReply) => sendJson(res, reply.status, reply.body, reply.headers)

/**
 * The ping routes, served straight from node:http ahead of Effect's router: read the body once,
 * hand it to the intake, answer from the writer's commit. Other methods on these paths fall through
 * to the router (405).
 */
export const FastPingRoutes = Layer.effect(
  FastRoutes,
  Effect.gen(function*() {
    const intake = yield* Intake
    const { pingAnswered } = yield* Metrics
    const handle = (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
      if (req.method !== "POST") return false
      const url = req.url ?? "/"
      const q = url.indexOf("?")
      const match = PING_PATH.exec(q < 0 ? url : url.slice(0, q))
      if (match === null) return false
      const chunks: Array<Buffer> = []
      let size = 0
      let tooLarge = false
      req.on("data", (chunk: Buffer) => {
        if (tooLarge) return
        size += chunk.length
        if (size > MAX_BODY_BYTES) {
          tooLarge = true
          chunks.length = 0
          refuseRestOfBody(req)
          pingAnswered(PAYLOAD_TOO_LARGE_REPLY.status)
          send(res, PAYLOAD_TOO_LARGE_REPLY)
          return
        }
        chunks.push(chunk)
      })
      req.on("error", () => {
        if (!res.headersSent) res.destroy()
      })
      req.on("end", () => {
        if (tooLarge) return
        let monitorId: string
        try {
          monitorId = decodeURIComponent(match[1]!)
        } catch {
          monitorId = match[1]!
        }
        intake.submit(
          {
            monitorId,
            kind: match[2]!.toLowerCase() as "start" | "success" | "fail",
            authorization: req.headers.authorization,
            query: q < 0 ? "" : url.slice(q + 1),
            body: chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")
          },
          (reply) => {
            // counted as answered: one increment of a plain number (src/Metrics/Metrics.ts)
            pingAnswered(reply.status)
            send(res, reply)
          }
        )
      })
      return true
    }
    return { handle }
  })
)
