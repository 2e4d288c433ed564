import { HttpApi } from "@effect/platform"
import { Context, Option } from "effect"
import type { Need } from "./Scopes.js"

/**
 * The scope an endpoint needs, declared where the endpoint (or its group) is defined:
 * `.annotate(RequiredScope, "admin")`. Without a declaration the endpoint's own method decides:
 * a GET needs `read`, any other method `write` (docs/decisions.md#tokens-and-scopes). The
 * authentication middleware looks the need up by the route the router matched (its declared method
 * and path), never by reading the request's URL again (docs/security.md).
 */
export class RequiredScope extends Context.Tag("jobmon/RequiredScope")<RequiredScope, Need>() {}

/** A route as the router knows it: the endpoint's declared method and path pattern. */
export const routeKey = (method: string, path: string) => `${method} ${path}`

/** Every endpoint's need, keyed by its declared method and path (`POST /api/tokens`). */
export const accessTable = (api: HttpApi.HttpApi.Any): ReadonlyMap<string, Need> => {
  const table = new Map<string, Need>()
  HttpApi.reflect(api as never, {
    onGroup() {},
    onEndpoint({ endpoint, mergedAnnotations }) {
      const declared = Context.getOption(mergedAnnotations, RequiredScope)
      const need: Need = Option.isSome(declared)
        ? declared.value
        : endpoint.method === "GET" || endpoint.method === "HEAD"
        ? "read"
        : "write"
      table.set(routeKey(endpoint.method, endpoint.path), need)
    }
  })
  return table
}
