import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { escapeRawControlCharacters, prepareOutput } from "../../src/Pings/Output.js"
import { redact, REDACTED } from "../../src/Pings/Redact.js"
import { leakedFragment, secretOutput } from "./SecretOutput.js"

const bytes = (text: string): number => Buffer.byteLength(text, "utf8")
const KiB = 1024
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

describe("prepareOutput", () => {
  it("keeps output under the limit whole", () => {
    expect(prepareOutput("backup done\n", 10 * KiB)).toEqual({
      output: "backup done\n",
      truncated: false,
      originalBytes: 12
    })
  })

  it("keeps output of exactly the limit whole (1 KB = 1024 bytes)", () => {
    const raw = "x".repeat(10 * KiB)
    expect(prepareOutput(raw, 10 * KiB)).toEqual({ output: raw, truncated: false, originalBytes: 10 * KiB })
  })

  it("counts UTF-8 bytes, not characters, against the limit", () => {
    const raw = "€".repeat(10) // 30 bytes
    expect(prepareOutput(raw, 30)).toEqual({ output: raw, truncated: false, originalBytes: 30 })
    expect(prepareOutput(raw, 29)).toEqual({ output: "€".repeat(9), truncated: true, originalBytes: 30 })
  })

  it("keeps the end of larger output, where the errors are", () => {
    const raw = "x".repeat(10 * KiB) + "\nERROR: disk full\n"
    const { originalBytes, output, truncated } = prepareOutput(raw, 10 * KiB)
    expect(truncated).toBe(true)
    expect(originalBytes).toBe(bytes(raw))
    expect(bytes(output)).toBe(10 * KiB)
    expect(output.endsWith("\nERROR: disk full\n")).toBe(true)
    expect(raw.endsWith(output)).toBe(true)
  })

  it("one byte over the limit drops exactly one byte", () => {
    const raw = "a" + "b".repeat(KiB)
    expect(prepareOutput(raw, KiB)).toEqual({ output: "b".repeat(KiB), truncated: true, originalBytes: KiB + 1 })
  })

  it("cuts on a character boundary, never inside a character", () => {
    // "é" is 2 bytes, "€" 3, "😀" 4 (a surrogate pair in UTF-16).
    expect(prepareOutput("aé", 1)).toEqual({ output: "", truncated: true, originalBytes: 3 })
    expect(prepareOutput("aé", 2)).toEqual({ output: "é", truncated: true, originalBytes: 3 })
    expect(prepareOutput("x€€", 5)).toEqual({ output: "€", truncated: true, originalBytes: 7 })
    expect(prepareOutput("x😀😀", 7)).toEqual({ output: "😀", truncated: true, originalBytes: 9 })
    expect(prepareOutput("x😀😀", 8)).toEqual({ output: "😀😀", truncated: true, originalBytes: 9 })
  })

  it("redacts before it truncates, so a cut never exposes part of a secret", () => {
    const secret = "S3CR3T".repeat(40)
    const raw = `${"log line\n".repeat(50)}password=${secret}\nexit 1\n`
    for (let maxBytes = 1; maxBytes < bytes(raw); maxBytes += 7) {
      const { output } = prepareOutput(raw, maxBytes)
      expect(output).not.toMatch(/S3C|3CR|CR3|R3T/)
      expect(bytes(output)).toBeLessThanOrEqual(maxBytes)
    }
    expect(prepareOutput(raw, 10 * KiB).output).toBe(`${"log line\n".repeat(50)}password=${REDACTED}\nexit 1\n`)
  })

  it("measures originalBytes on the raw output, before redaction and truncation", () => {
    expect(prepareOutput("password=hunter2", 10 * KiB)).toEqual({
      output: `password=${REDACTED}`,
      truncated: false,
      originalBytes: 16
    })
  })

  it("truncates when redaction makes the output larger than the limit", () => {
    const { output, truncated } = prepareOutput("pwd: /x MYSQL_PWD=a", 19)
    expect(truncated).toBe(true)
    expect(output).toBe(`MYSQL_PWD=${REDACTED}`.slice(-19))
  })

  it("removes NUL characters, which PostgreSQL text cannot hold", () => {
    expect(prepareOutput("a\u0000b\u0000", 10)).toEqual({ output: "ab", truncated: false, originalBytes: 4 })
    expect(prepareOutput("pass\u0000word=hunter2", 100).output).toBe(`password=${REDACTED}`)
  })

  it("replaces a lone surrogate, which UTF-8 cannot encode, with U+FFFD", () => {
    expect(prepareOutput("a\uD800b", 10)).toEqual({ output: "a\uFFFDb", truncated: false, originalBytes: 5 })
    expect(prepareOutput("a\uDC00", 10)).toEqual({ output: "a\uFFFD", truncated: false, originalBytes: 4 })
  })

  it("handles empty output and a zero limit", () => {
    expect(prepareOutput("", 10 * KiB)).toEqual({ output: "", truncated: false, originalBytes: 0 })
    expect(prepareOutput("", 0)).toEqual({ output: "", truncated: false, originalBytes: 0 })
    expect(prepareOutput("abc", 0)).toEqual({ output: "", truncated: true, originalBytes: 3 })
  })

  describe("properties", () => {
    const text = FastCheck.oneof(
      FastCheck.string({ maxLength: 400 }),
      FastCheck.string({ unit: "binary", maxLength: 400 }),
      FastCheck.string({ unit: FastCheck.constantFrom("a", "é", "€", "😀", "\n", "\u0000", "\uD800"), maxLength: 400 })
    )
    const limit = FastCheck.integer({ min: 0, max: 1200 })

    it.prop("never returns more than maxBytes bytes", [text, limit], ([raw, maxBytes]) => {
      const { output } = prepareOutput(raw, maxBytes)
      expect(bytes(output)).toBeLessThanOrEqual(maxBytes)
      expect(output).not.toContain("\u0000")
      expect(output).not.toMatch(LONE_SURROGATE)
    }, { fastCheck: { numRuns: 2000 } })

    it.prop("keeps the tail of the redacted output and flags truncation", [text, limit], ([raw, maxBytes]) => {
      const { originalBytes, output, truncated } = prepareOutput(raw, maxBytes)
      const whole = redact(raw.replace(/\u0000/g, "").replace(LONE_SURROGATE, "\uFFFD"))
      expect(originalBytes).toBe(bytes(raw))
      expect(whole.endsWith(output)).toBe(true)
      expect(truncated).toBe(bytes(whole) > maxBytes)
      if (truncated) {
        // The longest tail that fits: at most 3 bytes are lost to a character boundary.
        expect(bytes(output)).toBeGreaterThan(maxBytes - 4)
      } else {
        expect(output).toBe(whole)
      }
    }, { fastCheck: { numRuns: 2000 } })

    it.prop(
      "never contains a secret value that was in the input",
      [
        FastCheck.array(FastCheck.string({ unit: "binary", maxLength: 60 }), { minLength: 1, maxLength: 6 }),
        FastCheck.array(FastCheck.tuple(FastCheck.nat(), FastCheck.nat({ max: 999_999 })), { minLength: 1, maxLength: 3 }),
        FastCheck.integer({ min: 0, max: 600 })
      ],
      ([chunks, placements, maxBytes]) => {
        const lines = [...chunks]
        const secrets: Array<string> = []
        for (const [where, digits] of placements) {
          const secret = `S3CR3T${digits}`
          secrets.push(secret)
          lines.splice(where % (lines.length + 1), 0, `password=${secret}`)
        }
        const { output } = prepareOutput(lines.join("\n"), maxBytes)
        for (const secret of secrets) expect(output).not.toContain(secret)
      },
      { fastCheck: { numRuns: 3000 } }
    )

    // The forms docs/redaction.md promises, after words of any length glued to their keyword
    // (`yyy…ypassword=`, `"yyy…yapi_key":`), at any limit: output is cut to its END, so a secret
    // that redaction missed because of what came before it would be stored, or a piece of it.
    it.prop(
      "stores no piece of a secret, whatever precedes or follows it and wherever the cut falls",
      [secretOutput, FastCheck.integer({ min: 1, max: 6 * KiB })],
      ([{ output: raw, secrets }, maxBytes]) => {
        const { output } = prepareOutput(raw, maxBytes)
        expect(leakedFragment(output, secrets)).toBeUndefined()
        expect(bytes(output)).toBeLessThanOrEqual(maxBytes)
        // The cut never matters: the whole redacted output holds no piece either.
        expect(leakedFragment(prepareOutput(raw, Infinity).output, secrets)).toBeUndefined()
      },
      { fastCheck: { numRuns: 3000 } }
    )
  })
})

describe("escapeRawControlCharacters (a ping body with raw control characters in its strings)", () => {
  it("escapes them inside strings only, and leaves a body without any alone", () => {
    expect(escapeRawControlCharacters('{"output":"a\u0000b\tc\nd"}')).toBe(String.raw`{"output":"a\u0000b\u0009c\u000ad"}`)
    expect(JSON.parse(escapeRawControlCharacters('{"output":"a\u0000b\tc\nd"}')!)).toEqual({ output: "a\u0000b\tc\nd" })
    // Blanks between values are JSON's own; an escaped quote does not end the string.
    expect(escapeRawControlCharacters('{\n\t"output": "say \\"hi\\"\u0001",\r\n"exitCode": 1}')).toBe('{\n\t"output": "say \\"hi\\"\\u0001",\r\n"exitCode": 1}')
    expect(escapeRawControlCharacters('{"output":"ok"}')).toBeUndefined()
    // Outside a string a control character stays, and the body stays invalid (400).
    expect(escapeRawControlCharacters('{"a":1\u0001}')).toBeUndefined()
  })

  it.prop(
    "reads back what the job sent: the raw form of any JSON body parses to the same value",
    [FastCheck.dictionary(FastCheck.constantFrom("output", "runId", "note"), FastCheck.string({ unit: "binary", maxLength: 60 }))],
    ([fields]) => {
      // JSON.stringify escapes U+0000–U+001F; the raw form has them as they are.
      const escaped = JSON.stringify(fields)
      // (An escaped backslash is matched whole, so that the `n` of `\\n` is not read as an escape.)
      const raw = escaped.replace(/\\u00([01][0-9a-f])|\\([bfnrt])|\\\\/g, (whole, hex: string | undefined, letter: string | undefined) => {
        if (hex !== undefined) return String.fromCharCode(parseInt(hex, 16))
        if (letter !== undefined) return ({ b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" } as Record<string, string>)[letter]!
        return whole
      })
      expect(raw === escaped || /[\u0000-\u001f]/.test(raw)).toBe(true)
      const repaired = escapeRawControlCharacters(raw)
      expect(JSON.parse(repaired ?? raw)).toEqual(fields)
    },
    { fastCheck: { numRuns: 2000 } }
  )
})
