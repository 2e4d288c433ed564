import { expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { call, createMonitor, TestApp, TestServer } from "../support/fixture.js"
import { rawRequest } from "../support/raw.js"

/**
 * Every operation of the OpenAPI document, fed generated bodies, path parameters and query strings
 * through the real server: wrong types, huge and odd numbers, NaN-like strings, deep nesting, NUL and
 * lone surrogates, long strings, invalid percent-encoding, duplicate keys, bytes that are not UTF-8.
 * The service never answers 5xx, every refusal is the error envelope (`_tag` and `message`), and it
 * is healthy afterwards.
 *
 * A fixed seed and a bounded count keep it within CI's time; `FUZZ_RUNS=200 FUZZ_SEED=…` runs more.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 6)
const SEED = Number(process.env.FUZZ_SEED ?? 20261127)

type JsonSchema = {
  readonly type?: string
  readonly enum?: ReadonlyArray<unknown>
  readonly properties?: Record<string, JsonSchema>
  readonly items?: JsonSchema
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly $ref?: string
}

interface Operation {
  readonly method: string
  readonly template: string
  readonly pathParams: ReadonlyArray<string>
  readonly queryParams: ReadonlyArray<string>
  readonly body: JsonSchema | undefined
}

const nastyString = fc.oneof(
  fc.constantFrom(
    "", " ", "NaN", "Infinity", "-Infinity", "1e999", "-0", "0x10", "null", "undefined", "true",
    "\u0000", "a\u0000b", "\ud800", "x\udfffy", "\uffff", "%ZZ", "%C3%28", "../../etc/passwd",
    "'; drop table monitors; --", "<script>alert(1)</script>", "${jndi:ldap://x}", "9".repeat(400),
    "2026-02-30T25:61:61Z", "-100000-01-01T00:00:00Z", "+275760-09-13T00:00:00Z", "P1Y", "* * * * * *",
    "@reboot", "FREQ=SECONDLY", "Europe/Nowhere", "\u202e\u0041", "🧨".repeat(50)
  ),
  fc.string({ maxLength: 40 }),
  fc.fullUnicodeString({ maxLength: 20 }),
  fc.nat({ max: 5000 }).map((n) => "x".repeat(n * 10))
)

const nastyNumber = fc.oneof(
  fc.constantFrom(0, -1, 1.5, -0.0001, 2 ** 31, 2 ** 53 + 2, 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER * 10),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true })
)

const deep = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`

/** A JSON value: anything at all, with the odd ones over-represented. */
const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    nastyString,
    nastyNumber,
    fc.constantFrom(null, true, false),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie("value"), { maxKeys: 4 })
  )
})).value

/** A value shaped like the schema wants, most of the time; anything, the rest of the time. */
const valueFor = (schema: JsonSchema | undefined, resolve: (s: JsonSchema) => JsonSchema, depth = 0): fc.Arbitrary<unknown> => {
  if (schema === undefined || depth > 4) return anyJson
  const s = resolve(schema)
  const shaped: fc.Arbitrary<unknown> | undefined = s.enum !== undefined
    ? fc.constantFrom(...s.enum)
    : s.anyOf !== undefined
    ? fc.oneof(...s.anyOf.map((member) => valueFor(member, resolve, depth + 1)))
    : s.type === "object" && s.properties !== undefined
    ? objectFor(s, resolve, depth + 1)
    : s.type === "array"
    ? fc.array(valueFor(s.items, resolve, depth + 1), { maxLength: 5 })
    : s.type === "string"
    ? nastyString
    : s.type === "integer" || s.type === "number"
    ? nastyNumber
    : s.type === "boolean"
    ? fc.boolean()
    : undefined
  return shaped === undefined ? anyJson : fc.oneof({ arbitrary: shaped, weight: 4 }, { arbitrary: anyJson, weight: 1 })
}

const objectFor = (schema: JsonSchema, resolve: (s: JsonSchema) => JsonSchema, depth: number): fc.Arbitrary<Record<string, unknown>> => {
  const keys = Object.keys(schema.properties ?? {})
  const shape: Record<string, fc.Arbitrary<unknown>> = {}
  for (const key of keys) shape[key] = valueFor(schema.properties![key], resolve, depth)
  return fc.record(shape, { requiredKeys: [] })
}

/** The body as text: JSON of the value, or a text JSON cannot produce. */
const bodyText = (schema: JsonSchema | undefined, resolve: (s: JsonSchema) => JsonSchema): fc.Arbitrary<string | Buffer> =>
  fc.oneof(
    { arbitrary: valueFor(schema, resolve).map((v) => JSON.stringify(v) ?? "null"), weight: 8 },
    // duplicate keys: the last one wins in JSON.parse, and must still be validated
    { arbitrary: fc.tuple(valueFor(schema, resolve), anyJson).map(([v, other]) => {
      const text = JSON.stringify(v) ?? "{}"
      return text.startsWith("{") && text.length > 2 ? `{"name":${JSON.stringify(other) ?? 1},${text.slice(1, -1)},"name":${JSON.stringify(other) ?? 1}}` : text
    }), weight: 1 },
    { arbitrary: fc.nat({ max: 3 }).map((n) => [deep(100), `{"name":${deep(70_000)}}`, '{"name": "\\ud800\\udc00\\ud800"}', "{\"a\":1,}"][n]!), weight: 1 },
    { arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.concat([Buffer.from('{"name":"'), Buffer.from(bytes), Buffer.from('"}')])), weight: 1 }
  )

/** Percent-encodes the UTF-8 bytes of any string (a lone surrogate becomes U+FFFD's bytes). */
const encode = (text: string) =>
  [...Buffer.from(text, "utf8")].map((b) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, "0").toUpperCase()}`)).join("")

const pathValue = (valid: ReadonlyArray<string>) =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...valid), weight: 3 },
    { arbitrary: fc.constantFrom("%ZZ", "%C3%28", "%00", "%2F", "..", "%2e%2e", "x".repeat(150), "00000000-0000-0000-0000-000000000000", "NaN", "-1", "%F0%9F%A7%A8"), weight: 2 },
    { arbitrary: fc.string({ minLength: 1, maxLength: 40 }).map(encode), weight: 1 }
  )

const queryValue = fc.oneof(
  nastyString.map(encode),
  fc.constantFrom("%ZZ", "%E0%A4%A", "%", "a%00b", "1e999", "-1", "0", "99999999999999999999", "2026-01-01", "2026-01-01T00:00:00Z"),
  fc.integer().map(String)
)

const operations = Effect.gen(function*() {
  const spec = (yield* call("GET", "/api/openapi.json", { token: null })).body as {
    paths: Record<string, Record<string, any>>
    components: { schemas: Record<string, JsonSchema> }
  }
  const resolve = (schema: JsonSchema): JsonSchema =>
    schema.$ref !== undefined ? resolve(spec.components.schemas[schema.$ref.split("/").pop()!]!) : schema
  const ops: Array<Operation> = []
  for (const [template, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue
      const params = (op.parameters ?? []) as Array<{ name: string; in: string }>
      ops.push({
        method: method.toUpperCase(),
        template,
        pathParams: params.filter((p) => p.in === "path").map((p) => p.name),
        queryParams: params.filter((p) => p.in === "query").map((p) => p.name),
        body: op.requestBody?.content?.["application/json"]?.schema
      })
    }
  }
  return { ops, resolve }
})

layer(TestServer(), { excludeTestServices: true, timeout: 600_000 })("fuzzing every endpoint", (it) => {
  it.effect(`generated input on every operation (${RUNS} per operation, seed ${SEED}): never a 5xx, always the error envelope`, () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const monitor = yield* createMonitor()
      const valid = [monitor.id, crypto.randomUUID()]
      const { ops, resolve } = yield* operations
      expect(ops.length).toBeGreaterThan(50)
      const problems: Array<string> = []
      let sent = 0
      for (const [index, op] of ops.entries()) {
        const request = fc.record({
          path: fc.tuple(...op.pathParams.map(() => pathValue(valid))),
          query: fc.array(fc.tuple(fc.constantFrom(...op.queryParams, "extra", "limit"), queryValue), { maxLength: 4 }),
          body: bodyText(op.body, resolve)
        })
        const samples = fc.sample(request, { seed: SEED + index, numRuns: RUNS })
        for (const sample of samples) {
          let target = op.template
          op.pathParams.forEach((name, i) => (target = target.replace(`{${name}}`, sample.path[i]!)))
          if (sample.query.length > 0) target += "?" + sample.query.map(([k, v]) => `${k}=${v}`).join("&")
          const hasBody = op.method !== "GET" && op.method !== "DELETE"
          const answer = yield* rawRequest(app.baseUrl, op.method, target, {
            headers: { authorization: `Bearer ${app.adminToken}` },
            ...(hasBody ? { body: sample.body } : {})
          }).pipe(Effect.orDie)
          sent++
          const where = `${op.method} ${target.slice(0, 120)} ${hasBody ? String(sample.body).slice(0, 120) : ""}`
          if (answer.status >= 500) problems.push(`${answer.status} ${where}: ${answer.text.slice(0, 200)}`)
          else if (answer.status >= 400 && (typeof answer.body?._tag !== "string" || typeof answer.body?.message !== "string")) {
            problems.push(`${answer.status} without the error envelope ${where}: ${answer.text.slice(0, 200)}`)
          }
        }
      }
      expect(problems).toEqual([])
      expect(sent).toBe(ops.length * RUNS)
      // One body of 10 MB: refused whole, the service unmoved.
      const huge = yield* rawRequest(app.baseUrl, "POST", "/api/monitors", {
        headers: { authorization: `Bearer ${app.adminToken}` },
        body: JSON.stringify({ name: "n".repeat(10 * 1024 * 1024), schedule: { type: "interval", expression: "1h" } })
      }).pipe(Effect.orDie)
      expect(huge.status).toBe(413)
      expect((yield* call("GET", "/healthz", { token: null })).status).toBe(200)
      expect((yield* createMonitor({ name: "after the fuzz" })).name).toBe("after the fuzz")
    }))
})
