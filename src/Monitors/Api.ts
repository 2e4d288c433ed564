import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { RequiredScope } from "../Auth/Access.js"
import { Authentication } from "../Auth/Api.js"
import { Conflict, NotFound, ServiceUnavailable, ValidationError } from "../Domain/Errors.js"
import { allOptional, IntFromQuery, IsoTimestamp, MonitorIdPath } from "../Domain/Schemas.js"
import { StoredString } from "../Domain/Text.js"
import { MAX_THRESHOLD } from "../Engine/Model.js"

export const ScheduleType = Schema.Literal("cron", "interval")

export const ScheduleInputSchema = Schema.Struct({
  type: ScheduleType,
  expression: StoredString.annotations({
    description: "cron: 5 fields or a macro such as @daily; interval: a duration such as 30s, 5m, 1h, 1d"
  }),
  timezone: Schema.optional(StoredString.annotations({ description: "IANA zone name; default UTC" }))
})

export const ScheduleSchema = Schema.Struct({
  type: ScheduleType,
  expression: Schema.String,
  timezone: Schema.String
})

export const SlaSchema = Schema.Struct({
  durationTarget: Schema.Literal("p95", "p99"),
  maxDurationMs: Schema.Int.pipe(Schema.positive())
})

export const MonitorStatus = Schema.Literal("NEW", "OK", "RUNNING", "LATE", "MISSED", "FAILING", "PAUSED")

export const MaintenanceInfo = Schema.Struct({
  windowId: Schema.String,
  name: Schema.String,
  endsAt: IsoTimestamp,
  remainingSeconds: Schema.Int
})

/** What a slug may be: also checked by the database (sql/0026_ping_urls.sql). */
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9_-]{0,99}$/
export const SLUG_RULE = "1 to 100 characters: lowercase letters a-z, digits, - and _, starting with a letter or digit"
export const Slug = Schema.String.pipe(
  Schema.filter((s) => SLUG_PATTERN.test(s) || `slug must be ${SLUG_RULE} (got ${JSON.stringify(s.slice(0, 40))})`)
).annotations({ description: `${SLUG_RULE}; unique among the organization's monitors` })

export const Monitor = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  slug: Schema.NullOr(Schema.String).annotations({
    description: "the monitor's slug (ping URL /ping/<pingKey>/<slug>, badges, imports), or null"
  }),
  pingUrl: Schema.optional(Schema.String).annotations({
    description: "the monitor's ping URL (no token needed: the URL is the credential); shown to write and admin " +
      "credentials only, absent for read tokens. POST /api/monitors/{id}/ping-url/rotate replaces it"
  }),
  schedule: ScheduleSchema,
  status: MonitorStatus,
  healthScore: Schema.Number,
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp,
  graceSeconds: Schema.Int,
  maxRuntimeSeconds: Schema.NullOr(Schema.Int),
  maxOutputSizeKb: Schema.Int,
  captureOutput: Schema.Boolean,
  sla: Schema.NullOr(SlaSchema),
  tags: Schema.Array(Schema.String),
  autoResolve: Schema.Boolean,
  failureThreshold: Schema.Int,
  recoveryThreshold: Schema.Int,
  paused: Schema.Boolean,
  lastPingAt: Schema.NullOr(IsoTimestamp),
  nextExpectedAt: Schema.NullOr(IsoTimestamp),
  inMaintenance: Schema.Boolean,
  maintenance: Schema.NullOr(MaintenanceInfo)
})
export type Monitor = typeof Monitor.Type

const Name = StoredString.pipe(
  Schema.filter((s) => s.trim().length >= 1 || "name must not be empty"),
  Schema.filter((s) => s.length <= 200 || `name must be at most 200 characters (it has ${s.length})`)
)
const GraceSeconds = Schema.Int.pipe(Schema.between(0, 31_536_000)).annotations({
  description: "seconds after an expected time before the run counts as MISSED (0 to 31536000, default 60)"
})
const MaxRuntimeSeconds = Schema.NullOr(Schema.Int.pipe(Schema.between(1, 31_536_000)))
const MaxOutputSizeKb = Schema.Int.pipe(Schema.between(1, 1024))
/** failureThreshold and recoveryThreshold: 1 to MAX_THRESHOLD (sql/0024 checks it too). */
const threshold = (field: string, description: string) =>
  Schema.Int.pipe(Schema.between(1, MAX_THRESHOLD)).annotations({
    description,
    // For every way a value can be wrong (not a number, not whole, out of range): one clear message.
    message: () => ({ message: `${field} must be a whole number from 1 to ${MAX_THRESHOLD}`, override: true })
  })
const FailureThreshold = threshold(
  "failureThreshold",
  `failed runs or missed occurrences in a row before a FAIL or MISSED incident opens (1 to ${MAX_THRESHOLD}, default 1: the first one)`
)
const RecoveryThreshold = threshold(
  "recoveryThreshold",
  `successful runs in a row before an open FAIL or MISSED incident resolves automatically (1 to ${MAX_THRESHOLD}, default 1)`
)
const Tags = Schema.Array(StoredString.pipe(Schema.minLength(1), Schema.maxLength(64))).pipe(Schema.maxItems(50))

export const CreateMonitorRequest = Schema.Struct({
  name: Name,
  slug: Schema.optional(Schema.NullOr(Slug)),
  schedule: ScheduleInputSchema,
  graceSeconds: Schema.optional(GraceSeconds),
  maxRuntimeSeconds: Schema.optional(MaxRuntimeSeconds),
  maxOutputSizeKb: Schema.optional(MaxOutputSizeKb),
  captureOutput: Schema.optional(Schema.Boolean),
  sla: Schema.optional(Schema.NullOr(SlaSchema)),
  tags: Schema.optional(Tags),
  autoResolve: Schema.optional(Schema.Boolean),
  failureThreshold: Schema.optional(FailureThreshold),
  recoveryThreshold: Schema.optional(RecoveryThreshold)
})
export type CreateMonitorRequest = typeof CreateMonitorRequest.Type

/** PATCH: the create request's fields, every one optional (null clears maxRuntimeSeconds and sla, as on create). */
export const UpdateMonitorRequest = Schema.Struct(allOptional(CreateMonitorRequest.fields))
export type UpdateMonitorRequest = typeof UpdateMonitorRequest.Type

/**
 * The order `GET /api/monitors?sort=status` lists monitors in: the most urgent first. A `-` before a
 * sort (`-status`) reverses it.
 */
export const STATUS_ORDER = ["FAILING", "MISSED", "LATE", "RUNNING", "NEW", "OK", "PAUSED"] as const

/** What a list of monitors can be sorted by; `createdAt` (the spec's order) when not given. */
export const MonitorSort = Schema.Literal(
  "createdAt",
  "-createdAt",
  "name",
  "-name",
  "status",
  "-status",
  "lastPingAt",
  "-lastPingAt",
  "nextExpectedAt",
  "-nextExpectedAt",
  "healthScore",
  "-healthScore"
).annotations({
  description: "createdAt (default), name (case-insensitive), status (most urgent first: " + STATUS_ORDER.join(", ") +
    "), lastPingAt, nextExpectedAt (monitors without one last, in either direction) or healthScore; " +
    "a leading - reverses the order. Ties are broken by id"
})
export type MonitorSort = typeof MonitorSort.Type

/** A query parameter that may be given more than once (`?status=LATE&status=MISSED`). */
const Repeatable = Schema.Union(Schema.String, Schema.Array(Schema.String))

/** The longest `q`: a monitor's name has at most 200 characters. */
export const MAX_QUERY_LENGTH = 200

export const ListMonitorsParams = Schema.Struct({
  page: Schema.optional(IntFromQuery.pipe(Schema.between(1, 1_000_000_000))).annotations({
    description: "1 to 1000000000, default 1; not with cursor"
  }),
  limit: Schema.optional(IntFromQuery.pipe(Schema.between(1, 100))).annotations({ description: "1 to 100, default 50" }),
  cursor: Schema.optional(Schema.String).annotations({
    description: "nextCursor of the previous page (of the same sort), instead of page: a page starts right after " +
      "the row it names, so monitors that change while a client pages are neither shown twice nor skipped"
  }),
  q: Schema.optional(
    StoredString.pipe(Schema.maxLength(MAX_QUERY_LENGTH)).annotations({
      description: "only monitors whose name contains this text, ignoring letter case; empty: no filter"
    })
  ),
  status: Schema.optional(Repeatable).annotations({
    description: "only monitors with one of these statuses (NEW, OK, RUNNING, LATE, MISSED, FAILING, PAUSED): " +
      "comma separated, or the parameter repeated"
  }),
  tag: Schema.optional(Repeatable).annotations({
    description: "only monitors carrying this tag (exact match); repeated: carrying every one of them"
  }),
  slug: Schema.optional(Slug).annotations({
    description: "only the monitor with this slug (exact match): a page of zero or one monitor"
  }),
  sort: Schema.optional(MonitorSort)
})
export type ListMonitorsParams = typeof ListMonitorsParams.Type

export const MonitorPage = Schema.Struct({
  monitors: Schema.Array(Monitor),
  total: Schema.Int.annotations({ description: "monitors matching the filters, on every page" }),
  page: Schema.Int.annotations({
    description: "this page's number; after a cursor, the number of the page its first monitor would be on"
  }),
  limit: Schema.Int,
  nextCursor: Schema.NullOr(Schema.String).annotations({
    description: "pass as cursor (with the same sort and filters) for the next page; null on the last page"
  })
})

/** The most tags a summary lists. */
export const MAX_SUMMARY_TAGS = 500

export const MonitorSummary = Schema.Struct({
  total: Schema.Int.annotations({ description: "the organization's monitors" }),
  byStatus: Schema.Struct({
    NEW: Schema.Int,
    OK: Schema.Int,
    RUNNING: Schema.Int,
    LATE: Schema.Int,
    MISSED: Schema.Int,
    FAILING: Schema.Int,
    PAUSED: Schema.Int
  }).annotations({ description: "how many monitors have each status (every status present, 0 when none)" }),
  tags: Schema.Array(Schema.Struct({ tag: Schema.String, monitors: Schema.Int })).annotations({
    description: `the tags the monitors carry and how many carry each, the most used first (ties by tag), at most ${MAX_SUMMARY_TAGS}`
  })
})
export type MonitorSummary = typeof MonitorSummary.Type

export const PreviewRequest = Schema.Struct({
  schedule: ScheduleInputSchema,
  from: Schema.optional(StoredString.annotations({ description: "ISO 8601 timestamp; default now" })),
  count: Schema.optional(Schema.Int.pipe(Schema.between(1, 100)))
})

export const PreviewResponse = Schema.Struct({
  schedule: ScheduleSchema,
  description: Schema.String,
  occurrences: Schema.Array(IsoTimestamp)
})

export class MonitorsApi extends HttpApiGroup.make("monitors")
  .add(
    HttpApiEndpoint.post("create", "/api/monitors")
      .setPayload(CreateMonitorRequest)
      .addSuccess(Monitor, { status: 201 })
      .addError(ValidationError)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Create a monitor (409 when the organization has MAX_MONITORS_PER_ORG already, or the slug is taken)")
  )
  .add(
    HttpApiEndpoint.get("list", "/api/monitors")
      .setUrlParams(ListMonitorsParams)
      .addSuccess(MonitorPage)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "List the organization's monitors, oldest first unless sorted; filter by name, status, tag")
      .annotate(
        OpenApi.Description,
        "Page by number (`page`) or, steadier while monitors change, by `cursor` (each page's `nextCursor`). " +
          "`total` counts the monitors matching the filters."
      )
  )
  .add(
    HttpApiEndpoint.get("summary", "/api/monitors/summary")
      .addSuccess(MonitorSummary)
      .annotate(OpenApi.Summary, "How many monitors have each status, and the tags in use")
  )
  .add(
    HttpApiEndpoint.get("get", "/api/monitors/:monitorId")
      .setPath(MonitorIdPath)
      .addSuccess(Monitor)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.patch("update", "/api/monitors/:monitorId")
      .setPath(MonitorIdPath)
      .setPayload(UpdateMonitorRequest)
      .addSuccess(Monitor)
      .addError(NotFound)
      .addError(ValidationError)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Change a monitor's settings (409 when the slug is another monitor's)")
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/monitors/:monitorId")
      .setPath(MonitorIdPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("pause", "/api/monitors/:monitorId/pause")
      .setPath(MonitorIdPath)
      .addSuccess(Monitor)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Pause a monitor: pings are recorded, no incidents are raised")
  )
  .add(
    HttpApiEndpoint.post("resume", "/api/monitors/:monitorId/resume")
      .setPath(MonitorIdPath)
      .addSuccess(Monitor)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("rotatePingUrl", "/api/monitors/:monitorId/ping-url/rotate")
      .setPath(MonitorIdPath)
      .addSuccess(Monitor)
      .addError(NotFound)
      .annotate(RequiredScope, "write")
      .annotate(OpenApi.Summary, "Give the monitor a new pingUrl: the old one answers 404 from now on")
  )
  .add(
    HttpApiEndpoint.post("preview", "/api/schedules/preview")
      .setPayload(PreviewRequest)
      .addSuccess(PreviewResponse)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "The next expected times of a schedule, in its zone")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Monitors")
{}
