import { Effect, Runtime, Schedule } from "effect"
import Pg from "pg"
import { SqlClient } from "@effect/sql"
import { Database } from "../Db/Database.js"
import { ShardSet } from "../Engine/Shards.js"
import type { RunRow } from "../Pings/Pairing.js"

/**
 * News between instances (cluster mode, docs/operations.md#several-instances), over PostgreSQL
 * `NOTIFY` on one channel: PostgreSQL delivers notifications to every listening session in commit
 * order, at most 8,000 bytes each, and only while the session listens (a listener that reconnects
 * resynchronises: `onResync`).
 *
 * - **Pings**: the run writer's statement notifies the runs it commits, in the same transaction
 *   (src/Pings/RunWriter.ts), so the owner of a monitor hears every acknowledged ping whatever
 *   instance took it, in batches (one notification per ~60 runs, not one message per ping).
 * - **Changes**: a monitor created, changed, paused, resumed or deleted; an incident acknowledged or
 *   resolved; a maintenance window changed: published after the change commits.
 * - **Catch-up**: `afterCatchUp` waits until this instance has heard everything committed before
 *   the call (its own marker comes back on its LISTEN connection after all of them), which is how a
 *   finish on one instance pairs with a start accepted a moment before on another.
 *
 * With one instance nothing is sent: `publish` does nothing and `afterCatchUp` calls back at once.
 */

export const NEWS_CHANNEL = "jobmon_news"

/** The largest payload PostgreSQL takes is 8,000 bytes; keep room for the header. */
const MAX_PAYLOAD = 7_800

/** A run as news: what the owner's engine and the other instances' pairing need of it. */
export interface NewsRun {
  readonly monitorId: string
  readonly orgId: string
  readonly id: string
  readonly status: "RUNNING" | "SUCCESS" | "FAIL"
  readonly startedAt: number
  readonly finishedAt: number | null
  readonly durationMs: number | null
  readonly exitCode: number | null
  readonly startInferred: boolean
  /** The run has output, stored with it (too large to travel in a notification). */
  readonly hasOutput: boolean
  readonly pingAt: number
}

export type Change =
  | { readonly k: "monitor"; readonly orgId: string; readonly id: string }
  | { readonly k: "monitorDeleted"; readonly orgId: string; readonly id: string }
  | { readonly k: "incident"; readonly monitorId: string; readonly type: string; readonly status: string; readonly at: number }
  | { readonly k: "maintenance"; readonly orgId: string; readonly id: string }
  /** An organization's ping or badge key was rotated (src/Pings/OrgKeys.ts). */
  | { readonly k: "orgKeys"; readonly orgId: string }

const num = (n: number | null) => (n === null ? "-" : String(n))
const numOf = (s: string | undefined): number | null => (s === undefined || s === "-" ? null : Number(s))

/** One line per run: space-separated fields (ids are UUIDs, statuses plain words, numbers or "-"). */
const lineOf = (r: RunRow): string =>
  `${r.monitorId} ${r.orgId} ${r.id} ${r.status} ${r.startedAt} ${num(r.finishedAt)} ${num(r.durationMs)} ${num(r.exitCode)} ${r.startInferred ? 1 : 0} ${r.output === null ? 0 : 1} ${r.pingAt}`

/** The notifications that carry these rows, each at most MAX_PAYLOAD bytes: `P<origin>\n<line>\n…`. */
export const encodePingNews = (origin: string, rows: ReadonlyArray<RunRow>): Array<string> => {
  const head = `P${origin}`
  const out: Array<string> = []
  let current = head
  for (const row of rows) {
    const line = lineOf(row)
    if (current.length + 1 + line.length > MAX_PAYLOAD && current !== head) {
      out.push(current)
      current = head
    }
    current += "\n" + line
  }
  if (current !== head) out.push(current)
  return out
}

export const decodePingNews = (body: string): Array<NewsRun> => {
  const runs: Array<NewsRun> = []
  for (const line of body.split("\n")) {
    if (line === "") continue
    const f = line.split(" ")
    if (f.length < 11) continue
    const status = f[3]
    if (status !== "RUNNING" && status !== "SUCCESS" && status !== "FAIL") continue
    runs.push({
      monitorId: f[0]!,
      orgId: f[1]!,
      id: f[2]!,
      status,
      startedAt: Number(f[4]),
      finishedAt: numOf(f[5]),
      durationMs: numOf(f[6]),
      exitCode: numOf(f[7]),
      startInferred: f[8] === "1",
      hasOutput: f[9] === "1",
      pingAt: Number(f[10])
    })
  }
  return runs
}

const ORIGIN_LENGTH = 36

/** The longest a ping waits for the catch-up before it is paired with what this instance knows. */
export const CATCH_UP_LIMIT_MS = 2_000

export class News extends Effect.Service<News>()("jobmon/News", {
  dependencies: [ShardSet.Default],
  scoped: Effect.gen(function*() {
    const shards = yield* ShardSet
    const database = yield* Database
    const sql = yield* SqlClient.SqlClient
    const runtime = yield* Effect.runtime<never>()
    const origin = crypto.randomUUID()
    const clustered = shards.clustered
    // Catch-up markers go to a channel only this instance listens on: the others never receive
    // them. PostgreSQL delivers every channel's notifications in one commit order, so a marker still
    // comes back after all news committed before it.
    const markerChannel = `${NEWS_CHANNEL}_m${origin.replaceAll("-", "")}`

    const pingListeners: Array<(runs: ReadonlyArray<NewsRun>) => void> = []
    const changeListeners: Array<(change: Change) => void> = []
    const resyncs: Array<Effect.Effect<void>> = []

    /** Waiting for the next catch-up marker, and waiting for the one in flight. */
    let nextWaiters: Array<() => void> = []
    let inFlight: { seq: number; waiters: Array<() => void> } | undefined
    let seq = 0
    let listening = false

    const stats = { pingNotifications: 0, pingRuns: 0, changes: 0, markers: 0, reconnects: 0 }

    const deliver = (payload: string) => {
      const kind = payload.charCodeAt(0)
      const from = payload.slice(1, 1 + ORIGIN_LENGTH)
      if (kind === 89 /* Y */) {
        if (from !== origin || inFlight === undefined) return
        if (Number(payload.slice(2 + ORIGIN_LENGTH)) !== inFlight.seq) return
        const done = inFlight.waiters
        inFlight = undefined
        for (const w of done) {
          try {
            w()
          } catch {
            // one waiter's failure must not keep the others waiting
          }
        }
        sendMarker()
        return
      }
      if (from === origin) return
      if (kind === 80 /* P */) {
        const runs = decodePingNews(payload.slice(1 + ORIGIN_LENGTH))
        stats.pingNotifications++
        stats.pingRuns += runs.length
        for (const l of pingListeners) {
          try {
            l(runs)
          } catch {
            // a listener's failure must not stop the news
          }
        }
      } else if (kind === 67 /* C */) {
        let change: Change
        try {
          change = JSON.parse(payload.slice(2 + ORIGIN_LENGTH)) as Change
        } catch {
          return
        }
        stats.changes++
        for (const l of changeListeners) {
          try {
            l(change)
          } catch {
            // idem
          }
        }
      }
    }

    let client: Pg.Client | undefined

    /** Sends the next catch-up marker when someone waits and none is in flight. */
    const sendMarker = () => {
      if (inFlight !== undefined || nextWaiters.length === 0 || client === undefined || !listening) return
      inFlight = { seq: ++seq, waiters: nextWaiters }
      nextWaiters = []
      stats.markers++
      // A marker needs no durability: committed without waiting for the WAL flush, it holds
      // PostgreSQL's notify lock (taken by every commit that notifies, on every database of the
      // server) for a moment only (docs/performance.md, "Several instances"). Our own text only: no
      // parameters, so the four statements go in one round trip.
      const marker = `Y${origin}:${inFlight.seq}`
      client.query(`begin; set local synchronous_commit to off; select pg_notify('${markerChannel}', '${marker}'); commit`).catch(() => {
        // the connection is going: the reconnect answers the waiters
      })
    }

    /** Answers everyone waiting for a catch-up (a reconnect resynchronised from the database). */
    const releaseWaiters = () => {
      const all = [...(inFlight?.waiters ?? []), ...nextWaiters]
      inFlight = undefined
      nextWaiters = []
      for (const w of all) {
        try {
          w()
        } catch {
          // idem
        }
      }
    }

    /** One LISTEN session: resolves (fails) when the connection is lost. */
    const session = Effect.async<void, Error>((resume) => {
      const c = new Pg.Client(database.pool.options)
      let ended = false
      const fail = (e: Error) => {
        if (ended) return
        ended = true
        listening = false
        if (client === c) client = undefined
        c.removeAllListeners()
        c.on("error", () => {})
        void c.end().catch(() => {})
        resume(Effect.fail(e))
      }
      c.on("error", fail)
      c.on("end", () => fail(new Error("the news LISTEN connection closed")))
      c.on("notification", (n) => {
        if ((n.channel === NEWS_CHANNEL || n.channel === markerChannel) && n.payload !== undefined) deliver(n.payload)
      })
      c.connect()
        .then(() => c.query(`LISTEN ${NEWS_CHANNEL}; LISTEN ${markerChannel}`))
        .then(() => {
          client = c
          listening = true
          // Whatever was committed while nobody listened is read from the database again.
          Runtime.runCallback(runtime)(Effect.forEach(resyncs, (r) => Effect.catchAllCause(r, (cause) => Effect.logError("cluster: resynchronising after LISTEN failed", cause)), { discard: true }), {
            onExit: () => {
              releaseWaiters()
              sendMarker()
            }
          })
        })
        .catch((e: unknown) => fail(e instanceof Error ? e : new Error(String(e))))
      return Effect.sync(() => {
        ended = true
        listening = false
        if (client === c) client = undefined
        c.removeAllListeners()
        c.on("error", () => {})
        void c.end().catch(() => {})
      })
    })

    if (clustered) {
      let first = true
      yield* Effect.suspend(() => {
        if (!first) stats.reconnects++
        first = false
        return session
      }).pipe(
        Effect.catchAll((e) => Effect.logWarning(`cluster: the news connection was lost (${e.message}); reconnecting`)),
        Effect.repeat(Schedule.spaced("500 millis")),
        Effect.forkScoped
      )
    }

    /** Publishes a change to the other instances (after it committed, or inside its transaction). */
    const publish = (change: Change): Effect.Effect<void> =>
      clustered
        ? sql`select pg_notify(${NEWS_CHANNEL}, ${`C${origin}\n${JSON.stringify(change)}`})`.pipe(
          Effect.asVoid,
          Effect.catchAllCause((cause) => Effect.logWarning("cluster: could not publish a change; the others resynchronise on their next reconnect", cause))
        )
        : Effect.void

    /** Calls `then` once this instance has heard all news committed before this call. */
    const afterCatchUp = (then: () => void): void => {
      if (!clustered) return then()
      // Never longer than CATCH_UP_LIMIT_MS: with the LISTEN connection down, go on with what is known.
      let called = false
      const once = () => {
        if (called) return
        called = true
        clearTimeout(timer)
        then()
      }
      const timer = setTimeout(once, CATCH_UP_LIMIT_MS)
      nextWaiters.push(once)
      sendMarker()
    }

    const catchUp: Effect.Effect<void> = Effect.async<void>((resume) => afterCatchUp(() => resume(Effect.void)))

    return {
      clustered,
      origin,
      publish,
      afterCatchUp,
      catchUp,
      onPings: (listener: (runs: ReadonlyArray<NewsRun>) => void) => Effect.sync(() => void pingListeners.push(listener)),
      onChange: (listener: (change: Change) => void) => Effect.sync(() => void changeListeners.push(listener)),
      /** Runs after every (re)connection of the LISTEN session: reload what may have been missed. */
      onResync: (effect: Effect.Effect<void>) => Effect.sync(() => void resyncs.push(effect)),
      listening: () => listening,
      stats
    } as const
  })
}) {}
