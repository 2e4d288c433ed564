import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkWithPromtool, find, parseExposition, valueOf } from "../Metrics/exposition.js"
import { api, balanced, createDatabase, createMonitor, incidentsOf, type Instance, launch, stop, type TestDatabase, TOKEN, waitFor } from "./support.js"

/**
 * GET /metrics with two instances (docs/metrics.md#several-instances): each serves its own service
 * metrics and the same per-monitor metrics, read from the shared database.
 */

let db: TestDatabase
let nodes: Array<Instance> = []

beforeAll(async () => {
  db = await createDatabase("jobmon_cluster_metrics")
  nodes.push(await launch("A", db.url))
  nodes.push(await launch("B", db.url))
  await balanced(nodes)
}, 180_000)

afterAll(async () => {
  await Promise.all(nodes.map((n) => stop(n, "SIGKILL")))
  await db?.drop()
}, 60_000)

const scrape = async (instance: Instance) => {
  const response = await fetch(`${instance.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
  expect(response.status).toBe(200)
  return response.text()
}

/** The per-monitor lines, sorted: what every instance must answer alike. */
const monitorLines = (text: string) => text.split("\n").filter((line) => line.startsWith("jobmon_monitor_")).sort()

describe("two instances", () => {
  it("each counts its own pings; both answer the same per-monitor metrics; their engines hold every monitor once", async () => {
    const [a, b] = nodes as [Instance, Instance]
    const monitors = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => createMonitor(i % 2 === 0 ? a : b, `metrics ${i}`, "1h", 60)))
    // 3 pings through A, 5 through B; one of B's a failure that opens an incident on the monitor's owner
    for (const m of monitors.slice(0, 3)) expect((await api(a, "POST", `/api/ping/${m.id}/success`, {})).status).toBe(200)
    for (const m of monitors.slice(1, 5)) expect((await api(b, "POST", `/api/ping/${m.id}/success`, {})).status).toBe(200)
    expect((await api(b, "POST", `/api/ping/${monitors[5]!.id}/fail`, { exitCode: 1 })).status).toBe(200)
    await waitFor("the FAIL incident", 10_000, async () => (await incidentsOf(a)).find((i) => i.monitorId === monitors[5]!.id && i.type === "FAIL"))
    // every instance shows the failing monitor once its owner has written it
    const [textA, textB] = await waitFor("both instances to show the failure", 10_000, async () => {
      const texts = await Promise.all([scrape(a), scrape(b)])
      return texts.every((t) => valueOf(parseExposition(t), "jobmon_monitor_up", { monitor_id: monitors[5]!.id }) === 0) ? texts : undefined
    })
    const [onA, onB] = [parseExposition(textA), parseExposition(textB)]

    expect(valueOf(onA, "jobmon_pings_total", { outcome: "accepted" })).toBe(3)
    expect(valueOf(onB, "jobmon_pings_total", { outcome: "accepted" })).toBe(5)
    expect(valueOf(onA, "jobmon_engine_monitors") + valueOf(onB, "jobmon_engine_monitors")).toBe(6)
    expect(valueOf(onA, "jobmon_engine_monitors")).toBeGreaterThan(0)

    expect(monitorLines(textA)).toEqual(monitorLines(textB))
    expect(find(onA, "jobmon_monitor_up")).toHaveLength(6)
    expect(valueOf(onB, "jobmon_monitor_open_incidents", { monitor_id: monitors[5]!.id })).toBe(1)
    expect(valueOf(onA, "jobmon_monitor_status", { monitor_id: monitors[5]!.id, status: "FAILING" })).toBe(1)
    for (const text of [textA, textB]) {
      const check = checkWithPromtool(text)
      if (check !== "skipped") expect(check).toEqual({ status: 0, output: "" })
    }
  }, 60_000)
})
