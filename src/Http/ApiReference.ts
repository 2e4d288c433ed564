/**
 * docs/api-reference.md, rendered from the OpenAPI document the service serves at
 * /api/openapi.json (`npm run docs:api` writes it; a test fails when the file is stale).
 * Pure: OpenAPI JSON in, Markdown out.
 */

type Json = any

const METHODS = ["get", "post", "put", "patch", "delete"] as const

const refName = (ref: string) => ref.replace(/^#\/components\/schemas\//, "")
const anchor = (name: string) => name.toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-")
const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n+/g, " ").trim()

/** A schema without its `null` alternative, and whether it had one. */
const nonNull = (schema: Json): { schema: Json; nullable: boolean } => {
  const alternatives: Array<Json> | undefined = schema?.anyOf ?? schema?.oneOf
  if (Array.isArray(alternatives)) {
    const rest = alternatives.filter((s) => s?.type !== "null")
    if (rest.length < alternatives.length) {
      return { schema: rest.length === 1 ? { ...schema, anyOf: undefined, oneOf: undefined, ...rest[0] } : { ...schema, anyOf: rest }, nullable: true }
    }
  }
  return { schema, nullable: false }
}

/** A short type for a table cell: `string`, `integer[]`, `"a" | "b"`, `Monitor`, … */
export const typeOf = (schema: Json): string => {
  if (schema === undefined || schema === null || schema === true) return "any"
  const { schema: s, nullable } = nonNull(schema)
  const base = (() => {
    if (s.$ref) return `[${refName(s.$ref)}](#${anchor(refName(s.$ref))})`
    if (s.const !== undefined) return JSON.stringify(s.const)
    if (Array.isArray(s.enum)) return s.enum.map((v: unknown) => JSON.stringify(v)).join(" | ")
    const alternatives: Array<Json> | undefined = s.anyOf ?? s.oneOf
    if (Array.isArray(alternatives)) return alternatives.map(typeOf).join(" | ")
    if (Array.isArray(s.allOf)) return s.allOf.map(typeOf).join(" & ")
    if (s.type === "array") return `${typeOf(s.items)}[]`
    if (s.type === "integer" || s.type === "number" || s.type === "string" || s.type === "boolean") {
      return s.format ? `${s.type} (${s.format})` : s.type
    }
    if (s.type === "object" || s.properties) return "object"
    return "any"
  })()
  return nullable ? `${base} | null` : base
}

/** Constraints and descriptions, in words, for the notes column. */
const notesOf = (schema: Json): string => {
  const { schema: s } = nonNull(schema ?? {})
  const parts: Array<string> = []
  const describe = (x: Json) => {
    if (typeof x?.description === "string" && !parts.includes(x.description)) parts.push(x.description)
  }
  describe(schema)
  describe(s)
  const bounds: Array<[string, string]> = [
    ["minimum", "≥"], ["exclusiveMinimum", ">"], ["maximum", "≤"], ["exclusiveMaximum", "<"]
  ]
  for (const [key, sign] of bounds) if (typeof s[key] === "number") parts.push(`${sign} ${s[key]}`)
  if (typeof s.minLength === "number") parts.push(`min length ${s.minLength}`)
  if (typeof s.maxLength === "number") parts.push(`max length ${s.maxLength}`)
  if (typeof s.minItems === "number") parts.push(`min items ${s.minItems}`)
  if (typeof s.maxItems === "number") parts.push(`max items ${s.maxItems}`)
  if (typeof s.pattern === "string") parts.push(`pattern \`${s.pattern}\``)
  if (s.default !== undefined) parts.push(`default ${JSON.stringify(s.default)}`)
  return parts.join("; ")
}

/** The object (or array of objects) inside a schema whose fields deserve rows of their own. */
const objectInside = (schema: Json): { object: Json; suffix: string } | null => {
  const { schema: s } = nonNull(schema ?? {})
  if (s?.properties) return { object: s, suffix: "" }
  if (s?.type === "array") {
    const { schema: item } = nonNull(s.items ?? {})
    if (item?.properties) return { object: item, suffix: "[]" }
  }
  return null
}

const fieldRows = (object: Json, prefix: string, depth: number): Array<string> => {
  const required = new Set<string>(object.required ?? [])
  return Object.entries<Json>(object.properties ?? {}).flatMap(([name, schema]) => {
    const path = `${prefix}${name}`
    const row = `| \`${path}\` | ${cell(typeOf(schema))} | ${required.has(name) ? "yes" : "no"} | ${cell(notesOf(schema))} |`
    const inner = depth < 4 ? objectInside(schema) : null
    return inner === null ? [row] : [row, ...fieldRows(inner.object, `${path}${inner.suffix}.`, depth + 1)]
  })
}

/** A schema as Markdown: a field table for objects, else its type. */
export const renderSchema = (schema: Json): string => {
  const inside = objectInside(schema)
  const { schema: s } = nonNull(schema ?? {})
  if (inside === null) {
    const notes = notesOf(schema)
    return `${typeOf(schema)}${notes === "" ? "" : ` — ${notes}`}`
  }
  const lead = [
    s.$ref ? "" : inside.suffix === "[]" ? "An array of objects:" : "",
    typeof s.description === "string" && inside.suffix === "" ? s.description : ""
  ].filter((x) => x !== "")
  return [
    ...lead.map((l) => `${l}\n`),
    "| field | type | required | notes |",
    "|---|---|---|---|",
    ...fieldRows(inside.object, "", 0)
  ].join("\n")
}

const jsonSchemaOf = (content: Json): Json => content?.["application/json"]?.schema ?? Object.values<Json>(content ?? {})[0]?.schema

const renderOperation = (method: string, path: string, op: Json, commonErrors: ReadonlySet<string>): string => {
  const out: Array<string> = [`### ${method.toUpperCase()} ${path}`, ""]
  if (op.summary) out.push(`${op.summary}.`.replace(/\.\.$/, "."), "")
  if (op.description) out.push(op.description, "")
  const isPublic = Array.isArray(op.security) && op.security.length === 0
  out.push(`Operation \`${op.operationId}\`; ${isPublic ? "public (no token)" : "needs `Authorization: Bearer <token>`"}.`, "")
  const parameters: Array<Json> = op.parameters ?? []
  if (parameters.length > 0) {
    out.push("| parameter | in | required | type | notes |", "|---|---|---|---|---|")
    for (const p of parameters) {
      // The schema's notes repeat the parameter's description when the schema carries it.
      const schemaNotes = notesOf(p.schema)
      const own = typeof p.description === "string" && schemaNotes.includes(p.description) ? undefined : p.description
      const notes = [own, schemaNotes].filter((x, i, all) => x && all.indexOf(x) === i).join("; ")
      out.push(`| \`${p.name}\` | ${p.in} | ${p.required ? "yes" : "no"} | ${cell(typeOf(p.schema))} | ${cell(notes)} |`)
    }
    out.push("")
  }
  const body = jsonSchemaOf(op.requestBody?.content)
  if (body !== undefined) {
    out.push(`**Request body**${op.requestBody?.required === false ? " (optional)" : ""}:`, "", renderSchema(body), "")
  }
  const statuses = Object.keys(op.responses ?? {}).sort()
  for (const status of statuses.filter((s) => Number(s) < 400)) {
    const response = op.responses[status]
    const schema = jsonSchemaOf(response.content)
    out.push(`**${status}** ${response.description ?? ""}${schema === undefined ? " (no body)." : ":"}`, "")
    if (schema !== undefined) out.push(renderSchema(schema), "")
  }
  const errors = statuses.filter((s) => Number(s) >= 400)
  const specific = errors.filter((s) => !commonErrors.has(`${s} ${errorNames(op.responses[s]).join(", ")}`))
  out.push(
    `**Errors**: ${specific.length === 0 ? "the common ones" : `${specific.map((s) => `${s} ${errorNames(op.responses[s]).join(", ")}`).join("; ")}; and the common ones`} ([Errors](#errors)).`,
    ""
  )
  return out.join("\n")
}

const errorNames = (response: Json): Array<string> => {
  const schema = jsonSchemaOf(response?.content)
  if (schema === undefined) return []
  const alternatives: Array<Json> = schema.anyOf ?? schema.oneOf ?? [schema]
  return alternatives.map((s) => (s.$ref ? refName(s.$ref) : typeOf(s)))
}

export const renderApiReference = (spec: Json): string => {
  const operations: Array<{ method: string; path: string; op: Json }> = []
  for (const [path, item] of Object.entries<Json>(spec.paths ?? {})) {
    for (const method of METHODS) if (item[method]) operations.push({ method, path, op: item[method] })
  }
  // An error status (with the same error names) that every operation can answer is listed once.
  const counts = new Map<string, number>()
  for (const { op } of operations) {
    for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
      if (Number(status) < 400) continue
      const key = `${status} ${errorNames(response).join(", ")}`
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
  }
  const common = new Set([...counts].filter(([, n]) => n === operations.length).map(([key]) => key))
  const authErrors = new Set(
    [...counts].filter(([key, n]) => n === operations.length - operations.filter(({ op }) => op.security?.length === 0).length && /^40[13] /.test(key)).map(([key]) => key)
  )
  const tags: Array<string> = (spec.tags ?? []).map((t: Json) => t.name)
  for (const { op } of operations) for (const t of op.tags ?? []) if (!tags.includes(t)) tags.push(t)

  const out: Array<string> = [
    `# API reference`,
    "",
    "<!-- Generated from the service's OpenAPI document by `npm run docs:api`; do not edit by hand. -->",
    "",
    `${spec.info?.title ?? "API"}, version ${spec.info?.version ?? "?"}. ${spec.info?.description ?? ""}`.trim(),
    "",
    "The same document is served by the service at `/api/openapi.json` (public) and rendered at",
    "`/api/docs`. Bodies are JSON; send `Content-Type: application/json`. Authentication, scopes and",
    "conventions: [api.md](api.md); a guided tour with curl: [quick-tour.md](quick-tour.md).",
    "",
    "## Endpoints",
    ""
  ]
  for (const tag of tags) {
    const inTag = operations.filter(({ op }) => (op.tags?.[0] ?? "other") === tag)
    if (inTag.length === 0) continue
    out.push(`- **${tag}**: ${inTag.map(({ method, path }) => `[${method.toUpperCase()} ${path}](#${anchor(`${method} ${path}`)})`).join(", ")}`)
  }
  out.push("")
  for (const tag of tags) {
    const inTag = operations.filter(({ op }) => (op.tags?.[0] ?? "other") === tag)
    if (inTag.length === 0) continue
    out.push(`## ${tag}`, "")
    for (const { method, path, op } of inTag) out.push(renderOperation(method, path, op, new Set([...common, ...authErrors])))
  }
  out.push(
    "## Errors",
    "",
    "Every error answers a JSON body with `_tag` and `message` (the schemas below). Any operation may answer:",
    "",
    ...[...common].sort().map((key) => `- ${key}`),
    ...[...authErrors].sort().map((key) => `- ${key} (operations that need a token)`),
    ""
  )
  const schemas = Object.entries<Json>(spec.components?.schemas ?? {})
  if (schemas.length > 0) {
    out.push("## Schemas", "")
    for (const [name, schema] of schemas) out.push(`### ${name}`, "", renderSchema(schema), "")
  }
  return `${out.join("\n").replace(/\n{3,}/g, "\n\n").trimEnd()}\n`
}
