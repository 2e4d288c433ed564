import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { shardOf } from "../../src/Engine/Shards.js"
import {
  api,
  balanced,
  clusterOf,
  createDatabase,
  createMonitor,
  databaseProxy,
  eventCount,
  freePort,
  incidentsOf,
  type Instance,
  launch,
  launchFailing,
  type Monitor,
  ownerOf,
  restart,
  sleep,
  stop,
  type TestDatabase,
  TOKEN,
  waitFor
} from "./support.js"

/**
 * Several instances, one service (docs/operations.md#several-instances): three `jobmon serve`
 * processes in cluster mode on one database, driven over HTTP, with the short timers of
 * test/Cluster/support.ts (locks refreshed every 500 ms, taken over after 3 s).
 */

let db: TestDatabase
let nodes: Array<Instance> = []
const live = () => nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null)

/** Pings every monitor every `everyMs` through the live instances in turn; answers other than 200 are kept. */
const pinger = (monitors: ReadonlyArray<Monitor>, everyMs: number) => {
  let running = true
  let turn = 0
  const refused: Array<string> = []
  let sent = 0
  const done = (async () => {
    while (running) {
      const started = Date.now()
      for (const m of monitors) {
        const targets = live()
        const target = targets[turn++ % targets.length]!
        // An instance stopping under the request refuses it (503: not stored, not acknowledged) or
        // drops the connection: the client sends it again to another, as `jobmon` and a load
        // balancer do (docs/client.md, "Retries").
        const status = await api(target, "POST", `/api/ping/${m.id}/success`, {}).then((r) => r.status, () => 0)
        sent++
        if (status === 200) continue
        const other = live().find((n) => n !== target)
        const again = other === undefined ? 0 : await api(other, "POST", `/api/ping/${m.id}/success`, {}).then((r) => r.status, () => 0)
        if (again !== 200) refused.push(`${target.name}: ${status}, then ${other?.name}: ${again}`)
      }
      await sleep(Math.max(0, everyMs - (Date.now() - started)))
    }
  })()
  return {
    stop: async () => {
      running = false
      await done
      return { refused, sent }
    }
  }
}

const deadlineOf = (m: Monitor) => Date.parse(m.nextExpectedAt!) + m.graceSeconds * 1000

beforeAll(async () => {
  db = await createDatabase("jobmon_cluster")
  // All three at once on a new database: one migrates and creates the cluster's tables while the
  // others wait (docs/operations.md, "Several instances").
  nodes.push(...(await Promise.all([launch("A", db.url), launch("B", db.url), launch("C", db.url)])))
  await balanced(nodes)
}, 180_000)

afterAll(async () => {
  await Promise.all(nodes.map((n) => stop(n, "SIGKILL")))
  await db?.drop()
}, 60_000)

describe("three instances", () => {
  it("share the 64 shards, each instance reporting itself and the others", async () => {
    const views = await balanced(nodes)
    for (const view of views) {
      expect(view.clustered).toBe(true)
      expect(view.members.length).toBe(3)
      expect(view.instance.shards.length).toBeGreaterThanOrEqual(10)
    }
    expect(views.map((v) => v.instance.address).sort()).toEqual(views[0]!.members.map((m) => m.address).sort())
    // what the members report (their heartbeats, a moment behind their own views) agrees
    const reported = await waitFor("the members' reports to cover every shard", 5_000, async () => {
      const view = await clusterOf(nodes[1]!)
      return view.unownedShards.length === 0 ? view : undefined
    })
    for (const view of views) {
      expect(reported.members.find((m) => m.address === view.instance.address)!.shards).toEqual(view.instance.shards)
    }
  })

  it("a start on one instance and its success on another are one run, with or without runId; a failure's output reaches the owner's incident", async () => {
    const [a, b, c] = nodes as [Instance, Instance, Instance]
    const monitor = await createMonitor(a, "paired", "1h", 60)
    for (let i = 0; i < 5; i++) {
      const started = await api<{ runId: string }>(a, "POST", `/api/ping/${monitor.id}/start`, {})
      const finished = await api<{ runId: string }>(b, "POST", `/api/ping/${monitor.id}/success`, {})
      expect(started.status).toBe(200)
      expect(finished.body.runId).toBe(started.body.runId)
    }
    const named = await api<{ runId: string }>(c, "POST", `/api/ping/${monitor.id}/start`, {})
    const closed = await api<{ runId: string }>(a, "POST", `/api/ping/${monitor.id}/fail?runId=${named.body.runId}`, {
      exitCode: 3,
      output: "disk full on /var/backups"
    })
    expect(closed.status).toBe(200)
    expect(closed.body.runId).toBe(named.body.runId)
    // a second finish of that run, on the third instance, is a conflict as on one instance
    const again = await api(b, "POST", `/api/ping/${monitor.id}/success?runId=${named.body.runId}`, {})
    expect(again.status).toBe(409)
    const runs = await api<{ runs: Array<{ id: string; status: string }> }>(b, "GET", `/api/monitors/${monitor.id}/runs?limit=100`)
    expect(runs.body.runs.length).toBe(6)
    expect(runs.body.runs.filter((r) => r.status === "RUNNING")).toEqual([])
    // The FAIL incident is raised once, by the owner, with the output the failure carried.
    const fail = await waitFor("the FAIL incident", 10_000, async () =>
      (await incidentsOf(c)).find((i) => i.monitorId === monitor.id && i.type === "FAIL"))
    const detail = await api<{ details: Record<string, unknown> }>(a, "GET", `/api/incidents/${fail.id}`)
    expect(JSON.stringify(detail.body.details)).toContain("disk full")
  }, 60_000)

  it("a ping taken by an instance that does not judge its monitor reaches the owner within 1 s", async () => {
    const lags: Array<number> = []
    for (let i = 0; i < 5; i++) {
      const monitor = await createMonitor(nodes[i % 3]!, `news ${i}`, "1h", 60)
      const owner = await ownerOf(nodes, monitor.id)
      const other = nodes.find((n) => n !== owner)!
      expect(owner).toBeDefined()
      const sent = await api(other, "POST", `/api/ping/${monitor.id}/fail`, { exitCode: 1 })
      const acknowledged = Date.now()
      expect(sent.status).toBe(200)
      await waitFor("the FAIL incident", 10_000, async () =>
        (await incidentsOf(owner!)).find((x) => x.monitorId === monitor.id && x.type === "FAIL"), 10)
      // (seen by polling: an upper bound)
      lags.push(Date.now() - acknowledged)
    }
    console.log(`cluster test: a FAIL ping taken by a non-owner became an incident on its owner ${lags.join(", ")} ms after its 200`)
    for (const lag of lags) expect(lag).toBeLessThan(1_000)
  }, 60_000)

  it("a monitor created on A, paused on B, resumed and deleted on C: its owner follows each step", async () => {
    const [a, b, c] = nodes as [Instance, Instance, Instance]
    const monitor = await createMonitor(a, "follow", "10s", 1)
    expect((await api(b, "POST", `/api/monitors/${monitor.id}/pause`)).status).toBe(200)
    // paused: its deadline (11 s) passes without an incident
    await sleep(Math.max(0, deadlineOf(monitor) - Date.now()) + 1_500)
    expect((await incidentsOf(a)).filter((i) => i.monitorId === monitor.id)).toEqual([])
    const resumed = await api<Monitor>(c, "POST", `/api/monitors/${monitor.id}/resume`)
    expect(resumed.status).toBe(200)
    // resumed: expected again from now, so MISSED comes after 10 s + 1 s of grace
    const missed = await waitFor("MISSED after the resume", 15_000, async () =>
      (await incidentsOf(b)).find((i) => i.monitorId === monitor.id && i.type === "MISSED"))
    expect(Date.parse(missed.createdAt)).toBeGreaterThanOrEqual(deadlineOf(resumed.body) - 50)
    expect((await api(c, "DELETE", `/api/monitors/${monitor.id}`)).status).toBe(204)
    const occurrences = (await incidentsOf(a)).find((i) => i.id === missed.id)!.occurrences
    // deleted: the owner's actor stopped, nothing more is counted
    await sleep(6_000)
    const after = (await incidentsOf(a)).find((i) => i.id === missed.id)
    expect(after === undefined || after.occurrences === occurrences).toBe(true)
    expect((await incidentsOf(a)).filter((i) => i.monitorId === monitor.id).length).toBeLessThanOrEqual(1)
  }, 60_000)

  it("pings sent round-robin for a minute raise no incident, while silent monitors are MISSED once each, on time", async () => {
    const [a, b, c] = nodes as [Instance, Instance, Instance]
    const pinged: Array<Monitor> = []
    for (let i = 0; i < 9; i++) pinged.push(await createMonitor([a, b, c][i % 3]!, `pinged ${i}`, "10s", 3))
    const load = pinger(pinged, 5_000)
    const silent: Array<Monitor> = []
    for (let i = 0; i < 9; i++) silent.push(await createMonitor([a, b, c][i % 3]!, `silent ${i}`, "10s", 2))
    await sleep(60_000)
    const { refused, sent } = await load.stop()
    expect(refused).toEqual([])
    expect(sent).toBeGreaterThanOrEqual(9 * 10)
    const incidents = await incidentsOf(a)
    expect(incidents.filter((i) => pinged.some((m) => m.id === i.monitorId))).toEqual([])
    for (const m of silent) {
      const mine = incidents.filter((i) => i.monitorId === m.id)
      expect(mine.map((i) => i.type)).toEqual(["MISSED"])
      const late = Date.parse(mine[0]!.createdAt) - deadlineOf(m)
      expect(late).toBeGreaterThanOrEqual(-50)
      expect(late).toBeLessThan(10_000)
    }
    const opened = await eventCount(db.url, "incident.opened", silent.map((m) => m.id))
    expect([...opened.values()]).toEqual(silent.map(() => 1))
  }, 120_000)

  it("kill -9 of the owner of silent monitors: the survivors raise their MISSED once, within 10 s of the deadlines; the instance rejoins", async () => {
    const [a] = nodes as [Instance]
    const victim = nodes[2]!
    const victimShards = new Set((await clusterOf(victim)).instance.shards)
    const ownedByVictim = (m: Monitor) => victimShards.has(shardOf(m.id))
    const silent: Array<Monitor> = []
    // monitors until four are judged by the victim
    for (let i = 0; silent.filter(ownedByVictim).length < 4 && i < 200; i++) {
      silent.push(await createMonitor(a, `orphan ${i}`, "10s", 1))
    }
    expect(silent.filter(ownedByVictim).length).toBeGreaterThanOrEqual(4)
    expect(await ownerOf(nodes, silent.find(ownedByVictim)!.id)).toBe(victim)
    // an hourly job of the victim's, which reports a failure while its shard is between owners
    let failing: Monitor | undefined
    for (let i = 0; failing === undefined && i < 200; i++) {
      const m = await createMonitor(a, `hourly ${i}`, "1h", 60)
      if (ownedByVictim(m)) failing = m
    }
    const killedAt = Date.now()
    await stop(victim, "SIGKILL")
    const failed = await api(a, "POST", `/api/ping/${failing!.id}/fail`, { exitCode: 3, output: "disk full while nobody judged" })
    expect(failed.status).toBe(200)
    // the survivors take the victim's shards
    const survivors = nodes.filter((n) => n !== victim)
    await balanced(survivors, 20_000)
    const takeover = Date.now() - killedAt
    console.log(`cluster test: after kill -9, the survivors held every shard ${takeover} ms later`)
    expect(takeover).toBeLessThan(10_000)
    const latest = Math.max(...silent.map(deadlineOf))
    await sleep(Math.max(0, latest - Date.now()) + 3_000)
    const incidents = await incidentsOf(a)
    for (const m of silent) {
      const mine = incidents.filter((i) => i.monitorId === m.id)
      expect(mine.map((i) => i.type)).toEqual(["MISSED"])
      const late = Date.parse(mine[0]!.createdAt) - deadlineOf(m)
      expect(late).toBeGreaterThanOrEqual(-50)
      expect(late).toBeLessThan(10_000)
    }
    const opened = await eventCount(db.url, "incident.opened", silent.map((m) => m.id))
    expect([...opened.values()].every((n) => n === 1)).toBe(true)
    expect(opened.size).toBe(silent.length)
    // the failure reported in the gap opens its incident once the new owner has the shard
    const fail = incidents.filter((i) => i.monitorId === failing!.id)
    expect(fail.map((i) => i.type)).toEqual(["FAIL"])
    const detail = await api(a, "GET", `/api/incidents/${fail[0]!.id}`)
    expect(JSON.stringify(detail.body)).toContain("disk full while nobody judged")
    expect((await eventCount(db.url, "incident.opened", [failing!.id])).get(failing!.id)).toBe(1)
    // the same instance again takes its share, counted from when it answers (its start-up aside)
    nodes[2] = await restart(victim)
    const upAt = Date.now()
    await balanced(nodes, 30_000)
    const rebalance = Date.now() - upAt
    console.log(`cluster test: a restarted instance had its share ${rebalance} ms after it answered /healthz`)
    expect(rebalance).toBeLessThan(15_000)
  }, 120_000)

  it("SIGTERM hands an instance's shards over within about 2 s; a rolling restart of all three raises no false incident", async () => {
    const pinged: Array<Monitor> = []
    for (let i = 0; i < 6; i++) pinged.push(await createMonitor(nodes[i % 3]!, `rolling ${i}`, "10s", 2))
    const load = pinger(pinged, 3_000)
    const handovers: Array<number> = []
    for (let i = 0; i < 3; i++) {
      const leaving = nodes[i]!
      const stoppedAt = Date.now()
      await stop(leaving, "SIGTERM")
      const others = nodes.filter((n) => n !== leaving)
      await balanced(others, 15_000)
      handovers.push(Date.now() - stoppedAt)
      nodes[i] = await restart(leaving)
      await balanced(nodes, 30_000)
    }
    await sleep(3_000)
    const { refused } = await load.stop()
    expect(refused).toEqual([])
    const incidents = await incidentsOf(nodes[0]!)
    expect(incidents.filter((i) => pinged.some((m) => m.id === i.monitorId))).toEqual([])
    console.log(`cluster test: from SIGTERM to the others holding every shard: ${handovers.join(", ")} ms`)
    // from SIGTERM to the others holding every shard (the process's own shutdown included)
    for (const ms of handovers) expect(ms).toBeLessThan(5_000)
  }, 240_000)
})

describe("an instance that loses its database", () => {
  it("pairs a success with a start whose news came late; cut off, it stops judging, the others take its shards and raise its monitors' MISSED on time; it rejoins when the database is back", async () => {
    const proxy = await databaseProxy(db.url)
    const cut = await launch("D", proxy.url)
    try {
      const four = [...nodes, cut]
      await balanced(four, 30_000)
      // First, news that comes late: D hears of a start taken by A only after a success without
      // runId reached D. D pairs it once it has caught up with everything committed before it
      // (docs/engine.md, "Several instances"), instead of opening a second run.
      const paired = await createMonitor(nodes[0]!, "paired through late news", "1h", 60)
      // (a run with a start first: D has seen that this job reports its starts)
      const warmStart = await api<{ runId: string }>(cut, "POST", `/api/ping/${paired.id}/start`, {})
      const warm = await api<{ runId: string }>(cut, "POST", `/api/ping/${paired.id}/success`, {})
      expect(warm.body.runId).toBe(warmStart.body.runId)
      proxy.hold()
      const started = await api<{ runId: string }>(nodes[0]!, "POST", `/api/ping/${paired.id}/start`, {})
      expect(started.status).toBe(200)
      const finishing = api<{ runId: string }>(cut, "POST", `/api/ping/${paired.id}/success`, {})
      await sleep(300)
      proxy.release()
      const finished = await finishing
      expect(finished.status).toBe(200)
      expect(finished.body.runId).toBe(started.body.runId)
      const pairedRuns = await api<{ runs: Array<{ id: string; status: string }> }>(nodes[1]!, "GET", `/api/monitors/${paired.id}/runs?limit=10`)
      expect(pairedRuns.body.runs.map((r) => r.status)).toEqual(["SUCCESS", "SUCCESS"])
      const held = new Set((await clusterOf(cut)).instance.shards)
      const silent: Array<Monitor> = []
      for (let i = 0; silent.filter((m) => held.has(shardOf(m.id))).length < 3 && i < 200; i++) {
        silent.push(await createMonitor(nodes[0]!, `cut off ${i}`, "10s", 1))
      }
      const cutAt = Date.now()
      proxy.cut()
      await balanced(nodes, 20_000)
      console.log(`cluster test: ${Date.now() - cutAt} ms after D lost its database, the others held every shard`)
      await waitFor("D to say it stopped judging", 20_000, async () => (cut.log.includes("Shard lock storage is unhealthy") ? true : undefined))
      const latest = Math.max(...silent.map(deadlineOf))
      await sleep(Math.max(0, latest - Date.now()) + 3_000)
      const incidents = await incidentsOf(nodes[0]!)
      for (const m of silent) {
        const mine = incidents.filter((i) => i.monitorId === m.id)
        expect(mine.map((i) => i.type)).toEqual(["MISSED"])
        expect(Date.parse(mine[0]!.createdAt) - deadlineOf(m)).toBeLessThan(10_000)
      }
      const opened = await eventCount(db.url, "incident.opened", silent.map((m) => m.id))
      expect([...opened.values()].every((n) => n === 1)).toBe(true)
      // back: it takes a share again
      proxy.restore()
      await balanced(four, 40_000)
    } finally {
      await stop(cut, "SIGKILL")
      await proxy.close()
    }
    await balanced(nodes, 20_000)
  }, 180_000)
})

describe("bad configuration", () => {
  it("a CLUSTER_PORT in use, or a CLUSTER_HOST the instance cannot be reached at, stops the start with a clear error", async () => {
    const taken = nodes[0]!
    const inUse = await launchFailing({
      DATABASE_URL: db.url,
      HOST: "127.0.0.1",
      PORT: String(await freePort()),
      CLUSTER_PORT: String(taken.clusterPort),
      BOOTSTRAP_TOKEN: TOKEN
    })
    expect(inUse.code).not.toBe(0)
    expect(inUse.output).toContain(`CLUSTER_PORT ${taken.clusterPort} is already in use`)
    const unreachable = await launchFailing({
      DATABASE_URL: db.url,
      HOST: "127.0.0.1",
      PORT: String(await freePort()),
      CLUSTER_PORT: String(await freePort()),
      CLUSTER_HOST: "192.0.2.1",
      BOOTSTRAP_TOKEN: TOKEN
    })
    expect(unreachable.code).not.toBe(0)
    expect(unreachable.output).toContain("CLUSTER_HOST 192.0.2.1 is not reachable")
  }, 120_000)
})

