import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { CurrentPrincipal } from "../Auth/Principal.js"
import { unavailableOnStatementTimeout as bounded } from "../Db/StatementTimeout.js"
import { ALERT_CHANNEL_TYPES } from "../Delivery/ChannelRegistry.js"
import { Engine } from "../Engine/Engine.js"
import { Api } from "../Http/Api.js"
import { Metrics } from "./Metrics.js"
import { type MonitorSample, renderMonitors } from "./Monitors.js"

/** Every channel type's outbox depth is reported, 0 when nothing waits (a series that comes and goes is harder to alert on). */
const CHANNEL_TYPES = ["webhook", "discord", ...ALERT_CHANNEL_TYPES.map((type) => type.type)]

export const MetricsHttpLive = HttpApiBuilder.group(Api, "metrics", (handlers) =>
  Effect.gen(function*() {
    const metrics = yield* Metrics
    const engine = yield* Engine
    const sql = yield* SqlClient.SqlClient

    /** The organization's monitors as the API shows them, with their unresolved incidents: one statement. */
    const monitorsOf = (orgId: string) =>
      sql<MonitorSample>`
        select m.id, m.name, m.tags,
               case when m.paused then 'PAUSED' else m.status end as status,
               m.health_score, m.last_ping_at, m.next_expected_at,
               coalesce(i.open, 0)::int as open_incidents
        from monitors m
        left join (
          -- the predicate of the partial index of active incidents (sql/0003): resolved ones are never read
          select monitor_id, count(*) as open from incidents
          where org_id = ${orgId} and status in ('OPEN', 'ACKNOWLEDGED')
          group by monitor_id
        ) i on i.monitor_id = m.id
        where m.org_id = ${orgId} and m.deleted_at is null
        order by m.created_at, m.id`.pipe(Effect.orDie)

    /** Deliveries waiting in the outbox, by channel type (every organization's: the outbox is the service's). */
    const queueDepth = sql<{ channel: string; n: number }>`
      select case when d.webhook_id is not null then 'webhook'
                  when d.chat_webhook_id is not null then 'discord'
                  else coalesce(c.type, 'unknown') end as channel,
             count(*)::int as n
      from webhook_deliveries d left join alert_channels c on c.id = d.channel_id
      where d.status = 'pending'
      group by 1`.pipe(Effect.orDie)

    return handlers.handle("scrape", () =>
      bounded(Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const [monitors, depth] = yield* Effect.all([monitorsOf(principal.orgId), queueDepth], { concurrency: 2 })
        const counts = new Map(CHANNEL_TYPES.map((channel) => [channel, 0]))
        for (const { channel, n } of depth) counts.set(channel, n)
        metrics.setQueueDepth([...counts].map(([channel, n]) => ({ channel, n })))
        metrics.setEngineMonitors(engine.size())
        const service = yield* Effect.promise(() => metrics.render())
        return `${service}\n${yield* renderMonitors(monitors)}`
      }))
    )
  })
)
