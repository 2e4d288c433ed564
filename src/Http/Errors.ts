import { HttpApi, type HttpApiError } from "@effect/platform"
import { MethodNotAllowed, NotFound, ValidationError } from "../Domain/Errors.js"

const EXPECTED = /^Expected (.+), actual (.+)$/s
const pathOf = (issue: { readonly path: ReadonlyArray<PropertyKey> }) => issue.path.map(String).join(".")
const oneLine = (message: string) => message.replace(/\s+/g, " ").trim()

/** The longest part of a sent value an error message quotes back (docs/security.md). */
export const MAX_ECHO = 100

/**
 * A message about a value quotes at most `MAX_ECHO` characters of it: a 150 MiB field must not
 * come back in the answer, nor a secret pasted into the wrong field be repeated whole.
 */
export const clipEcho = (message: string): string => {
  const m = /^(.*?\bactual )(.*)$/s.exec(message)
  const clipped = m !== null && m[2]!.length > MAX_ECHO ? `${m[1]}${m[2]!.slice(0, MAX_ECHO)}… (${m[2]!.length} characters)` : message
  return clipped.length > 4 * MAX_ECHO ? `${clipped.slice(0, 4 * MAX_ECHO)}…` : clipped
}

/**
 * The first problem of a decode failure, as one message: the path and what was wrong there. A
 * choice of literals fails once per allowed value ("Expected "a", actual "z"", then "b", …); those
 * are merged so the message names every value that is accepted, not only the first.
 */
export const firstProblem = (
  issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>
): { readonly path: string; readonly message: string } | undefined => {
  const first = issues[0]
  if (first === undefined) return undefined
  const path = pathOf(first)
  const message = oneLine(first.message)
  const actual = EXPECTED.exec(message)?.[2]
  if (actual === undefined) return { path, message: clipEcho(message) }
  // The run of issues at the same path about the same value: one per allowed value.
  const allowed: Array<string> = []
  for (const issue of issues) {
    const m = pathOf(issue) === path ? EXPECTED.exec(oneLine(issue.message)) : null
    if (m === null || m[2] !== actual) break
    if (!allowed.includes(m[1]!)) allowed.push(m[1]!)
  }
  // "undefined" is an optional field's other choice: leaving the field out.
  const values = allowed.filter((v) => v !== "undefined")
  if (values.length < 2) return { path, message: clipEcho(message) }
  const list = `${values.slice(0, -1).join(", ")} or ${values[values.length - 1]}`
  return { path, message: clipEcho(`Expected one of ${list}${values.length < allowed.length ? " (or no value)" : ""}, actual ${actual}`) }
}

/** A schema decode failure, said as one sentence that names the field (docs/decisions.md#errors). */
export const validationFromDecode = (error: HttpApiError.HttpApiDecodeError): ValidationError => {
  const problem = firstProblem(error.issues)
  if (problem === undefined) return new ValidationError({ path: "", message: clipEcho(error.message) })
  const { path, message } = problem
  return new ValidationError({
    path,
    message: path === "" ? `The request is invalid: ${message}` : `${path}: ${message}`
  })
}

/** Method + path patterns of the contract, to tell 405 (known path, other method) from 404. */
export const routeTable = (api: HttpApi.HttpApi.Any): ReadonlyArray<{ method: string; pattern: RegExp }> => {
  const routes: Array<{ method: string; pattern: RegExp }> = []
  HttpApi.reflect(api as never, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      const source = endpoint.path
        .split("/")
        .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
        .join("/")
      routes.push({ method: endpoint.method, pattern: new RegExp(`^${source}/?$`, "i") })
    }
  })
  return routes
}

const shownPath = (path: string) => (path.length > 100 ? `${path.slice(0, 100)}…` : path)

export const notFoundOrNotAllowed = (
  routes: ReadonlyArray<{ method: string; pattern: RegExp }>,
  method: string,
  url: string
) => {
  const path = url.split("?")[0] ?? url
  // Fixed segments match in any letter case, as the router matches them.
  const allowed = [...new Set(routes.filter((route) => route.pattern.test(path)).map((route) => route.method))]
  if (allowed.includes(method) || (method === "HEAD" && allowed.includes("GET"))) {
    // The route exists for this method but the router refused the request's id (over 100
    // characters): no such id was ever issued.
    return new NotFound({ message: `There is nothing at ${shownPath(path)}: an id in this path is longer than any id the service issues.` })
  }
  return allowed.length > 0
    ? new MethodNotAllowed({ message: `${method} is not allowed on ${shownPath(path)}; use ${allowed.join(", ")}.` })
    : new NotFound({ message: `There is no endpoint at ${method} ${shownPath(path)}. The API reference is at /api/docs.` })
}
