import { SqlClient } from "@effect/sql"
import { Effect, Either, Option, ParseResult, Runtime, Schema } from "effect"
import { type CachedAuth, parseBearer, Tokens } from "../Auth/Tokens.js"
import { scopeAllows } from "../Auth/Scopes.js"
import { AppConfig } from "../Config.js"
import { Database } from "../Db/Database.js"
import { errorReply } from "../Domain/Errors.js"
import { jsonNestedDeeperThan, tooDeepMessage } from "../Domain/Json.js"
import { firstProblem } from "../Http/Errors.js"
import { rateLimitHeaders, takeToken } from "../Http/RateLimit.js"
import { isUuid, newTimeOrderedId } from "../Domain/Ids.js"
import { type NewsRun, News } from "../Cluster/News.js"
import { Engine } from "../Engine/Engine.js"
import type { EngineEvent } from "../Engine/Model.js"
import { Metrics } from "../Metrics/Metrics.js"
import { type MonitorInfo, MonitorCache } from "../Monitors/MonitorCache.js"
import { escapeRawControlCharacters, prepareOutput } from "./Output.js"
import { type OpenRun, pair, type PairingContext, type PingKind } from "./Pairing.js"
import { type PingEventScope, RunWriter } from "./RunWriter.js"
import { FailPingBody, type PingBody, PingQuery, quickBody, StartPingBody, SuccessPingBody } from "./Schemas.js"

/**
 * The ping intake: authenticate, find the monitor, validate, redact and truncate the output, pair
 * the ping with its run, and hand the run to the group-commit writer; answer only after the commit.
 * Written as synchronous steps with callbacks so that the common case (token and monitor in memory)
 * never leaves the event loop turn it arrived in; the rare misses load from the database.
 * Both the fast node:http route and the HttpApi handlers use it, so their behaviour is one.
 */

export interface PingRequest {
  readonly monitorId: string
  readonly kind: PingKind
  readonly authorization: string | undefined
  /** The raw query string, without the `?` ("" when none). */
  readonly query: string
  /** The raw body text ("" when none). */
  readonly body: string
}

export interface PingReply {
  readonly status: number
  readonly body: Record<string, unknown>
  readonly headers?: Record<string, string>
}

const decoders = {
  start: Schema.decodeUnknownEither(StartPingBody),
  success: Schema.decodeUnknownEither(SuccessPingBody),
  fail: Schema.decodeUnknownEither(FailPingBody)
} as const
const decodeQuery = Schema.decodeUnknownEither(PingQuery)

const MISS: CachedAuth = { _tag: "Miss" }

const NOT_JSON: unique symbol = Symbol("not JSON")

/**
 * The body's JSON value, or NOT_JSON. Raw control characters inside its strings (a shell script's
 * hand-built body; a NUL in the output) are read as if escaped rather than lose the ping
 * (escapeRawControlCharacters, docs/pings.md); a valid body is parsed once, as before.
 */
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    const escaped = escapeRawControlCharacters(text)
    if (escaped === undefined) return NOT_JSON
    try {
      return JSON.parse(escaped)
    } catch {
      return NOT_JSON
    }
  }
}

/** An empty body, as parsed: `{}`. */
const NO_FIELDS: Record<string, unknown> = {}

const firstIssue = (e: ParseResult.ParseError, text: string) => {
  // A body that parsed can still be too deep to describe: its error message would walk it.
  if (jsonNestedDeeperThan(text)) return { path: "", message: tooDeepMessage }
  const problem = firstProblem(ParseResult.ArrayFormatter.formatErrorSync(e))
  const path = problem?.path ?? ""
  return { path, message: `${path === "" ? "body" : path}: ${problem?.message ?? e.message}` }
}

/**
 * Cluster mode: the least time between two batches of the ping writer, unless PING_WRITER_LINGER_MS
 * says otherwise. Each instance takes a share of the pings, and every commit that carries news wakes
 * every instance's LISTEN session: under load, batches of 40 ms of pings cost less per ping
 * (docs/performance.md, "Several instances"); a ping that finds the writer idle is written at once.
 */
export const CLUSTER_WRITER_LINGER_MS = 40

interface MonitorPingState {
  openRuns: ReadonlyArray<OpenRun>
  /** Recently finished run ids, newest last (to tell 409 from 404 without a query). */
  finished: Array<string>
  /** Token bucket for the per-monitor ping rate limit. */
  tokens: number
  refilledAt: number
  /** The monitor's pairing context, made once (not an object and two closures per ping). */
  pairing: PairingContext | undefined
  /**
   * Cluster mode: what this instance has seen of the monitor's runs since it started: a run with a
   * start (`startSeen`), or only runs without one (`successOnly`: finished runs with an inferred
   * start and never a start). A success without runId of a monitor seen to report without starts
   * needs no catch-up: there is no start to pair it with (docs/engine.md, "Several instances").
   */
  startSeen: boolean
  successOnly: boolean
}

/** Cluster mode: what a run tells of how its monitor reports (see MonitorPingState). */
const learnFrom = (state: MonitorPingState, status: string, startInferred: boolean) => {
  if (status === "RUNNING" || !startInferred) {
    state.startSeen = true
    state.successOnly = false
  } else if (!state.startSeen) {
    state.successOnly = true
  }
}

const FINISHED_MEMORY = 64

/**
 * A monitor's pairing context, made once. Outside `accept` on purpose: a closure made there would
 * keep that function's whole scope (the first ping's request and its answer) alive for as long as
 * the monitor is known.
 */
const pairingContext = (info: MonitorInfo, state: MonitorPingState): PairingContext => ({
  monitorId: info.id,
  orgId: info.orgId,
  newId: newTimeOrderedId,
  isFinished: (id) => state.finished.includes(id)
})

export class Intake extends Effect.Service<Intake>()("jobmon/Intake", {
  dependencies: [MonitorCache.Default, News.Default, Metrics.Default],
  scoped: Effect.gen(function*() {
    const config = yield* AppConfig
    const tokens = yield* Tokens
    const monitors = yield* MonitorCache
    const engine = yield* Engine
    const news = yield* News
    const database = yield* Database
    const sql = yield* SqlClient.SqlClient
    const clock = yield* Effect.clock
    const runtime = yield* Effect.runtime<never>()
    const metrics = yield* Metrics
    const writer = new RunWriter(database.pool, config.pingWriterLanes)
    writer.afterCommit = metrics.writerBatch
    yield* Effect.addFinalizer(() => Effect.promise(() => writer.close()))
    if (!news.clustered) writer.lingerMs = Option.getOrElse(config.pingWriterLingerMs, () => 0)
    if (news.clustered) {
      writer.newsOrigin = news.origin
      writer.lingerMs = Option.getOrElse(config.pingWriterLingerMs, () => CLUSTER_WRITER_LINGER_MS)
    }

    /**
     * Committed pings of the batch being answered, for the incident engine: monitor id, event,
     * monitor id, event, … They reach the engine after the whole batch is answered (the answers are
     * what the clients wait for; the engine's judgement is not), in commit order.
     */
    const committed: Array<string | EngineEvent> = []
    writer.afterSettle = () => {
      for (let i = 0; i < committed.length; i += 2) {
        try {
          engine.send(committed[i] as string, committed[i + 1] as EngineEvent)
        } catch {
          // one monitor's failure must not keep the others' pings from the engine
        }
      }
      committed.length = 0
    }

    // Open runs of every monitor, so pairing is a synchronous decision.
    const states = new Map<string, MonitorPingState>()
    const stateOf = (monitorId: string, now: number): MonitorPingState => {
      let state = states.get(monitorId)
      if (state === undefined) {
        state = { openRuns: [], finished: [], tokens: config.pingBurst, refilledAt: now, pairing: undefined, startSeen: false, successOnly: false }
        states.set(monitorId, state)
      }
      return state
    }
    const loadOpenRuns = Effect.gen(function*() {
      const open = yield* sql<{ id: string; monitor_id: string; started_at: Date }>`
        select id, monitor_id, started_at from runs where status = 'RUNNING'`.pipe(Effect.orDie)
      const now0 = clock.unsafeCurrentTimeMillis()
      const byMonitor = new Map<string, Array<OpenRun>>()
      for (const run of open) {
        let runs = byMonitor.get(run.monitor_id)
        if (runs === undefined) byMonitor.set(run.monitor_id, runs = [])
        runs.push({ id: run.id, startedAt: run.started_at.getTime() })
      }
      for (const [id, state] of states) if (!byMonitor.has(id)) state.openRuns = []
      for (const [id, runs] of byMonitor) {
        const state = stateOf(id, now0)
        state.openRuns = runs
        state.startSeen = true
        state.successOnly = false
      }
    })
    yield* loadOpenRuns

    // ---- several instances (src/Cluster/News.ts) ---------------------------------------------
    // Runs committed by the other instances: this instance's pairing learns their starts and
    // finishes, and the engine judges those of the monitors this instance owns.
    const applyNews = (runs: ReadonlyArray<NewsRun>) => {
      const now = clock.unsafeCurrentTimeMillis()
      for (const r of runs) {
        const state = stateOf(r.monitorId, now)
        learnFrom(state, r.status, r.startInferred)
        if (r.status === "RUNNING") {
          if (!state.openRuns.some((o) => o.id === r.id) && !state.finished.includes(r.id)) {
            state.openRuns = [...state.openRuns, { id: r.id, startedAt: r.startedAt }]
          }
          engine.send(r.monitorId, { _tag: "RunStarted", runId: r.id, at: r.startedAt })
        } else {
          if (state.openRuns.some((o) => o.id === r.id)) state.openRuns = state.openRuns.filter((o) => o.id !== r.id)
          if (!state.finished.includes(r.id)) {
            state.finished.push(r.id)
            if (state.finished.length > FINISHED_MEMORY) state.finished.shift()
          }
          const finishedAt = r.finishedAt ?? r.pingAt
          engine.send(r.monitorId, {
            _tag: "RunFinished",
            at: finishedAt,
            run: {
              id: r.id,
              status: r.status,
              startedAt: r.startedAt,
              finishedAt,
              durationMs: r.durationMs,
              exitCode: r.exitCode,
              output: null,
              startInferred: r.startInferred
            },
            outputStored: r.hasOutput
          })
        }
      }
    }
    if (news.clustered) {
      yield* news.onPings(applyNews)
      yield* news.onResync(loadOpenRuns)
      yield* news.onChange((change) => {
        if (change.k === "monitorDeleted") states.delete(change.id)
      })
    }

    /**
     * Cluster mode: a finish that names no run this instance knows open, or finds none open, may
     * close a run another instance started a moment ago; it is paired once this instance has heard
     * everything committed before it arrived (one marker per batch of such pings, about a
     * millisecond: src/Cluster/News.ts, `afterCatchUp`).
     */
    const needsCatchUp = (kind: PingKind, state: MonitorPingState, runId: string | undefined): boolean =>
      news.clustered && kind !== "start" &&
      (runId === undefined
        ? state.openRuns.length === 0 && !state.successOnly
        : !state.openRuns.some((r) => r.id === runId) && !state.finished.includes(runId))

    const run = <A>(effect: Effect.Effect<A>, callback: (a: A | undefined) => void) =>
      Runtime.runCallback(runtime)(effect, {
        onExit: (exit) => callback(exit._tag === "Success" ? exit.value : undefined)
      })

    const parseBody = (request: PingRequest): Either.Either<PingBody, PingReply> => {
      let json: unknown = NO_FIELDS
      if (request.body.trim() !== "") {
        json = parseJson(request.body)
        if (json === NOT_JSON) {
          return Either.left(errorReply("ValidationError", "The request body is not valid JSON. Send a JSON object, or no body.", { path: "" }))
        }
      }
      if (json === null || typeof json !== "object" || Array.isArray(json)) {
        return Either.left(errorReply("ValidationError", "The request body must be a JSON object.", { path: "" }))
      }
      let body = quickBody(request.kind, json as Record<string, unknown>)
      if (body === undefined) {
        const decoded = decoders[request.kind](json)
        if (Either.isLeft(decoded)) {
          const { path, message } = firstIssue(decoded.left, request.body)
          return Either.left(errorReply("ValidationError", message, { path }))
        }
        body = decoded.right as PingBody
      }
      if (request.query === "") return Either.right(body)
      const params = new URLSearchParams(request.query)
      const queryRecord: Record<string, string> = {}
      for (const key of ["exitCode", "durationMs", "runId"]) {
        const value = params.get(key)
        if (value !== null) queryRecord[key] = value
      }
      const query = decodeQuery(queryRecord)
      if (Either.isLeft(query)) {
        const { path, message } = firstIssue(query.left, "")
        return Either.left(errorReply("ValidationError", `query parameter ${message}`, { path }))
      }
      return Either.right({
        durationMs: body.durationMs ?? query.right.durationMs,
        exitCode: body.exitCode ?? query.right.exitCode,
        runId: body.runId ?? query.right.runId,
        output: body.output
      })
    }

    const accept = (request: PingRequest, info: MonitorInfo, reply: (r: PingReply) => void) => {
      const parsed = parseBody(request)
      if (Either.isLeft(parsed)) return reply(parsed.left)
      acceptPing(request.kind, info, parsed.right, false, reply)
    }

    /** The monitor's ping rate limit: takes a token, or answers 429 with when to retry. */
    const rateLimited = (state: MonitorPingState, now: number): PingReply | undefined => {
      const wait = takeToken(state, now, config.pingRatePerSecond, config.pingBurst)
      if (wait <= 0) return undefined
      return {
        ...errorReply("RateLimited", `Too many pings for this monitor: at most ${config.pingRatePerSecond} per second (bursts of ${config.pingBurst}). Retry in ${wait} s.`, { retryAfterSeconds: wait }),
        headers: { "retry-after": String(wait), ...rateLimitHeaders(state, config.pingRatePerSecond, config.pingBurst) }
      }
    }

    /**
     * A parsed ping of a monitor. `lenient` (ping URLs, Healthchecks' semantics): a start that repeats
     * an open run's id, or a finish that repeats a finished run's, is a retry and answered 200 without
     * a second write; a finish naming a run nobody started is recorded as a run of its own.
     */
    const acceptPing = (kind: PingKind, info: MonitorInfo, ping: PingBody, lenient: boolean, reply: (r: PingReply) => void) => {
      const now = clock.unsafeCurrentTimeMillis()
      const state = stateOf(info.id, now)
      const limited = rateLimited(state, now)
      if (limited !== undefined) return reply(limited)
      if (ping.runId !== undefined && !isUuid(ping.runId)) {
        return reply(
          kind === "start"
            ? errorReply("ValidationError", "runId must be a UUID.", { path: "runId" })
            : errorReply("NotFound", `Run ${ping.runId} does not exist for this monitor.`)
        )
      }
      if (needsCatchUp(kind, state, ping.runId)) {
        return news.afterCatchUp(() => pairAndWrite(kind, info, ping, now, state, lenient, reply))
      }
      pairAndWrite(kind, info, ping, now, state, lenient, reply)
    }

    const pairAndWrite = (
      kind: PingKind,
      info: MonitorInfo,
      ping: PingBody,
      now: number,
      state: MonitorPingState,
      lenient: boolean,
      reply: (r: PingReply) => void
    ) => {
      const output = ping.output !== undefined && info.captureOutput && kind !== "start"
        ? prepareOutput(ping.output, info.maxOutputSizeKb * 1024)
        : undefined
      let result = pair(
        state.pairing ??= pairingContext(info, state),
        state.openRuns,
        {
          kind,
          receivedAt: now,
          runId: ping.runId,
          durationMs: ping.durationMs,
          exitCode: ping.exitCode,
          output: output === undefined ? undefined : { text: output.output, truncated: output.truncated, bytes: output.originalBytes }
        }
      )
      if (lenient && result._tag === "RunFinished") {
        // A retried ping (curl --retry after a lost answer): already stored.
        return reply({ status: 200, body: { received: true, runId: result.runId } })
      }
      if (lenient && result._tag === "UnknownRun") {
        // Healthchecks records a finish whose rid matches no start: a run of its own, start unknown.
        const alone = pair(state.pairing, [], {
          kind,
          receivedAt: now,
          runId: undefined,
          durationMs: ping.durationMs,
          exitCode: ping.exitCode,
          output: output === undefined ? undefined : { text: output.output, truncated: output.truncated, bytes: output.originalBytes }
        })
        if (alone._tag === "Row") result = { _tag: "Row", row: alone.row, openRuns: state.openRuns }
      }
      if (result._tag === "RunFinished") {
        return reply(errorReply("Conflict", `Run ${result.runId} has already ${kind === "start" ? "been started" : "finished"}; a run is started once and finished once.`))
      }
      if (result._tag === "UnknownRun") {
        // Not open here: a finished run this instance no longer remembers is a 409, anything else 404.
        return run(
          sql<{ n: number }>`select count(*)::int as n from runs where id = ${result.runId} and monitor_id = ${info.id}`.pipe(
            Effect.map((rows) => (rows[0]?.n ?? 0) > 0),
            Effect.orElseSucceed(() => false)
          ),
          (exists) =>
            reply(
              exists
                ? errorReply("Conflict", `Run ${result.runId} has already finished; a run is finished once.`)
                : errorReply("NotFound", `Run ${result.runId} does not exist for this monitor.`)
            )
        )
      }
      const row = result.row
      state.openRuns = result.openRuns
      if (news.clustered) learnFrom(state, row.status, row.startInferred)
      if (row.status !== "RUNNING") {
        state.finished.push(row.id)
        if (state.finished.length > FINISHED_MEMORY) state.finished.shift()
      }
      writer.write(row, (failure) => {
        if (failure === undefined) {
          // Committed: the monitor's actor judges it once every ping of the batch is answered.
          committed.push(
            info.id,
            row.status === "RUNNING"
              ? { _tag: "RunStarted", runId: row.id, at: row.startedAt }
              : {
                _tag: "RunFinished",
                at: row.finishedAt ?? row.pingAt,
                run: {
                  id: row.id,
                  status: row.status,
                  startedAt: row.startedAt,
                  finishedAt: row.finishedAt ?? row.pingAt,
                  durationMs: row.durationMs,
                  exitCode: row.exitCode,
                  output: row.output,
                  startInferred: row.startInferred
                }
              }
          )
        }
        if (failure !== undefined) {
          // Not stored, so not acknowledged: the client retries. The pairing is undone.
          if (row.status === "RUNNING") state.openRuns = state.openRuns.filter((r) => r.id !== row.id)
          run(Effect.logError("could not store a ping", failure.message), () => {})
          return reply(errorReply("ServiceUnavailable", "The ping could not be stored right now; retry in a few seconds."))
        }
        // No X-RateLimit-* headers on success (only on the 429): the three headers cost the intake
        // and its clients a measurable share of their throughput (docs/performance.md#figures-behind-code-comments),
        // and a cron job's ping never reads them.
        reply({ status: 200, body: { received: true, runId: row.id } })
      })
    }

    const notFound = (request: PingRequest, reply: (r: PingReply) => void) =>
      reply(errorReply("NotFound", `Monitor ${request.monitorId} does not exist`))

    const withMonitor = (request: PingRequest, orgId: string, reply: (r: PingReply) => void) => {
      const info = monitors.get(request.monitorId)
      if (info !== undefined) return info.orgId === orgId ? accept(request, info, reply) : notFound(request, reply)
      monitors.lookup(request.monitorId, (found, cause) => {
        if (cause !== undefined) return reply(errorReply("ServiceUnavailable", "The database does not answer; retry in a few seconds."))
        if (found === undefined || found.orgId !== orgId) return notFound(request, reply)
        accept(request, found, reply)
      })
    }

    const unauthorized = (reply: (r: PingReply) => void, message: string) =>
      reply({ ...errorReply("Unauthorized", message), headers: { "www-authenticate": 'Bearer realm="jobmon"' } })

    const authorized = (request: PingRequest, reply: (r: PingReply) => void, verdict: CachedAuth) => {
      if (verdict._tag === "Denied") return unauthorized(reply, verdict.message)
      if (verdict._tag === "Miss") return reply(errorReply("ServiceUnavailable", "Authentication is unavailable; retry."))
      const principal = verdict.principal
      if (!scopeAllows(principal.scope, "ping")) {
        return reply(errorReply("Forbidden", `This token has scope '${principal.scope}', which cannot send pings: use a 'ping', 'write' or 'admin' token.`))
      }
      withMonitor(request, principal.orgId, reply)
    }

    /** Requests waiting for their token to load, by token: one database read serves them all, in arrival order. */
    const loading = new Map<string, Array<{ request: PingRequest; reply: (r: PingReply) => void }>>()

    /** The whole intake of one ping; `reply` is called exactly once. */
    const submit = (request: PingRequest, reply: (r: PingReply) => void): void => {
      const raw = parseBearer(request.authorization)
      if (raw === undefined) {
        return unauthorized(reply, "Send an access token: Authorization: Bearer <token> (a token with scope 'ping' is enough).")
      }
      const cached = tokens.fromCache(raw, clock.unsafeCurrentTimeMillis())
      if (cached._tag !== "Miss") return authorized(request, reply, cached)
      const waiting = loading.get(raw)
      if (waiting !== undefined) return void waiting.push({ request, reply })
      const waiters = [{ request, reply }]
      loading.set(raw, waiters)
      run(tokens.load(raw), (verdict) => {
        loading.delete(raw)
        for (const w of waiters) {
          try {
            authorized(w.request, w.reply, verdict ?? MISS)
          } catch {
            // one request's failure must not leave the others unanswered
          }
        }
      })
    }

    /**
     * A ping whose monitor is already known (the ping URLs: the URL is the credential), its fields
     * parsed by the caller. Same rate limit, pairing, writer and engine path as `submit`.
     */
    const submitKnown = (kind: PingKind, info: MonitorInfo, ping: PingBody, reply: (r: PingReply) => void): void =>
      acceptPing(kind, info, ping, true, reply)

    /**
     * /ping/.../log: output without a change of state. Rate limited as a ping; stored redacted and
     * truncated like a run's output, in ping_logs (not a run: nothing is paired or judged).
     */
    const submitLog = (info: MonitorInfo, runId: string | undefined, text: string, reply: (r: PingReply) => void): void => {
      const now = clock.unsafeCurrentTimeMillis()
      const state = stateOf(info.id, now)
      const limited = rateLimited(state, now)
      if (limited !== undefined) return reply(limited)
      if (runId !== undefined && !isUuid(runId)) return reply(errorReply("ValidationError", "rid must be a UUID.", { path: "rid" }))
      const output = info.captureOutput ? prepareOutput(text, info.maxOutputSizeKb * 1024) : undefined
      run(
        sql`insert into ping_logs (monitor_id, org_id, received_at, run_id, output, output_truncated, output_bytes)
            values (${info.id}, ${info.orgId}, ${new Date(now)}, ${runId ?? null}, ${output?.output ?? null},
                    ${output?.truncated ?? false}, ${output?.originalBytes ?? null})`.pipe(
          Effect.as(true),
          Effect.catchAllCause((cause) => Effect.as(Effect.logError("could not store a log ping", cause), false))
        ),
        (stored) =>
          reply(
            stored === true
              ? { status: 200, body: { received: true } }
              : errorReply("ServiceUnavailable", "The ping could not be stored right now; retry in a few seconds.")
          )
      )
    }

    /** The same, as an Effect (the HttpApi handlers). */
    const submitEffect = (request: PingRequest) => Effect.async<PingReply>((resume) => submit(request, (r) => resume(Effect.succeed(r))))

    /**
     * Which pings record a ping.received event: none, or those of the scope's organizations (every
     * monitor of an organization where a webhook subscribes without a monitor filter) and monitors
     * (those a subscribed webhook's filter names). Decided by the webhooks (Webhooks' sync); an
     * empty scope is "none".
     */
    const setPingEvents = (scope: "none" | PingEventScope) =>
      Effect.sync(() =>
        void (writer.pingEvents = scope === "none" || (scope.orgs.size === 0 && scope.monitors.size === 0) ? "none" : scope)
      )

    /** `listener` runs after each commit that recorded ping.received events (the delivery worker's wake-up). */
    const onPingEventsRecorded = (listener: () => void) => Effect.sync(() => void (writer.afterPingEvents = listener))

    return {
      submit,
      submitEffect,
      submitKnown,
      submitLog,
      setPingEvents,
      onPingEventsRecorded,
      writerStats: writer.stats,
      drain: () => writer.drain()
    } as const
  })
}) {}

