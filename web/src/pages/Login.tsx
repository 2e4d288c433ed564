import { useState } from "preact/hooks"
import { acceptInvite, errorText, login, loginWithToken } from "../api"
import type { User } from "../types"

export function LoginPage({ onSignedIn }: { onSignedIn: (u: User) => void }) {
  const [error, setError] = useState("")
  const [busy, setBusy] = useState(false)

  const submit = (f: () => Promise<User>) => async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError("")
    try {
      onSignedIn(await f())
    } catch (err) {
      setError(errorText(err))
    } finally {
      setBusy(false)
    }
  }

  const [email, setEmail] = useState("")
  const [password, setPassword] = useState("")
  const [token, setToken] = useState("")

  return (
    <main id="main" class="auth">
      <h1>Sign in to jobmon</h1>
      <form onSubmit={submit(() => login(email, password))} class="card">
        <label>Email<input type="email" name="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} /></label>
        <label>Password<input type="password" name="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} /></label>
        <button type="submit" disabled={busy}>Sign in</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      <details class="card">
        <summary>Sign in with an API token</summary>
        <form onSubmit={submit(() => loginWithToken(token))}>
          <label>Token<input type="password" name="token" autoComplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} /></label>
          <p class="hint">Kept for this browser tab only. The first admin token is printed by the service on its first start.</p>
          <button type="submit" disabled={busy}>Use token</button>
        </form>
      </details>
    </main>
  )
}

export function InvitePage({ token, onSignedIn }: { token: string; onSignedIn: (u: User) => void }) {
  const [name, setName] = useState("")
  const [password, setPassword] = useState("")
  const [error, setError] = useState("")
  const [busy, setBusy] = useState(false)
  return (
    <main id="main" class="auth">
      <h1>Accept your invitation</h1>
      {token === "" ? <p class="error" role="alert">This link has no invitation token. Ask for a new invitation.</p> : (
        <form class="card" onSubmit={async (e) => {
          e.preventDefault()
          setBusy(true)
          setError("")
          try {
            onSignedIn(await acceptInvite(token, name, password))
          } catch (err) {
            setError(errorText(err))
          } finally {
            setBusy(false)
          }
        }}>
          <label>Your name<input name="name" autoComplete="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
          <label>Choose a password<input type="password" name="password" autoComplete="new-password" required minLength={8} value={password} onInput={(e) => setPassword(e.currentTarget.value)} /></label>
          <button type="submit" disabled={busy}>Create account</button>
        </form>
      )}
      {error && <p class="error" role="alert">{error}</p>}
    </main>
  )
}
