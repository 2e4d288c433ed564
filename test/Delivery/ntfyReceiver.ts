import { Effect } from "effect"
import { type Answer, type Received, receiver } from "./receiver.js"

/**
 * A local stand-in for an ntfy server: a message is published as JSON to the server's root
 * (https://docs.ntfy.sh/publish/#publish-as-json): `topic` required (letters, digits, - and _, at
 * most 64), `message`, `title` strings, `priority` 1 to 5 (#message-priority), `tags` an array of
 * strings (#tags-emojis), `click` a url (#click-action), `actions` at most 3, each a `view` with
 * `label` and `url` (#action-buttons); a message over 4,096 bytes would become an attachment
 * (#limitations). A body that breaks one is answered 400 as ntfy does (`{"code":40001,…}`). When
 * `token` is given, a request without `Authorization: Bearer <token>` is answered 403 (40301),
 * as a server whose topic needs one.
 */

const TOPIC = /^[-_A-Za-z0-9]{1,64}$/

/** What ntfy would refuse in a published JSON body; empty when it is valid. */
export const ntfyProblems = (body: any): Array<string> => {
  const problems: Array<string> = []
  if (typeof body !== "object" || body === null) return ["not a JSON object"]
  if (typeof body.topic !== "string" || !TOPIC.test(body.topic)) problems.push(`topic: ${body.topic}`)
  for (const key of ["message", "title", "click"]) if (body[key] !== undefined && typeof body[key] !== "string") problems.push(`${key}: not a string`)
  if (typeof body.message !== "string" || body.message === "") problems.push("message: missing")
  else if (Buffer.byteLength(body.message) > 4096) problems.push(`message: ${Buffer.byteLength(body.message)} bytes > 4096`)
  if (body.priority !== undefined && (!Number.isInteger(body.priority) || body.priority < 1 || body.priority > 5)) problems.push(`priority: ${body.priority}`)
  if (body.tags !== undefined && (!Array.isArray(body.tags) || body.tags.some((t: unknown) => typeof t !== "string"))) problems.push("tags: not strings")
  if (body.click !== undefined && !/^https?:\/\//.test(body.click)) problems.push("click: not a url")
  if (body.actions !== undefined) {
    if (!Array.isArray(body.actions) || body.actions.length > 3) problems.push("actions: at most 3")
    else body.actions.forEach((a: any, i: number) => {
      if (a?.action !== "view" || typeof a.label !== "string" || typeof a.url !== "string") problems.push(`actions.${i}: a view with label and url`)
    })
  }
  const known = new Set(["topic", "message", "title", "priority", "tags", "click", "actions", "markdown", "icon", "attach", "filename", "delay", "email", "call"])
  for (const key of Object.keys(body)) if (!known.has(key)) problems.push(`${key}: unknown field`)
  return problems
}

/** Answers 400 to a body ntfy would refuse, 403 without the token, otherwise as `answers` says. */
export const ntfyReceiver = (answers: ReadonlyArray<Answer> | ((request: Received) => Answer) = [200], token?: string) => {
  const refused: Array<Array<string>> = []
  let n = 0
  return receiver((request) => {
    if (request.url !== "/") {
      refused.push([`path ${request.url}, not the root`])
      return { status: 404, body: JSON.stringify({ code: 40401, http: 404, error: "page not found" }) }
    }
    const problems = ntfyProblems(request.body)
    if (problems.length > 0) {
      refused.push(problems)
      return { status: 400, body: JSON.stringify({ code: 40001, http: 400, error: problems.join("; ") }) }
    }
    if (token !== undefined && request.headers.authorization !== `Bearer ${token}`) {
      return { status: 403, body: JSON.stringify({ code: 40301, http: 403, error: "forbidden" }) }
    }
    const answer = typeof answers === "function" ? answers(request) : answers[Math.min(n, answers.length - 1)]!
    n++
    return answer
  }).pipe(Effect.map((r) => ({ ...r, refused })))
}
