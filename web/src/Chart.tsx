import { useEffect, useRef } from "preact/hooks"
import uPlot from "uplot"
import "uplot/dist/uPlot.min.css"
import { fmtDuration } from "./util"

export interface ChartRun { startedAt: string; durationMs: number | null; status: string }
export interface Percentiles { p50: number; p95: number; p99: number }

/** Run durations over time, with the p50–p99 band, the p95 line and the SLA line (uPlot). */
export function DurationChart({ runs, percentiles, slaMs }: { runs: ChartRun[]; percentiles: Percentiles | null; slaMs: number | null }) {
  const el = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const host = el.current
    if (!host) return
    const points = runs
      .filter((r) => r.durationMs !== null)
      .map((r) => [new Date(r.startedAt).getTime() / 1000, r.durationMs!, r.status] as const)
      .sort((a, b) => a[0] - b[0])
    const xs = points.map((p) => p[0])
    const ok = points.map((p) => (p[2] === "FAIL" ? null : p[1]))
    const failed = points.map((p) => (p[2] === "FAIL" ? p[1] : null))
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
      bands: percentiles ? [{ series: [5, 3], fill: "rgba(126, 34, 206, 0.08)" }] : []
    }
    const plot = new uPlot(opts, data, host)
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, host.clientWidth), height: 260 }))
    resize.observe(host)
    return () => {
      resize.disconnect()
      plot.destroy()
    }
  }, [runs, percentiles, slaMs])
  return <div ref={el} class="chart" role="img" aria-label={`Run durations over time${percentiles ? `; p50 ${fmtDuration(percentiles.p50)}, p95 ${fmtDuration(percentiles.p95)}, p99 ${fmtDuration(percentiles.p99)}` : ""}${slaMs ? `; SLA ${fmtDuration(slaMs)}` : ""}`} />
}
