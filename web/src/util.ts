import { useEffect, useRef, useState } from "preact/hooks"

/** The current time, updated every `ms` (the countdowns tick every second). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now())
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms)
    return () => clearInterval(t)
  }, [ms])
  return now
}

/** Runs `load` now and every `ms` while the page is shown (live refresh without reloading). */
export function usePoll(load: () => Promise<void> | void, ms: number, deps: unknown[] = []) {
  const saved = useRef(load)
  saved.current = load
  const every = useRef(ms)
  every.current = ms
  useEffect(() => {
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const tick = async () => {
      try {
        await saved.current()
      } catch {
        // the page shows its own error; keep polling
      }
      if (!stopped) timer = setTimeout(tick, every.current)
    }
    void tick()
    return () => {
      stopped = true
      clearTimeout(timer)
    }
  }, deps)
}

export const fmtTime = (iso: string | null | undefined, timeZone?: string) => {
  if (!iso) return "—"
  const d = new Date(iso)
  return d.toLocaleString(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
    ...(timeZone ? { timeZone, timeZoneName: "short" } : {})
  })
}

/** "3 min ago", "in 2 h" */
export const fmtRelative = (iso: string | null | undefined, now: number) => {
  if (!iso) return "—"
  const s = Math.round((new Date(iso).getTime() - now) / 1000)
  const a = Math.abs(s)
  const text = a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min` : a < 86400 ? `${Math.round(a / 360) / 10} h` : `${Math.round(a / 8640) / 10} d`
  return s < 0 ? `${text} ago` : `in ${text}`
}

/** 1h 02m 05s */
export const fmtRemaining = (seconds: number) => {
  const s = Math.max(0, Math.floor(seconds))
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  const sec = s % 60
  const pad = (n: number) => String(n).padStart(2, "0")
  return h > 0 ? `${h}h ${pad(m)}m ${pad(sec)}s` : `${m}m ${pad(sec)}s`
}

export const fmtDuration = (ms: number | null | undefined) => {
  if (ms === null || ms === undefined) return "—"
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const m = Math.floor(ms / 60_000)
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`
}

/** The UTC offset (ms) of `timeZone` at instant `t`. */
function offsetAt(t: number, timeZone: string) {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit"
  }).formatToParts(new Date(t))
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value)
  const asUtc = Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second"))
  return asUtc - Math.floor(t / 1000) * 1000
}

/** A wall time "YYYY-MM-DDTHH:mm" in `timeZone` as an ISO instant. */
export function zonedToIso(local: string, timeZone: string): string {
  const [date, time = "00:00"] = local.split("T")
  const [y, mo, d] = date!.split("-").map(Number)
  const [h, mi] = time.split(":").map(Number)
  const guess = Date.UTC(y!, mo! - 1, d!, h!, mi!)
  let t = guess - offsetAt(guess, timeZone)
  t = guess - offsetAt(t, timeZone)
  return new Date(t).toISOString()
}

/** An instant as the wall time "YYYY-MM-DDTHH:mm" in `timeZone` (for datetime-local inputs). */
export function isoToZoned(t: number, timeZone: string): string {
  const local = new Date(t + offsetAt(t, timeZone))
  return local.toISOString().slice(0, 16)
}

export const zones = (): string[] => {
  const f = (Intl as any).supportedValuesOf
  return typeof f === "function" ? ["UTC", ...f("timeZone").filter((z: string) => z !== "UTC")] : ["UTC"]
}
