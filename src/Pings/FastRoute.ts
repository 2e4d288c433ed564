import { Effect, Layer } from "effect"
import type * as http from "node:http"
import { PAYLOAD_TOO_LARGE_REPLY } from "../Domain/Errors.js"
import { FastRoutes, readLimitedBody, sendJson } from "../Http/Server.js"
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
      readLimitedBody(req, res, () => {
        pingAnswered(PAYLOAD_TOO_LARGE_REPLY.status)
        send(res, PAYLOAD_TOO_LARGE_REPLY)
      }, (body) => {
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
            body
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
