import { redact } from "./Redact.js"

/**
 * Job output as it is stored (interface spec, "Ping bodies" rules 3 and 4; decisions §3, §4, §15).
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
