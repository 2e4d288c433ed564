import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { currentSession, errorText, logout, organizations, setUnauthorizedHandler, switchOrganization } from "./api"
import type { SessionOrganizations, User } from "./types"
import { navigate, onLink, useLocation } from "./router"
import { InvitePage, LoginPage } from "./pages/Login"
import { MonitorsPage } from "./pages/Monitors"
import { MonitorPage } from "./pages/Monitor"
import { IncidentsPage } from "./pages/Incidents"
import { MaintenancePage } from "./pages/Maintenance"
import { SettingsPage } from "./pages/Settings"
import "./style.css"

const nav = [
  ["/monitors", "Monitors"],
  ["/incidents", "Incidents"],
  ["/maintenance", "Maintenance"],
  ["/settings", "Settings"]
] as const

/**
 * The organization the session acts in, for a user who belongs to several: choosing another one
 * switches the session (POST /api/auth/org), and every page then shows that organization only.
 */
function OrgSwitcher({ user, onSwitched }: { user: User; onSwitched: (u: User) => void }) {
  const [orgs, setOrgs] = useState<SessionOrganizations | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    if (user.id === "") return
    void organizations().then(setOrgs, () => setOrgs(null))
  }, [user.id, user.orgId])
  if (orgs === null || orgs.orgs.length < 2) return null
  return (
    <div class="org">
      <label for="org-switcher">Organization</label>
      <select
        id="org-switcher"
        value={user.orgId}
        onChange={async (e) => {
          const orgId = (e.currentTarget as HTMLSelectElement).value
          setError(null)
          try {
            onSwitched(await switchOrganization(orgId))
          } catch (err) {
            setError(errorText(err))
          }
        }}
      >
        {orgs.orgs.map((org) => <option value={org.id}>{org.name} ({org.slug})</option>)}
      </select>
      {error === null ? null : <span role="alert" class="error">{error}</span>}
    </div>
  )
}

function App() {
  const url = useLocation()
  const [user, setUser] = useState<User | null | undefined>(undefined)
  const path = url.pathname

  useEffect(() => {
    setUnauthorizedHandler(() => setUser(null))
    void currentSession().then(setUser)
  }, [])

  useEffect(() => {
    const page = nav.find(([href]) => path.startsWith(href))?.[1] ?? (path.startsWith("/invite") ? "Accept invitation" : "Sign in")
    document.title = `${page} · jobmon`
  }, [path])

  if (path.startsWith("/invite")) {
    return <InvitePage token={url.searchParams.get("token") ?? ""} onSignedIn={(u) => { setUser(u); navigate("/monitors", true) }} />
  }
  if (user === undefined) return <p class="loading" role="status">Loading…</p>
  if (user === null) {
    return <LoginPage onSignedIn={(u) => { setUser(u); if (path === "/" || path === "/login") navigate("/monitors", true) }} />
  }
  if (path === "/" || path === "/login") {
    queueMicrotask(() => navigate("/monitors", true))
    return null
  }

  const monitorId = /^\/monitors\/([^/]+)/.exec(path)?.[1]
  const page = monitorId ? <MonitorPage id={decodeURIComponent(monitorId)} />
    : path.startsWith("/monitors") ? <MonitorsPage />
    : path.startsWith("/incidents") ? <IncidentsPage focus={/^\/incidents\/([^/]+)/.exec(path)?.[1]} />
    : path.startsWith("/maintenance") ? <MaintenancePage />
    : path.startsWith("/settings") ? <SettingsPage />
    : <section><h1>Page not found</h1><p>There is no page at {path}. <a href="/monitors" onClick={onLink}>Go to the monitors</a>.</p></section>

  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <a class="brand" href="/monitors" onClick={onLink}>jobmon</a>
        <nav aria-label="Main">
          <ul>
            {nav.map(([href, label]) => (
              <li><a href={href} onClick={onLink} aria-current={path.startsWith(href) ? "page" : undefined}>{label}</a></li>
            ))}
          </ul>
        </nav>
        <OrgSwitcher
          user={user}
          onSwitched={(u) => {
            setUser(u)
            // A monitor or incident page belongs to the organization left behind: start from the list.
            if (!(nav.some(([href]) => path === href))) navigate("/monitors", true)
          }}
        />
        <div class="who">
          <span title={user.email}>{user.name}</span>
          <button type="button" class="link" onClick={async () => { await logout(); setUser(null); navigate("/login", true) }}>Sign out</button>
        </div>
      </header>
      {/* Keyed by organization: a switch remounts the page, which loads that organization's data. */}
      <main id="main" tabIndex={-1} key={user.orgId}>{page}</main>
    </>
  )
}

render(<App />, document.getElementById("app")!)
