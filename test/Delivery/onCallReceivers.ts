import { Effect } from "effect"
import { type Answer, type Received, receiver } from "./receiver.js"

/**
 * Local stand-ins for PagerDuty's Events API v2 and Opsgenie's Alert API. Each request is checked
 * against the provider's documented format and, like the provider, refused when it breaks it;
 * otherwise answered as the test says (both answer 202 when they accept).
 */

const isString = (v: unknown): v is string => typeof v === "string"
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

/**
 * PagerDuty Events API v2 (https://developer.pagerduty.com/docs/events-api-v2/trigger-events/ and
 * …/acknowledge-events/, …/resolve-events/; https://developer.pagerduty.com/api-reference/368ae3d938c9e-send-an-event-to-pager-duty):
 * POST /v2/enqueue, JSON; routing_key (32 characters for a real key; any non-empty here),
 * event_action trigger|acknowledge|resolve; dedup_key at most 255 characters, required for
 * acknowledge and resolve; a trigger's payload needs summary (≤ 1024), source, severity
 * (critical|error|warning|info); timestamp ISO 8601; links of {href, text?}; the event ≤ 512 KB.
 * Change events (https://developer.pagerduty.com/docs/events-API-v2/03-Change-Events.md): POST
 * /v2/change/enqueue; routing_key, payload.summary (required, ≤ 1024), payload.source,
 * payload.timestamp, payload.custom_details (an object), links; no event_action.
 */
export const pagerDutyProblems = (request: Received): Array<string> => {
  const path = new URL(request.url, "http://x").pathname
  if (path === "/v2/change/enqueue") return pagerDutyChangeProblems(request)
  const problems: Array<string> = []
  if (path !== "/v2/enqueue") problems.push(`path ${request.url}`)
  if (!String(request.headers["content-type"] ?? "").startsWith("application/json")) problems.push("content-type")
  if (request.raw.length > 512 * 1024) problems.push("over 512 KB")
  const e = request.body
  if (typeof e !== "object" || e === null) return [...problems, "not a JSON object"]
  if (!isString(e.routing_key) || e.routing_key === "") problems.push("routing_key")
  if (!["trigger", "acknowledge", "resolve"].includes(e.event_action)) problems.push(`event_action ${e.event_action}`)
  if (e.dedup_key !== undefined && (!isString(e.dedup_key) || e.dedup_key.length > 255)) problems.push("dedup_key")
  if (e.event_action !== "trigger" && !isString(e.dedup_key)) problems.push("dedup_key: required to acknowledge or resolve")
  if (e.event_action === "trigger") {
    const p = e.payload
    if (typeof p !== "object" || p === null) return [...problems, "payload: missing"]
    if (!isString(p.summary) || p.summary === "" || p.summary.length > 1024) problems.push("payload.summary")
    if (!isString(p.source) || p.source === "") problems.push("payload.source")
    if (!["critical", "error", "warning", "info"].includes(p.severity)) problems.push(`payload.severity ${p.severity}`)
    if (p.timestamp !== undefined && (!isString(p.timestamp) || !ISO.test(p.timestamp))) problems.push("payload.timestamp")
    for (const f of ["component", "group", "class"]) if (p[f] !== undefined && !isString(p[f])) problems.push(`payload.${f}`)
    if (p.custom_details !== undefined && (typeof p.custom_details !== "object" || p.custom_details === null)) problems.push("payload.custom_details")
    if (e.links !== undefined) {
      if (!Array.isArray(e.links)) problems.push("links")
      else e.links.forEach((l: any, i: number) => (!isString(l?.href) || (l.text !== undefined && !isString(l.text))) && problems.push(`links.${i}`))
    }
  }
  return problems
}

const pagerDutyChangeProblems = (request: Received): Array<string> => {
  const problems: Array<string> = []
  if (!String(request.headers["content-type"] ?? "").startsWith("application/json")) problems.push("content-type")
  const e = request.body
  if (typeof e !== "object" || e === null) return [...problems, "not a JSON object"]
  const known = new Set(["routing_key", "payload", "links"])
  for (const key of Object.keys(e)) if (!known.has(key)) problems.push(`${key}: not a change event field`)
  if (!isString(e.routing_key) || e.routing_key === "") problems.push("routing_key")
  const p = e.payload
  if (typeof p !== "object" || p === null) return [...problems, "payload: missing"]
  if (!isString(p.summary) || p.summary === "" || p.summary.length > 1024) problems.push("payload.summary")
  if (p.source !== undefined && !isString(p.source)) problems.push("payload.source")
  if (p.timestamp !== undefined && (!isString(p.timestamp) || !ISO.test(p.timestamp))) problems.push("payload.timestamp")
  if (p.custom_details !== undefined && (typeof p.custom_details !== "object" || p.custom_details === null)) problems.push("payload.custom_details")
  if (e.links !== undefined) {
    if (!Array.isArray(e.links)) problems.push("links")
    else e.links.forEach((l: any, i: number) => (!isString(l?.href) || (l.text !== undefined && !isString(l.text))) && problems.push(`links.${i}`))
  }
  return problems
}

/**
 * Opsgenie Alert API (https://docs.opsgenie.com/docs/alert-api): `Authorization: GenieKey <key>`;
 * create POST /v2/alerts with message (required, ≤ 130), alias ≤ 512, description ≤ 15,000, tags
 * (≤ 20, each ≤ 50), details (string values), entity ≤ 512, source ≤ 100, priority P1–P5;
 * acknowledge and close POST /v2/alerts/{identifier}/acknowledge|close?identifierType=alias with
 * optional user (≤ 100), source (≤ 100), note (≤ 25,000). Invalid requests answer 422.
 */
export const opsgenieProblems = (request: Received): Array<string> => {
  const problems: Array<string> = []
  const url = new URL(request.url, "http://x")
  const b = request.body
  if (typeof b !== "object" || b === null) return ["not a JSON object"]
  if (!String(request.headers["content-type"] ?? "").startsWith("application/json")) problems.push("content-type")
  if (url.pathname === "/v2/alerts") {
    if (!isString(b.message) || b.message === "" || b.message.length > 130) problems.push("message")
    if (b.alias !== undefined && (!isString(b.alias) || b.alias.length > 512)) problems.push("alias")
    if (b.description !== undefined && (!isString(b.description) || b.description.length > 15000)) problems.push("description")
    if (b.tags !== undefined && (!Array.isArray(b.tags) || b.tags.length > 20 || b.tags.some((t: unknown) => !isString(t) || t.length > 50))) problems.push("tags")
    if (b.details !== undefined) {
      if (typeof b.details !== "object" || Object.values(b.details).some((v) => !isString(v))) problems.push("details")
      else if (Object.entries(b.details).reduce((n, [k, v]) => n + k.length + (v as string).length, 0) > 8000) problems.push("details: over 8000")
    }
    if (b.entity !== undefined && (!isString(b.entity) || b.entity.length > 512)) problems.push("entity")
    if (b.source !== undefined && (!isString(b.source) || b.source.length > 100)) problems.push("source")
    if (b.priority !== undefined && !["P1", "P2", "P3", "P4", "P5"].includes(b.priority)) problems.push("priority")
  } else if (/^\/v2\/alerts\/[^/]+\/(acknowledge|close)$/.test(url.pathname)) {
    if (url.searchParams.get("identifierType") !== "alias") problems.push("identifierType")
    if (b.user !== undefined && (!isString(b.user) || b.user.length > 100)) problems.push("user")
    if (b.source !== undefined && (!isString(b.source) || b.source.length > 100)) problems.push("source")
    if (b.note !== undefined && (!isString(b.note) || b.note.length > 25000)) problems.push("note")
  } else problems.push(`path ${url.pathname}`)
  return problems
}

const checked = (
  problemsOf: (request: Received) => Array<string>,
  refusal: Answer,
  guard: (request: Received) => Answer | undefined,
  answers: ReadonlyArray<Answer> | ((request: Received) => Answer)
) => {
  const refused: Array<Array<string>> = []
  let n = 0
  return receiver((request) => {
    const denied = guard(request)
    if (denied !== undefined) return denied
    const problems = problemsOf(request)
    if (problems.length > 0) {
      refused.push(problems)
      return refusal
    }
    const answer = typeof answers === "function" ? answers(request) : answers[Math.min(n, answers.length - 1)]!
    n++
    return answer
  }).pipe(Effect.map((r) => ({ ...r, base: r.url.replace(/\/hook$/, ""), refused })))
}

const ACCEPTED = { status: 202, body: "{\"status\":\"success\",\"message\":\"Event processed\"}" }

/** PagerDuty: 400 `invalid event` to what it would refuse; 202 by default. */
export const pagerDutyReceiver = (answers: ReadonlyArray<Answer> | ((request: Received) => Answer) = [ACCEPTED]) =>
  checked(pagerDutyProblems, { status: 400, body: "{\"status\":\"invalid event\",\"message\":\"Event object is invalid\"}" }, () => undefined, answers)

/** Opsgenie: 401 without `GenieKey <key>`, 422 to what it would refuse; 202 by default. */
export const opsgenieReceiver = (key: string, answers: ReadonlyArray<Answer> | ((request: Received) => Answer) = [{ status: 202, body: "{\"result\":\"Request will be processed\"}" }]) =>
  checked(
    opsgenieProblems,
    { status: 422, body: "{\"message\":\"Request body is not processable\"}" },
    (request) => (request.headers["authorization"] === `GenieKey ${key}` ? undefined : { status: 401, body: "{\"message\":\"Could not authenticate\"}" }),
    answers
  )
