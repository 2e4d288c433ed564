import { Effect } from "effect"
import { type Answer, type Received, receiver } from "./receiver.js"

/**
 * A local stand-in for a Teams Workflows webhook ("Post to a channel when a webhook request is
 * received"): the message must be the envelope Workflows documents
 * (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook:
 * `{type: "message", attachments: [{contentType: "application/vnd.microsoft.card.adaptive", content}]}`)
 * and each card valid against the Adaptive Card schema's required properties
 * (https://adaptivecards.io/explorer/, https://adaptivecards.io/schemas/adaptive-card.json): an
 * AdaptiveCard has `type` and `version` (at most 1.5, what Teams renders), a TextBlock `text`, a
 * FactSet `facts` of `{title, value}`, a RichTextBlock `inlines` of TextRuns with `text`, an
 * Action.OpenUrl `title` and an absolute `url`; Teams takes at most 28 KB a message. A message that
 * breaks one is answered 400, as the trigger refuses a body it cannot read; otherwise as the test says
 * (the trigger's own answer is 202 Accepted).
 */

const ELEMENTS = new Set(["TextBlock", "FactSet", "RichTextBlock", "Container", "ColumnSet", "Image"])
const ACTIONS = new Set(["Action.OpenUrl", "Action.Submit", "Action.ShowCard", "Action.ToggleVisibility", "Action.Execute"])
const VERSIONS = new Set(["1.0", "1.1", "1.2", "1.3", "1.4", "1.5"])

const isText = (v: unknown): v is string => typeof v === "string" && v.length > 0

const element = (where: string, e: any, problems: Array<string>) => {
  if (typeof e !== "object" || e === null || !ELEMENTS.has(e.type)) return problems.push(`${where}: unknown element ${e?.type}`)
  switch (e.type) {
    case "TextBlock":
      if (!isText(e.text)) problems.push(`${where}.text: required`)
      break
    case "FactSet":
      if (!Array.isArray(e.facts) || e.facts.length === 0) problems.push(`${where}.facts: required`)
      else e.facts.forEach((f: any, i: number) => {
        if (typeof f?.title !== "string") problems.push(`${where}.facts.${i}.title: required`)
        if (typeof f?.value !== "string") problems.push(`${where}.facts.${i}.value: required`)
      })
      break
    case "RichTextBlock":
      if (!Array.isArray(e.inlines) || e.inlines.length === 0) problems.push(`${where}.inlines: required`)
      else e.inlines.forEach((r: any, i: number) => {
        if (typeof r === "string") return
        if (r?.type !== "TextRun") problems.push(`${where}.inlines.${i}: type ${r?.type}`)
        if (!isText(r?.text)) problems.push(`${where}.inlines.${i}.text: required`)
      })
      break
  }
}

/** What Teams would refuse in a message body; empty when it is valid. */
export const teamsProblems = (body: any, raw?: Buffer): Array<string> => {
  const problems: Array<string> = []
  if (typeof body !== "object" || body === null) return ["not a JSON object"]
  const size = raw?.length ?? Buffer.byteLength(JSON.stringify(body))
  if (size > 28 * 1024) problems.push(`message: ${size} bytes > 28 KB`)
  if (body.type !== "message") problems.push(`type: ${body.type}, not message`)
  if (!Array.isArray(body.attachments) || body.attachments.length === 0) return [...problems, "attachments: missing"]
  body.attachments.forEach((a: any, i: number) => {
    const where = `attachments.${i}`
    if (a?.contentType !== "application/vnd.microsoft.card.adaptive") problems.push(`${where}.contentType: ${a?.contentType}`)
    const card = a?.content
    if (typeof card !== "object" || card === null) return problems.push(`${where}.content: missing`)
    if (card.type !== "AdaptiveCard") problems.push(`${where}.content.type: ${card.type}`)
    if (!VERSIONS.has(card.version)) problems.push(`${where}.content.version: ${card.version}`)
    if (card.body !== undefined && !Array.isArray(card.body)) problems.push(`${where}.content.body: not an array`)
    for (const [j, e] of (card.body ?? []).entries()) element(`${where}.content.body.${j}`, e, problems)
    if (card.actions !== undefined) {
      if (!Array.isArray(card.actions)) problems.push(`${where}.content.actions: not an array`)
      else card.actions.forEach((act: any, j: number) => {
        const w = `${where}.content.actions.${j}`
        if (!ACTIONS.has(act?.type)) problems.push(`${w}: type ${act?.type}`)
        if (act?.type === "Action.OpenUrl" && (typeof act.url !== "string" || !/^https?:\/\//.test(act.url))) problems.push(`${w}.url: required, absolute`)
        if (!isText(act?.title)) problems.push(`${w}.title: missing`)
      })
    }
  })
  return problems
}

/** Answers 400 to a message Teams would refuse (and keeps why), otherwise as `answers` says. */
export const teamsReceiver = (answers: ReadonlyArray<Answer> | ((request: Received) => Answer) = [202]) => {
  const refused: Array<Array<string>> = []
  let n = 0
  return receiver((request) => {
    const problems = teamsProblems(request.body, request.raw)
    if (problems.length > 0) {
      refused.push(problems)
      return { status: 400, body: JSON.stringify({ error: { code: "InvalidRequestContent", message: problems.join("; ") } }) }
    }
    const answer = typeof answers === "function" ? answers(request) : answers[Math.min(n, answers.length - 1)]!
    n++
    return answer
  }).pipe(Effect.map((r) => ({ ...r, refused })))
}
