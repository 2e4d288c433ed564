import { redact } from "./Redact.js"

/**
 * Job output as it is stored (interface spec, "Ping bodies" rules 3 and 4; docs/decisions.md#monitors,
 * #pings, #details-clients-depend-on).
 * Pure: no I/O, no services. docs/redaction.md describes the rules.
 */

export interface PreparedOutput {
  /** Redacted, at most `maxBytes` UTF-8 bytes, well-formed, without NUL characters. */
  readonly output: string
  /** True when the end was kept and the start dropped to fit `maxBytes`. */
  readonly truncated: boolean
  /** UTF-8 size of the output the job sent, before any cleaning, redaction or truncation. */
  readonly originalBytes: number
}

/** PostgreSQL `text` cannot hold U+0000. */
const NUL = /\u0000/g

/** A surrogate without its partner cannot be encoded in UTF-8; it becomes U+FFFD. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** A byte of the form 10xxxxxx continues a UTF-8 character; a cut must not start on one. */
const isContinuationByte = (byte: number): boolean => (byte & 0xc0) === 0x80

/** A limit in bytes: whole and not negative; NaN keeps nothing, Infinity keeps everything. */
const byteLimit = (maxBytes: number): number =>
  Number.isNaN(maxBytes) || maxBytes <= 0 ? 0 : Math.floor(maxBytes)

/**
 * Cleans, redacts and truncates job output. In this order, so that a cut never exposes part of a
 * secret and a NUL inside a key (`pass\0word=`) cannot hide it from redaction:
 * 1. `originalBytes` = UTF-8 size of `raw` (a lone surrogate counts as the 3 bytes of U+FFFD);
 * 2. NUL characters are removed and lone surrogates become U+FFFD;
 * 3. secrets are redacted;
 * 4. when the result is larger than `maxBytes` UTF-8 bytes (1 KB = 1024 bytes: the caller passes
 *    `maxOutputSizeKb * 1024`), its end is kept, cut on a character boundary, and `truncated` is
 *    true. Output of exactly `maxBytes` bytes is kept whole.
 */
export const prepareOutput = (raw: string, maxBytes: number): PreparedOutput => {
  const originalBytes = Buffer.byteLength(raw, "utf8")
  const cleaned = raw.replace(NUL, "").replace(LONE_SURROGATE, "\uFFFD")
  const output = redact(cleaned)
  const limit = byteLimit(maxBytes)
  // Every UTF-16 code unit takes at most 3 UTF-8 bytes: skip encoding when it cannot exceed.
  if (output.length * 3 <= limit) return { output, truncated: false, originalBytes }
  const bytes = Buffer.from(output, "utf8")
  if (bytes.length <= limit) return { output, truncated: false, originalBytes }
  let start = bytes.length - limit
  while (start < bytes.length && isContinuationByte(bytes[start]!)) start++
  return { output: bytes.subarray(start).toString("utf8"), truncated: true, originalBytes }
}

/** A character JSON does not allow raw inside a string: U+0000–U+001F. */
const RAW_CONTROL = /[\u0000-\u001f]/

/**
 * A ping body whose strings hold raw control characters, made readable by JSON.parse: each one
 * inside a string becomes its `\u00XX` escape; the rest of the text is kept as it is (tabs and
 * newlines between values are JSON's own blanks). Undefined when the body has none, so the caller
 * answers its usual 400.
 *
 * JSON forbids these characters raw, but a shell script's hand-built body carries them: the output
 * of `curl -d "{\"output\":\"$(tail log)\"}"` holds raw newlines, and docs/client.md's awk
 * script passes a NUL through. Refusing the body would lose the ping, and with it the run; the
 * output is then cleaned like any other ({@link prepareOutput}: NUL removed). Only called after
 * JSON.parse has refused the body, so a valid body costs nothing; linear in the body's length.
 */
export const escapeRawControlCharacters = (body: string): string | undefined => {
  if (!RAW_CONTROL.test(body)) return undefined
  const parts: Array<string> = []
  let copied = 0
  let inString = false
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i)
    if (!inString) {
      if (c === 0x22) inString = true
    } else if (c === 0x5c) {
      i++ // an escape: the next character is part of it
    } else if (c === 0x22) {
      inString = false
    } else if (c < 0x20) {
      parts.push(body.slice(copied, i), `\\u${c.toString(16).padStart(4, "0")}`)
      copied = i + 1
    }
  }
  if (parts.length === 0) return undefined
  parts.push(body.slice(copied))
  return parts.join("")
}
