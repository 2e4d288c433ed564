import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { Conflict, NotFound, ServiceUnavailable, ValidationError } from "../Domain/Errors.js"
import { CursorParam, IsoTimestamp, NextCursor, PageLimitParam } from "../Domain/Schemas.js"
import { StoredString } from "../Domain/Text.js"

export const IncidentTypeSchema = Schema.Literal("MISSED", "LATE", "FAIL", "ANOMALY")
export const SeveritySchema = Schema.Literal("HIGH", "MEDIUM", "LOW")
export const IncidentStatusSchema = Schema.Literal("OPEN", "ACKNOWLEDGED", "RESOLVED")

export const IncidentNote = Schema.Struct({
  at: IsoTimestamp,
  text: Schema.String,
  by: Schema.String.annotations({ description: "the user's name, or \"system\" for automatic notes" })
})

export const AcknowledgedBy = Schema.Struct({
  userId: Schema.NullOr(Schema.String),
  name: Schema.String,
  email: Schema.NullOr(Schema.String)
})

export const ResolvedBy = Schema.Struct({
  userId: Schema.NullOr(Schema.String).annotations({ description: "null when resolved automatically" }),
  name: Schema.String.annotations({ description: "the user's name, or \"system\" when resolved automatically" })
})

export const Incident = Schema.Struct({
  id: Schema.String,
  type: IncidentTypeSchema,
  severity: SeveritySchema,
  status: IncidentStatusSchema,
  monitorId: Schema.String,
  createdAt: IsoTimestamp,
  acknowledgedAt: Schema.NullOr(IsoTimestamp),
  acknowledgedBy: Schema.NullOr(AcknowledgedBy),
  resolvedAt: Schema.NullOr(IsoTimestamp),
  resolvedBy: Schema.NullOr(ResolvedBy),
  mttrSeconds: Schema.NullOr(Schema.Int).annotations({ description: "resolvedAt − createdAt in whole seconds; null until resolved" }),
  details: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "FAIL: exitCode, durationMs, output, expectedDurationMs; other types: what the rule saw"
  }),
  occurrences: Schema.Int.annotations({ description: "how many times it occurred while active (1 when opened)" }),
  lastOccurredAt: IsoTimestamp,
  runId: Schema.NullOr(Schema.String),
  notes: Schema.Array(IncidentNote)
})
export type Incident = typeof Incident.Type

export const MAX_NOTE_LENGTH = 10_000

export const NoteText = StoredString.pipe(
  Schema.filter((s) => s.trim().length >= 1 || "note must not be empty"),
  Schema.filter((s) => s.length <= MAX_NOTE_LENGTH || `note must be at most ${MAX_NOTE_LENGTH} characters (it has ${s.length})`)
)

/** Acknowledge and resolve take an optional body; an empty body arrives as null. */
export const OptionalNoteRequest = Schema.NullOr(
  Schema.Struct({ note: Schema.optional(Schema.NullOr(NoteText)) })
)

export const NoteRequest = Schema.Struct({ note: NoteText })

export const ListIncidentsParams = Schema.Struct({
  status: Schema.optional(IncidentStatusSchema),
  type: Schema.optional(IncidentTypeSchema),
  monitorId: Schema.optional(Schema.String.annotations({ description: "a monitor id; another organization's matches nothing" })),
  limit: PageLimitParam,
  cursor: CursorParam
})

export const IncidentPage = Schema.Struct({
  incidents: Schema.Array(Incident),
  nextCursor: NextCursor
})

export const IncidentIdPath = Schema.Struct({ incidentId: Schema.String })

export class IncidentsApi extends HttpApiGroup.make("incidents")
  .add(
    HttpApiEndpoint.get("list", "/api/incidents")
      .setUrlParams(ListIncidentsParams)
      .addSuccess(IncidentPage)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "The organization's incidents, newest first")
  )
  .add(
    HttpApiEndpoint.get("get", "/api/incidents/:incidentId")
      .setPath(IncidentIdPath)
      .addSuccess(Incident)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("acknowledge", "/api/incidents/:incidentId/acknowledge")
      .setPath(IncidentIdPath)
      .setPayload(OptionalNoteRequest)
      .addSuccess(Incident)
      .addError(NotFound)
      .addError(Conflict)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Acknowledge an OPEN incident (409 otherwise); the note is optional")
  )
  .add(
    HttpApiEndpoint.post("resolve", "/api/incidents/:incidentId/resolve")
      .setPath(IncidentIdPath)
      .setPayload(OptionalNoteRequest)
      .addSuccess(Incident)
      .addError(NotFound)
      .addError(Conflict)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Resolve an OPEN or ACKNOWLEDGED incident (409 otherwise); the note is optional")
  )
  .add(
    HttpApiEndpoint.post("addNote", "/api/incidents/:incidentId/notes")
      .setPath(IncidentIdPath)
      .setPayload(NoteRequest)
      .addSuccess(Incident, { status: 201 })
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Add a note to an incident (any status)")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Incidents")
{}
