import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { Conflict, NotFound, ServiceUnavailable, ValidationError } from "../Domain/Errors.js"
import { allOptional, IntFromQuery, IsoTimestamp } from "../Domain/Schemas.js"
import { StoredString } from "../Domain/Text.js"

/**
 * Maintenance windows (interface spec "Maintenance window", docs/decisions.md#maintenance-windows;
 * docs/maintenance.md).
 */

export const WindowStatus = Schema.Literal("scheduled", "active", "overridden", "ended")
export type WindowStatus = typeof WindowStatus.Type

export const Notifications = Schema.Struct({
  beforeStart: Schema.NullOr(Schema.Int).annotations({ description: "seconds before a period's start for maintenance.upcoming; null: none" }),
  onStart: Schema.Boolean,
  onEnd: Schema.Boolean,
  channels: Schema.Array(Schema.String).annotations({ description: "chat:<chat webhook name> or webhook:<webhook id>" })
})
export type Notifications = typeof Notifications.Type

export const NotificationsInput = Schema.Struct({
  beforeStart: Schema.optional(Schema.NullOr(Schema.Int)),
  onStart: Schema.optional(Schema.Boolean),
  onEnd: Schema.optional(Schema.Boolean),
  channels: Schema.optional(Schema.Array(StoredString))
})
export type NotificationsInput = typeof NotificationsInput.Type

export const MaintenanceWindow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  monitorIds: Schema.Array(Schema.String),
  kind: Schema.Literal("one-time", "recurring"),
  start: IsoTimestamp.annotations({ description: "one-time: the start; recurring: the DTSTART anchor of the rule" }),
  end: Schema.NullOr(IsoTimestamp),
  rrule: Schema.NullOr(Schema.String),
  duration: Schema.NullOr(Schema.Int).annotations({ description: "seconds (recurring)" }),
  timezone: Schema.String,
  reason: Schema.NullOr(Schema.String),
  notifications: Notifications,
  status: WindowStatus,
  nextStart: Schema.NullOr(IsoTimestamp).annotations({ description: "the start of the next period that has not begun" }),
  currentEnd: Schema.NullOr(IsoTimestamp).annotations({ description: "the end of the running period (active or overridden)" }),
  overrideEndsAt: Schema.NullOr(IsoTimestamp).annotations({ description: "while overridden: when suppression resumes" }),
  overrideReason: Schema.NullOr(Schema.String),
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp
})
export type MaintenanceWindow = typeof MaintenanceWindow.Type

const Name = StoredString.pipe(
  Schema.filter((s) => s.trim().length >= 1 || "name must not be empty"),
  Schema.filter((s) => s.length <= 200 || `name must be at most 200 characters (it has ${s.length})`)
)
const Reason = StoredString.pipe(
  Schema.filter((s) => s.length <= 2000 || `reason must be at most 2000 characters (it has ${s.length})`)
)

export const CreateWindowRequest = Schema.Struct({
  name: Name,
  monitorIds: Schema.Array(StoredString),
  start: Schema.optional(StoredString.annotations({ description: "ISO 8601 with Z or an offset" })),
  end: Schema.optional(StoredString),
  rrule: Schema.optional(StoredString),
  duration: Schema.optional(Schema.Int),
  timezone: Schema.optional(StoredString),
  reason: Schema.optional(Schema.NullOr(Reason)),
  notifications: Schema.optional(Schema.NullOr(NotificationsInput))
})
export type CreateWindowRequest = typeof CreateWindowRequest.Type

/**
 * PATCH: the create request's fields, every one optional. Unlike create, start, end, rrule and
 * duration take null (null end, rrule, duration: how a window changes kind); null clears reason and
 * notifications, as on create.
 */
export const UpdateWindowRequest = Schema.Struct({
  ...allOptional(CreateWindowRequest.fields),
  start: Schema.optional(Schema.NullOr(StoredString)),
  end: Schema.optional(Schema.NullOr(StoredString)),
  rrule: Schema.optional(Schema.NullOr(StoredString)),
  duration: Schema.optional(Schema.NullOr(Schema.Int))
})
export type UpdateWindowRequest = typeof UpdateWindowRequest.Type

export const PreviewWindowRequest = Schema.Struct({
  name: Schema.optional(StoredString),
  monitorIds: Schema.optional(Schema.Array(StoredString)),
  start: Schema.optional(StoredString),
  end: Schema.optional(StoredString),
  rrule: Schema.optional(StoredString),
  duration: Schema.optional(Schema.Int),
  timezone: Schema.optional(StoredString),
  reason: Schema.optional(Schema.NullOr(StoredString)),
  notifications: Schema.optional(Schema.NullOr(NotificationsInput)),
  from: Schema.optional(StoredString.annotations({ description: "ISO 8601 timestamp; default now" })),
  count: Schema.optional(Schema.Int.pipe(Schema.between(1, 100)))
})
export type PreviewWindowRequest = typeof PreviewWindowRequest.Type

export const OverrideRequest = Schema.Struct({
  reason: Reason,
  durationSeconds: Schema.Int
})

export const Period = Schema.Struct({ start: IsoTimestamp, end: IsoTimestamp })
export const Occurrences = Schema.Struct({ occurrences: Schema.Array(Period) })

export const ActiveWindow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  monitorIds: Schema.Array(Schema.String),
  startedAt: IsoTimestamp,
  endsAt: IsoTimestamp,
  remainingSeconds: Schema.Int
})

export const HistoryOverride = Schema.Struct({
  reason: Schema.String,
  startedAt: IsoTimestamp,
  endedAt: IsoTimestamp
})

export const HistoryEntry = Schema.Struct({
  windowId: Schema.String,
  name: Schema.String,
  monitorIds: Schema.Array(Schema.String),
  startedAt: IsoTimestamp,
  endedAt: Schema.NullOr(IsoTimestamp).annotations({ description: "null while the period runs" }),
  endsAt: IsoTimestamp.annotations({ description: "the scheduled end" }),
  endReason: Schema.NullOr(Schema.Literal("completed", "deleted", "updated")),
  overrides: Schema.Array(HistoryOverride),
  suppressedIncidents: Schema.Int
})
export type HistoryEntry = typeof HistoryEntry.Type

export const WindowIdPath = Schema.Struct({ windowId: Schema.String })

export const OccurrencesParams = Schema.Struct({
  from: Schema.optional(Schema.String.annotations({ description: "ISO 8601 timestamp; default now" })),
  count: Schema.optional(IntFromQuery.pipe(Schema.between(1, 100))).annotations({ description: "1 to 100, default 10" })
})

export const HistoryParams = Schema.Struct({
  from: Schema.optional(Schema.String.annotations({ description: "YYYY-MM-DD (UTC); default 30 days before to" })),
  to: Schema.optional(Schema.String.annotations({ description: "YYYY-MM-DD (UTC), inclusive; default today" }))
})

export class MaintenanceApi extends HttpApiGroup.make("maintenance")
  .add(
    HttpApiEndpoint.post("create", "/api/maintenance-windows")
      .setPayload(CreateWindowRequest)
      .addSuccess(MaintenanceWindow, { status: 201 })
      .addError(ValidationError)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Create a maintenance window: one-time (start, end) or recurring (rrule, duration)")
  )
  .add(
    HttpApiEndpoint.get("list", "/api/maintenance-windows")
      .addSuccess(Schema.Struct({ windows: Schema.Array(MaintenanceWindow) }))
      .annotate(OpenApi.Summary, "The organization's maintenance windows, oldest first")
  )
  .add(
    HttpApiEndpoint.get("active", "/api/maintenance-windows/active")
      .addSuccess(Schema.Array(ActiveWindow))
      .annotate(OpenApi.Summary, "Windows suppressing alerts now (not overridden)")
  )
  .add(
    HttpApiEndpoint.get("history", "/api/maintenance-windows/history")
      .setUrlParams(HistoryParams)
      .addSuccess(Schema.Array(HistoryEntry))
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Maintenance periods overlapping [from 00:00 UTC, to 24:00 UTC], newest first")
  )
  .add(
    HttpApiEndpoint.post("preview", "/api/maintenance-windows/preview")
      .setPayload(PreviewWindowRequest)
      .addSuccess(Occurrences)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "The next periods of a window body; nothing is stored")
  )
  .add(
    HttpApiEndpoint.get("get", "/api/maintenance-windows/:windowId")
      .setPath(WindowIdPath)
      .addSuccess(MaintenanceWindow)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.patch("update", "/api/maintenance-windows/:windowId")
      .setPath(WindowIdPath)
      .setPayload(UpdateWindowRequest)
      .addSuccess(MaintenanceWindow)
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Change a window; takes effect at once")
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/maintenance-windows/:windowId")
      .setPath(WindowIdPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Delete a window; a running period ends at once")
  )
  .add(
    HttpApiEndpoint.post("override", "/api/maintenance-windows/:windowId/override")
      .setPath(WindowIdPath)
      .setPayload(OverrideRequest)
      .addSuccess(MaintenanceWindow)
      .addError(NotFound)
      .addError(Conflict)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Resume alerts for durationSeconds in an active window (409 otherwise)")
  )
  .add(
    HttpApiEndpoint.get("occurrences", "/api/maintenance-windows/:windowId/occurrences")
      .setPath(WindowIdPath)
      .setUrlParams(OccurrencesParams)
      .addSuccess(Occurrences)
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "The next periods of a window, in UTC")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Maintenance windows")
{}
