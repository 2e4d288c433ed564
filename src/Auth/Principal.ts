import { Context } from "effect"
import type { Scope } from "./Scopes.js"

/**
 * Who is calling: the token's organization, owner and scope, or a signed-in user's (then `tokenId`
 * is `session:<session id>` and the scope follows the user's role, docs/dashboard-auth.md).
 */
export interface Principal {
  readonly tokenId: string
  readonly orgId: string
  readonly scope: Scope
  readonly userId: string | null
  readonly userName: string | null
  readonly userEmail: string | null
}

export class CurrentPrincipal extends Context.Tag("jobmon/CurrentPrincipal")<CurrentPrincipal, Principal>() {}
