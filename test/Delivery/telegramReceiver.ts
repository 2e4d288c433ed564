import { Effect } from "effect"
import { type Answer, type Received, receiver } from "./receiver.js"

/**
 * A local stand-in for the Telegram Bot API's `sendMessage`. Every request is checked against the
 * documented method and format, and refused as Telegram refuses it:
 * - the path is `/bot<token>/sendMessage` (https://core.telegram.org/bots/api#making-requests);
 *   another token is 401 `Unauthorized`;
 * - the body is JSON with `chat_id` (Integer or String), `text` (1-4096 characters after entities
 *   parsing), `parse_mode`, `disable_web_page_preview` (https://core.telegram.org/bots/api#sendmessage);
 * - `parse_mode: "HTML"` text uses only the supported tags, nested properly, and writes `<`, `>`
 *   and `&` outside tags as entities (https://core.telegram.org/bots/api#html-style); otherwise
 *   400 `Bad Request: can't parse entities: …`.
 * Accepted requests are answered as the test says (Telegram's own answer is 200 `{"ok":true,"result":{…}}`).
 */

/** Tags of Telegram's HTML style (https://core.telegram.org/bots/api#html-style). */
const TAGS = new Set(["b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler", "a", "code", "pre", "blockquote", "tg-emoji"])
const ENTITY = /^&(lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);/

/** What Telegram would refuse in an HTML text, and the text's length once parsed. */
export const telegramHtmlProblems = (html: string): { problems: Array<string>; length: number } => {
  const problems: Array<string> = []
  const open: Array<string> = []
  let visible = ""
  let i = 0
  while (i < html.length) {
    const c = html[i]!
    if (c === "<") {
      const end = html.indexOf(">", i)
      if (end === -1) {
        problems.push(`unclosed start tag at ${i}`)
        break
      }
      const tag = html.slice(i + 1, end)
      const closing = tag.startsWith("/")
      const name = (closing ? tag.slice(1) : tag).split(/\s/)[0]!.toLowerCase()
      if (!TAGS.has(name)) problems.push(`unsupported tag "${name}" at ${i}`)
      else if (closing) {
        if (open.pop() !== name) problems.push(`unexpected end tag "${name}" at ${i}`)
      } else {
        if (name === "a" && !/^a href="[^"<>]*"$/.test(tag)) problems.push(`bad <a> at ${i}: ${tag}`)
        open.push(name)
      }
      i = end + 1
    } else if (c === ">") {
      problems.push(`unescaped > at ${i}`)
      i++
    } else if (c === "&") {
      const m = ENTITY.exec(html.slice(i))
      if (m === null) problems.push(`unescaped & at ${i}`)
      visible += "x"
      i += m === null ? 1 : m[0].length
    } else {
      visible += c
      i++
    }
  }
  if (open.length > 0) problems.push(`unclosed tags: ${open.join(", ")}`)
  return { problems, length: visible.length }
}

/** What Telegram would refuse in a sendMessage body; empty when it is valid. */
export const telegramProblems = (body: any): Array<string> => {
  if (typeof body !== "object" || body === null) return ["not a JSON object"]
  const problems: Array<string> = []
  const chatId = body.chat_id
  if (!(Number.isInteger(chatId) || (typeof chatId === "string" && chatId !== ""))) problems.push("chat_id: missing")
  if (typeof body.text !== "string" || body.text.trim() === "") return [...problems, "text: message text is empty"]
  if (body.parse_mode !== "HTML") problems.push(`parse_mode: ${body.parse_mode}`)
  if (body.disable_web_page_preview !== undefined && typeof body.disable_web_page_preview !== "boolean") problems.push("disable_web_page_preview: not a boolean")
  const { length, problems: html } = telegramHtmlProblems(body.text)
  problems.push(...html.map((p) => `can't parse entities: ${p}`))
  if (length > 4096) problems.push(`text: message is too long (${length} > 4096)`)
  return problems
}

const json = (status: number, value: unknown, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(value)
})

/** Telegram's error answer. */
export const telegramError = (status: number, description: string, parameters?: Record<string, unknown>) =>
  json(status, { ok: false, error_code: status, description, ...(parameters === undefined ? {} : { parameters }) })

export const TELEGRAM_OK = json(200, { ok: true, result: { message_id: 1, chat: { id: -100123, type: "supergroup" }, date: 0, text: "…" } })

/** Refuses what Telegram would refuse (and keeps why), otherwise answers as `answers` says. */
export const telegramReceiver = (token: string, answers: ReadonlyArray<Answer> | ((request: Received) => Answer) = [TELEGRAM_OK]) => {
  const refused: Array<Array<string>> = []
  let n = 0
  return receiver((request) => {
    if (request.url !== `/bot${token}/sendMessage`) {
      refused.push([`path: ${request.url}`])
      return telegramError(401, "Unauthorized")
    }
    if (!String(request.headers["content-type"]).startsWith("application/json")) {
      refused.push(["content-type"])
      return telegramError(400, "Bad Request: message text is empty")
    }
    const problems = telegramProblems(request.body)
    if (problems.length > 0) {
      refused.push(problems)
      return telegramError(400, `Bad Request: ${problems[0]}`)
    }
    const answer = typeof answers === "function" ? answers(request) : answers[Math.min(n, answers.length - 1)]!
    n++
    return answer
  }).pipe(Effect.map((r) => ({ ...r, base: r.url.replace(/\/hook$/, ""), refused })))
}
