import { Effect } from "effect"
import { type Answer, type Received, receiver } from "./receiver.js"

/**
 * A local stand-in for Slack's incoming webhooks: every message is checked against Slack's
 * documented Block Kit limits (https://api.slack.com/reference/block-kit/blocks, …/composition-objects,
 * …/block-elements#button) and, like Slack, refused with 400 `invalid_payload` when it breaks one;
 * otherwise answered as the test says (Slack's own answer is 200 `ok`).
 */

const BLOCK_TYPES = new Set(["header", "section", "actions", "context", "divider"])

const textObject = (where: string, t: any, max: number, problems: Array<string>, plainOnly = false) => {
  if (typeof t !== "object" || t === null) return problems.push(`${where}: not a text object`)
  if (t.type !== "plain_text" && (plainOnly || t.type !== "mrkdwn")) problems.push(`${where}: type ${t.type}`)
  if (typeof t.text !== "string" || t.text.length < 1) problems.push(`${where}: empty text`)
  else if (t.text.length > max) problems.push(`${where}: ${t.text.length} characters > ${max}`)
}

/** What Slack would refuse in a message body; empty when it is valid. */
export const slackProblems = (body: any): Array<string> => {
  const problems: Array<string> = []
  if (typeof body !== "object" || body === null) return ["not a JSON object"]
  if (typeof body.text !== "string" || body.text === "") problems.push("text: missing (the notification's fallback)")
  else if (body.text.length > 40_000) problems.push("text: over 40,000 characters")
  const blocks = body.blocks
  if (!Array.isArray(blocks) || blocks.length === 0) return [...problems, "blocks: missing"]
  if (blocks.length > 50) problems.push(`blocks: ${blocks.length} > 50`)
  const ids = new Set<string>()
  blocks.forEach((b: any, i: number) => {
    const where = `blocks.${i}`
    if (!BLOCK_TYPES.has(b?.type)) return problems.push(`${where}: unknown type ${b?.type}`)
    if (b.block_id !== undefined) {
      if (typeof b.block_id !== "string" || b.block_id.length > 255) problems.push(`${where}.block_id: too long`)
      if (ids.has(b.block_id)) problems.push(`${where}.block_id: repeated`)
      ids.add(b.block_id)
    }
    switch (b.type) {
      case "header":
        textObject(`${where}.text`, b.text, 150, problems, true)
        break
      case "section":
        if (b.text === undefined && b.fields === undefined) problems.push(`${where}: neither text nor fields`)
        if (b.text !== undefined) textObject(`${where}.text`, b.text, 3000, problems)
        if (b.fields !== undefined) {
          if (!Array.isArray(b.fields) || b.fields.length > 10) problems.push(`${where}.fields: more than 10`)
          else b.fields.forEach((f: any, j: number) => textObject(`${where}.fields.${j}`, f, 2000, problems))
        }
        break
      case "actions":
        if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 25) problems.push(`${where}.elements: 1 to 25`)
        else {
          b.elements.forEach((e: any, j: number) => {
            if (e.type !== "button") problems.push(`${where}.elements.${j}: type ${e.type}`)
            textObject(`${where}.elements.${j}.text`, e.text, 75, problems, true)
            if (typeof e.url !== "string" || e.url.length > 3000 || !/^https?:\/\//.test(e.url)) problems.push(`${where}.elements.${j}.url`)
          })
        }
        break
      case "context":
        if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 10) problems.push(`${where}.elements: 1 to 10`)
        else b.elements.forEach((e: any, j: number) => textObject(`${where}.elements.${j}`, e, 3000, problems))
        break
    }
  })
  return problems
}

/** Answers `invalid_payload` to a message Slack would refuse (and keeps why), otherwise as `answers` says. */
export const slackReceiver = (answers: ReadonlyArray<Answer> | ((request: Received) => Answer) = [200]) => {
  const refused: Array<Array<string>> = []
  let n = 0
  return receiver((request) => {
    const problems = slackProblems(request.body)
    if (problems.length > 0) {
      refused.push(problems)
      return { status: 400, body: "invalid_payload" }
    }
    const answer = typeof answers === "function" ? answers(request) : answers[Math.min(n, answers.length - 1)]!
    n++
    return answer
  }).pipe(Effect.map((r) => ({ ...r, refused })))
}
