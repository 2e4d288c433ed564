import { useEffect, useRef } from "preact/hooks"
import uPlot from "uplot"
import "uplot/dist/uPlot.min.css"
import type { Percentiles as AllPercentiles, Run } from "./types"
import { fmtDuration } from "./util"

type ChartRun = Pick<Run, "startedAt" | "durationMs" | "status">
type Percentiles = Pick<AllPercentiles, "p50" | "p95" | "p99">

const DAY_S = 86_400

/**
 * The time axis of the chart, in epoch seconds: from the first run (at the latest 24 h before the
 * end) to now (or the last run, if it is later), with 2% of room at each side. A single run, or a
 * few close together, gets the last day rather than uPlot's own fallback for one x value — which
 * adds 86,400 / 0.001 s (1,000 days) to a time scale in seconds.
 */
export function timeWindow(xs: readonly number[], nowS: number): [number, number] {
  const hi = Math.max(nowS, xs[xs.length - 1] ?? nowS)
  const lo = Math.min(xs[0] ?? hi, hi - DAY_S)
  const room = (hi - lo) * 0.02
  return [lo - room, hi + room]
}

/** Run durations over time, with the p50–p99 band, the p95 line and the SLA line (uPlot). */
export function DurationChart({ runs, percentiles, slaMs }: { runs: ChartRun[]; percentiles: Percentiles | null; slaMs: number | null }) {
  const el = useRef<HTMLDivElement>(null)
  const points = runs
    .filter((r) => r.durationMs !== null)
    .map((r) => [new Date(r.startedAt).getTime() / 1000, r.durationMs!, r.status] as const)
    .sort((a, b) => a[0] - b[0])
  const empty = points.length === 0
  useEffect(() => {
    const host = el.current
    if (!host || empty) return
    // The window's edges are two x values without data: uPlot's own x range (and the range a
    // double click restores after a zoom) is then exactly the window.
    const [lo, hi] = timeWindow(points.map((p) => p[0]), Date.now() / 1000)
    const xs = [lo, ...points.map((p) => p[0]), hi]
    const ok = [null, ...points.map((p) => (p[2] === "FAIL" ? null : p[1])), null]
    const failed = [null, ...points.map((p) => (p[2] === "FAIL" ? p[1] : null)), null]
    const flat = (v: number | null | undefined) => xs.map(() => v ?? null)
    const data: uPlot.AlignedData = [xs, ok, failed, flat(percentiles?.p50), flat(percentiles?.p95), flat(percentiles?.p99), flat(slaMs)]
    const dash = [6, 4]
    const opts: uPlot.Options = {
      width: Math.max(280, host.clientWidth),
      height: 260,
      scales: { y: { range: (_u, _min, max) => [0, Math.max(max ?? 0, slaMs ?? 0, percentiles?.p99 ?? 0) * 1.1 || 1] } },
      axes: [{}, { values: (_u, ticks) => ticks.map((t) => fmtDuration(t)), size: 70 }],
      series: [
        {},
        { label: "Run duration", stroke: "#1d4ed8", width: 1.5, points: { show: true, size: 6 }, value: (_u, v) => fmtDuration(v), spanGaps: true },
        { label: "Failed run", stroke: "#b91c1c", width: 0, points: { show: true, size: 8, fill: "#b91c1c" }, value: (_u, v) => fmtDuration(v) },
        { label: "p50", stroke: "#15803d", width: 1, dash, points: { show: false }, value: (_u, v) => fmtDuration(v) },
        { label: "p95", stroke: "#a16207", width: 1.5, dash, points: { show: false }, value: (_u, v) => fmtDuration(v) },
        { label: "p99", stroke: "#7e22ce", width: 1, dash, points: { show: false }, value: (_u, v) => fmtDuration(v) },
        { label: "SLA", stroke: "#dc2626", width: 2, points: { show: false }, value: (_u, v) => fmtDuration(v) }
      ],
      bands: percentiles ? [{ series: [5, 3], fill: "rgba(126, 34, 206, 0.08)" }] : [],
      hooks: {
        // The x range as drawn, for the browser tests (test/Web/MonitorChart.test.ts).
        setScale: [(u, key) => {
          if (key !== "x") return
          host.dataset.xMin = String(u.scales.x!.min)
          host.dataset.xMax = String(u.scales.x!.max)
        }]
      }
    }
    const plot = new uPlot(opts, data, host)
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, host.clientWidth), height: 260 }))
    resize.observe(host)
    return () => {
      resize.disconnect()
      plot.destroy()
    }
  }, [runs, percentiles, slaMs, empty])
  if (empty) return <p class="muted">No run has reported a duration yet.</p>
  return <div ref={el} class="chart" role="img" aria-label={`Run durations over time${percentiles ? `; p50 ${fmtDuration(percentiles.p50)}, p95 ${fmtDuration(percentiles.p95)}, p99 ${fmtDuration(percentiles.p99)}` : ""}${slaMs ? `; SLA ${fmtDuration(slaMs)}` : ""}`} />
}
