/** The fenced code blocks of a Markdown page, with the name of a `<!-- kind: name -->` (or
 * `<!-- name -->`) marker on the line just before the fence, when there is one. */
export interface CodeBlock {
  readonly lang: string
  readonly name: string | null
  readonly code: string
}

export const markdownCodeBlocks = (markdown: string): ReadonlyArray<CodeBlock> =>
  [...markdown.matchAll(/(?:<!--\s*(?:[\w-]+:\s*)?([\w.-]+)\s*-->\n)?```(\w*)\n([\s\S]*?)\n```/g)].map((m) => ({
    name: m[1] ?? null,
    lang: m[2] ?? "",
    code: m[3]!
  }))

export const markdownSqlBlocks = (markdown: string) =>
  markdownCodeBlocks(markdown)
    .filter((b) => b.lang === "sql")
    .map((b) => ({ name: b.name, sql: b.code }))
