import { HttpApi, type HttpApiError } from "@effect/platform"
import { MethodNotAllowed, NotFound, ValidationError } from "../Domain/Errors.js"

/** A schema decode failure, said as one sentence that names the field (decisions §1). */
export const validationFromDecode = (error: HttpApiError.HttpApiDecodeError): ValidationError => {
  const issue = error.issues[0]
  if (issue === undefined) return new ValidationError({ path: "", message: error.message })
  const path = issue.path.map(String).join(".")
  const message = issue.message.replace(/\s+/g, " ").trim()
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
      routes.push({ method: endpoint.method, pattern: new RegExp(`^${source}/?$`) })
    }
  })
  return routes
}

export const notFoundOrNotAllowed = (
  routes: ReadonlyArray<{ method: string; pattern: RegExp }>,
  method: string,
  url: string
) => {
  const path = url.split("?")[0] ?? url
  const allowed = routes.filter((route) => route.pattern.test(path)).map((route) => route.method)
  return allowed.length > 0
    ? new MethodNotAllowed({ message: `${method} is not allowed on ${path}; use ${[...new Set(allowed)].join(", ")}.` })
    : new NotFound({ message: `There is no endpoint at ${method} ${path}. The API reference is at /api/docs.` })
}
