import { useEffect, useState } from "preact/hooks"

/** A small history router: the service answers index.html for every page path. */
const listeners = new Set<() => void>()

export function navigate(to: string, replace = false) {
  if (replace) history.replaceState(null, "", to)
  else history.pushState(null, "", to)
  listeners.forEach((l) => l())
  window.scrollTo(0, 0)
}

export function useLocation(): URL {
  const [, bump] = useState(0)
  useEffect(() => {
    const update = () => bump((n) => n + 1)
    listeners.add(update)
    window.addEventListener("popstate", update)
    return () => {
      listeners.delete(update)
      window.removeEventListener("popstate", update)
    }
  }, [])
  return new URL(location.href)
}

/** For <a href> inside the app: same-tab clicks navigate without reloading. */
export function onLink(e: MouseEvent) {
  const a = (e.currentTarget as HTMLAnchorElement)
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
  e.preventDefault()
  navigate(a.getAttribute("href")!)
}
