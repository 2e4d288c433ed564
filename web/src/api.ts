/** The API client: the session cookie (with its CSRF token) or, failing that, a Bearer token. */

import type { SessionOrganizations, User } from "./types"

export class ApiError extends Error {
  constructor(readonly status: number, readonly tag: string, message: string, readonly path?: string) {
    super(message)
  }
}

let csrfToken: string | null = null
let bearer: string | null = sessionStorage.getItem("jobmon.token")
let onUnauthorized: () => void = () => {}

export const setUnauthorizedHandler = (f: () => void) => {
  onUnauthorized = f
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (bearer !== null) headers.authorization = `Bearer ${bearer}`
  else if (method !== "GET" && csrfToken !== null) headers["x-csrf-token"] = csrfToken
  const res = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  if (res.status === 204) return undefined as T
  const text = await res.text()
  let json: any = undefined
  try {
    json = text === "" ? undefined : JSON.parse(text)
  } catch {
    // not JSON: reported below
  }
  if (!res.ok) {
    if (res.status === 401 && !path.startsWith("/api/auth/")) onUnauthorized()
    throw new ApiError(res.status, json?._tag ?? "Error", json?.message ?? `The server answered ${res.status}.`, json?.path)
  }
  return json as T
}

/** The signed-in user, or null. A Bearer token (developer sign-in) has no user: a stand-in is shown. */
export async function currentSession(): Promise<User | null> {
  if (bearer !== null) {
    try {
      await api("GET", "/api/monitors?limit=1")
      return { id: "", email: "", name: "API token", orgId: "" }
    } catch {
      signOutLocally()
      return null
    }
  }
  try {
    const me = await api<{ user: User; csrfToken: string }>("GET", "/api/auth/me")
    csrfToken = me.csrfToken
    return me.user
  } catch {
    return null
  }
}

export async function login(email: string, password: string): Promise<User> {
  const answer = await api<{ user: User; csrfToken: string }>("POST", "/api/auth/login", { email, password })
  csrfToken = answer.csrfToken
  return answer.user
}

export async function acceptInvite(token: string, name: string, password: string): Promise<User> {
  const answer = await api<{ user: User; csrfToken: string }>("POST", "/api/auth/invites/accept", { token, name, password })
  csrfToken = answer.csrfToken
  return answer.user
}

/** The signed-in user's organizations (none for a Bearer token: a token belongs to one). */
export async function organizations(): Promise<SessionOrganizations> {
  if (bearer !== null) return { current: "", orgs: [] }
  return api<SessionOrganizations>("GET", "/api/auth/orgs")
}

/** The session acts in another of the user's organizations from now on. */
export async function switchOrganization(orgId: string): Promise<User> {
  const answer = await api<{ user: User; csrfToken: string }>("POST", "/api/auth/org", { orgId })
  csrfToken = answer.csrfToken
  return answer.user
}

export async function loginWithToken(token: string): Promise<User> {
  bearer = token.trim()
  const user = await currentSession()
  if (user === null) throw new ApiError(401, "Unauthorized", "That token was not accepted: check it is whole, active and not expired.")
  sessionStorage.setItem("jobmon.token", bearer)
  return user
}

function signOutLocally() {
  bearer = null
  csrfToken = null
  sessionStorage.removeItem("jobmon.token")
}

export async function logout(): Promise<void> {
  const hadBearer = bearer !== null
  try {
    if (!hadBearer) await api("POST", "/api/auth/logout")
  } finally {
    signOutLocally()
  }
}

export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e))
