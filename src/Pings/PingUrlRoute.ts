import { SqlClient } from "@effect/sql"
import { Effect, Layer, Runtime } from "effect"
import type * as http from "node:http"
import { AppConfig } from "../Config.js"
import { errorReply, MAX_BODY_BYTES, PAYLOAD_TOO_LARGE_REPLY } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import { type Bucket, takeToken } from "../Http/RateLimit.js"
import { PublicRoutes, readLimitedBody, sendJson } from "../Http/Server.js"
import { Maintenance } from "../Maintenance/Maintenance.js"
import { SLUG_PATTERN } from "../Monitors/Api.js"
import { type MonitorInfo, MonitorCache } from "../Monitors/MonitorCache.js"
import { Monitors } from "../Monitors/Monitors.js"
import { badgeJson, badgeSvg, type BadgeState, monitorBadgeState, parseBadgePath, shieldsJson, worstState } from "./Badges.js"
import { Metrics } from "../Metrics/Metrics.js"
import { Intake, type PingReply } from "./Intake.js"
import { OrgKeys } from "./OrgKeys.js"
import { AUTO_CREATE_DEFAULTS, parseGrace, parsePingPath, type PingAction, plainText, scheduleOfQuery } from "./PingUrls.js"

/**
 * The public capability routes (docs/pings.md#ping-urls, docs/badges.md), served from node:http
 * ahead of the router like the token ping routes: the URL is the credential, so there is no
 * Authorization header to check; the capability is found in memory (MonitorCache, OrgKeys). The
 * ping goes to the same intake as the token routes (rate limit, pairing, group-commit writer,
 * engine). Paths are never logged here: they are credentials.
 */

const BADGE_TTL_MS = 5_000

const TEXT_HEADERS = {
  "content-type": "text/plain; charset=utf-8",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
  "access-control-allow-origin": "*",
  "ping-body-limit": String(MAX_BODY_BYTES)
}

const wantsJson = (req: http.IncomingMessage) => (req.headers.accept ?? "").includes("application/json")

/** The common answer, made once: no object is built per ping (as sendJson avoids spreads). */
const OK_HEADERS = { ...TEXT_HEADERS, "content-length": 2 }

/** The answer: Healthchecks' plain text, or our JSON body when the client asks for JSON. */
const answer = (req: http.IncomingMessage, res: http.ServerResponse, reply: PingReply) => {
  if (res.headersSent) return
  if (wantsJson(req)) {
    return sendJson(res, reply.status, reply.body, { "access-control-allow-origin": "*", ...reply.headers })
  }
  if (reply.status === 200 && reply.headers === undefined) {
    res.writeHead(200, OK_HEADERS)
    return void res.end("OK")
  }
  const text = plainText(reply.status, typeof reply.body.message === "string" ? reply.body.message : undefined)
  res.writeHead(reply.status, { ...TEXT_HEADERS, "content-length": Buffer.byteLength(text), ...reply.headers })
  res.end(text)
}

const notFound = errorReply("NotFound", "not found")

export const PublicRoutesLive = Layer.effect(
  PublicRoutes,
  Effect.gen(function*() {
    const intake = yield* Intake
    const { pingAnswered } = yield* Metrics
    const cache = yield* MonitorCache
    const orgKeys = yield* OrgKeys
    const monitors = yield* Monitors
    const maintenance = yield* Maintenance
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const clock = yield* Effect.clock
    const runtime = yield* Effect.runtime<never>()

    // ---- auto-provisioning: a token bucket per organization (PING_AUTO_CREATE_PER_HOUR) ----------
    const createBuckets = new Map<string, Bucket>()
    const mayCreate = (orgId: string): number => {
      const perHour = config.pingAutoCreatePerHour
      if (perHour === 0) return -1
      const now = clock.unsafeCurrentTimeMillis()
      let bucket = createBuckets.get(orgId)
      if (bucket === undefined) createBuckets.set(orgId, bucket = { tokens: perHour, refilledAt: now })
      return takeToken(bucket, now, perHour / 3600, perHour)
    }

    const ping = (info: MonitorInfo, action: PingAction, rid: string | undefined, body: string, created: boolean, reply: (r: PingReply) => void) => {
      const done = created ? (r: PingReply) => reply(r.status === 200 ? { ...r, status: 201 } : r) : reply
      if (action.kind === "log") return intake.submitLog(info, rid, body, done)
      const kind = action.kind === "exit" ? (action.exitCode === 0 ? "success" : "fail") : action.kind
      intake.submitKnown(
        kind,
        info,
        {
          runId: rid,
          exitCode: action.kind === "exit" ? action.exitCode : undefined,
          output: kind === "start" || body === "" ? undefined : body,
          durationMs: undefined
        },
        done
      )
    }

    /** `?create=1`: the monitor named by the slug, made with the URL's settings or the defaults. */
    const provision = (orgId: string, slug: string, params: URLSearchParams, then: (info: MonitorInfo | undefined, reply?: PingReply) => void) => {
      if (!SLUG_PATTERN.test(slug)) {
        return then(undefined, errorReply("ValidationError", `A slug has ${"1 to 100 characters: a-z, 0-9, - and _"}; this one cannot be created.`, { path: "slug" }))
      }
      const wait = mayCreate(orgId)
      if (wait !== 0) {
        return then(
          undefined,
          wait < 0
            ? errorReply("Forbidden", "Auto-provisioning is off on this server (PING_AUTO_CREATE_PER_HOUR=0): create the monitor first.")
            : {
              ...errorReply(
                "RateLimited",
                `This organization may create at most ${config.pingAutoCreatePerHour} monitors an hour from ping URLs; retry in ${wait} s, or create the monitor through the API.`,
                { retryAfterSeconds: wait }
              ),
              headers: { "retry-after": String(wait) }
            }
        )
      }
      const scheduleText = params.get("schedule")
      const graceText = params.get("grace")
      const grace = graceText === null ? AUTO_CREATE_DEFAULTS.graceSeconds : parseGrace(graceText)
      if (grace === undefined || grace > 31_536_000) {
        return then(undefined, errorReply("ValidationError", "grace must be seconds, or a number with s, m, h or d (1h), at most a year.", { path: "grace" }))
      }
      const tz = params.get("tz")
      const schedule = scheduleText === null ? AUTO_CREATE_DEFAULTS.schedule : scheduleOfQuery(scheduleText)
      const create = monitors.create(orgId, {
        name: slug,
        slug,
        schedule: tz === null ? schedule : { ...schedule, timezone: tz },
        graceSeconds: grace
      })
      Runtime.runCallback(runtime)(create, {
        onExit: (exit) => {
          if (exit._tag === "Success") return cache.lookupBySlug(orgId, slug, (info) => then(info))
          const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
          if (failure !== undefined && failure._tag === "Conflict") {
            // Made meanwhile by another ping (the slug is taken): ping it. Or the organization is full.
            return cache.lookupBySlug(orgId, slug, (info) =>
              info !== undefined ? then(info, { status: 200, body: {} }) : then(undefined, errorReply("Conflict", failure.message)))
          }
          if (failure !== undefined && failure._tag === "ValidationError") {
            return then(undefined, errorReply("ValidationError", `query parameter ${failure.message}`, { path: failure.path }))
          }
          Runtime.runFork(runtime)(Effect.logError("could not auto-provision a monitor", exit.cause))
          then(undefined, errorReply("ServiceUnavailable", "The monitor could not be created right now; retry in a few seconds."))
        }
      })
    }

    const handlePing = (req: http.IncomingMessage, res: http.ServerResponse, path: string, query: string): boolean => {
      const target = parsePingPath(path)
      if (target === undefined) return false
      // Counted as the token routes' answers are (docs/metrics.md, jobmon_pings_total).
      const reply = (r: PingReply) => {
        pingAnswered(r.status)
        answer(req, res, r)
      }
      if (req.method !== "GET" && req.method !== "HEAD" && req.method !== "POST") {
        req.resume()
        answer(req, res, { ...errorReply("MethodNotAllowed", "method not allowed: use GET, HEAD or POST"), headers: { allow: "GET, HEAD, POST" } })
        return true
      }
      readLimitedBody(req, res, () => reply(PAYLOAD_TOO_LARGE_REPLY), (body) => {
        if (target._tag === "NotFound") return reply(notFound)
        if (target._tag === "Invalid") return reply(errorReply("ValidationError", target.message, { path: "" }))
        const params = new URLSearchParams(query)
        const rid = params.get("rid") ?? undefined
        if (rid !== undefined && !isUuid(rid)) {
          return reply(errorReply("ValidationError", "invalid rid: it must be a UUID", { path: "rid" }))
        }
        const runId = rid?.toLowerCase()
        if (target._tag === "ById") {
          return cache.lookupByPingId(target.pingId, (info, error) => {
            if (error !== undefined) return reply(errorReply("ServiceUnavailable", "The database does not answer; retry in a few seconds."))
            if (info === undefined) return reply(notFound)
            ping(info, target.action, runId, body, false, reply)
          })
        }
        orgKeys.lookup("ping", target.pingKey, (orgId, error) => {
          if (error !== undefined) return reply(errorReply("ServiceUnavailable", "The database does not answer; retry in a few seconds."))
          if (orgId === undefined) return reply(notFound)
          cache.lookupBySlug(orgId, target.slug, (info, error) => {
            if (error !== undefined) return reply(errorReply("ServiceUnavailable", "The database does not answer; retry in a few seconds."))
            if (info !== undefined) return ping(info, target.action, runId, body, false, reply)
            if (params.get("create") !== "1") return reply(notFound)
            provision(orgId, target.slug, params, (created, problem) => {
              if (created === undefined) return reply(problem ?? notFound)
              ping(created, target.action, runId, body, problem === undefined, reply)
            })
          })
        })
      })
      return true
    }

    // ---- badges ---------------------------------------------------------------------------------
    interface BadgeResult {
      readonly at: number
      readonly state: BadgeState | undefined
      readonly counts: { total: number; up: number; down: number; late: number; maintenance: number }
    }
    const badgeCache = new Map<string, BadgeResult>()

    const badgeState = (orgId: string, name: string) =>
      Effect.gen(function*() {
        const key = `${orgId}\n${name}`
        const now = clock.unsafeCurrentTimeMillis()
        const hit = badgeCache.get(key)
        if (hit !== undefined && now - hit.at < BADGE_TTL_MS) return hit
        // The monitor with this slug, else the monitors carrying this tag.
        const rows = yield* sql<{ id: string; status: string; paused: boolean; by_slug: boolean }>`
          select id, status, paused, coalesce(slug = ${name}, false) as by_slug from monitors
          where org_id = ${orgId} and deleted_at is null and (slug = ${name} or tags @> array[${name}]::text[])
          limit 10001`.pipe(Effect.orDie)
        const chosen = rows.some((r) => r.by_slug) ? rows.filter((r) => r.by_slug) : rows
        const states = chosen.map((r) => monitorBadgeState(r.status, r.paused, maintenance.monitorInfo(r.id, now) !== null))
        const counts = { total: states.length, up: 0, down: 0, late: 0, maintenance: 0 }
        for (const s of states) counts[s]++
        const result: BadgeResult = { at: now, state: states.length === 0 ? undefined : worstState(states), counts }
        if (badgeCache.size > 10_000) badgeCache.clear()
        badgeCache.set(key, result)
        return result
      })

    const handleBadge = (req: http.IncomingMessage, res: http.ServerResponse, path: string): boolean => {
      const target = parseBadgePath(path)
      if (target === undefined) return false
      req.resume()
      if (req.method !== "GET" && req.method !== "HEAD") {
        answer(req, res, { ...errorReply("MethodNotAllowed", "method not allowed: use GET or HEAD"), headers: { allow: "GET, HEAD" } })
        return true
      }
      if (target === "notFound") {
        answer(req, res, notFound)
        return true
      }
      const work = Effect.gen(function*() {
        const orgId = yield* orgKeys.lookupEffect("badge", target.key)
        return orgId === undefined ? undefined : yield* badgeState(orgId, target.name)
      })
      Runtime.runCallback(runtime)(work, {
        onExit: (exit) => {
          if (exit._tag === "Failure") {
            return answer(req, res, errorReply("ServiceUnavailable", "The database does not answer; retry in a few seconds."))
          }
          const result = exit.value
          if (result === undefined || result.state === undefined) return answer(req, res, notFound)
          const headers = {
            "cache-control": `public, max-age=${BADGE_TTL_MS / 1000}`,
            "x-content-type-options": "nosniff",
            "access-control-allow-origin": "*",
            "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'"
          }
          const body = target.format === "svg"
            ? badgeSvg(target.name, result.state)
            : JSON.stringify(target.format === "json" ? badgeJson(target.name, result.state, result.counts) : shieldsJson(target.name, result.state))
          res.writeHead(200, {
            ...headers,
            "content-type": target.format === "svg" ? "image/svg+xml" : "application/json",
            "content-length": Buffer.byteLength(body)
          })
          res.end(body)
        }
      })
      return true
    }

    const handle = (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
      const url = req.url ?? "/"
      // Cheap test first: every other request passes through here.
      const c1 = url.charCodeAt(1)
      if (c1 !== 0x70 && c1 !== 0x50 && c1 !== 0x62 && c1 !== 0x42) return false
      const q = url.indexOf("?")
      const path = q < 0 ? url : url.slice(0, q)
      return handlePing(req, res, path, q < 0 ? "" : url.slice(q + 1)) || handleBadge(req, res, path)
    }
    return { handle }
  })
)
