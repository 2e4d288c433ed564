import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { eventsOfMonitor } from "../Incidents/support.js"
import { call, TestServer, validMonitor } from "../support/fixture.js"

// failureThreshold and recoveryThreshold through the real server (docs/api.md; the rules: docs/incident-rules.md#thresholds).
layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("monitor thresholds API", (it) => {
  it.effect("a monitor has thresholds of 1 unless told; create and PATCH set them; GET and the list show them", () =>
    Effect.gen(function*() {
      const plain = yield* call("POST", "/api/monitors", { body: validMonitor() })
      expect(plain.status).toBe(201)
      expect(plain.body).toMatchObject({ failureThreshold: 1, recoveryThreshold: 1 })

      const created = yield* call("POST", "/api/monitors", { body: validMonitor({ failureThreshold: 3, recoveryThreshold: 2 }) })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({ failureThreshold: 3, recoveryThreshold: 2 })
      expect((yield* call("GET", `/api/monitors/${created.body.id}`)).body).toEqual(created.body)

      // PATCH changes only what it names; monitor.updated names the changed threshold.
      const patched = yield* call("PATCH", `/api/monitors/${created.body.id}`, { body: { recoveryThreshold: 100 } })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({ failureThreshold: 3, recoveryThreshold: 100 })
      const renamed = yield* call("PATCH", `/api/monitors/${created.body.id}`, { body: { name: "renamed" } })
      expect(renamed.body).toMatchObject({ failureThreshold: 3, recoveryThreshold: 100 })
      const updates = yield* eventsOfMonitor(created.body.id, "monitor.updated")
      expect(updates.map((e) => e.data.changes)).toEqual([["recoveryThreshold"], ["name"]])
      // Events carry the resource without pingUrl (a credential: docs/pings.md#ping-urls).
      const { pingUrl: _, ...withoutPingUrl } = patched.body
      expect(updates[0]!.data.monitor).toEqual(withoutPingUrl)

      const listed = yield* call("GET", "/api/monitors?limit=100")
      const mine = (listed.body.monitors as Array<any>).find((m) => m.id === created.body.id)
      expect(mine).toMatchObject({ name: "renamed", failureThreshold: 3, recoveryThreshold: 100 })
    }))

  const invalid: ReadonlyArray<[string, Record<string, unknown>, string]> = [
    ["failureThreshold 0", { failureThreshold: 0 }, "failureThreshold"],
    ["failureThreshold 101", { failureThreshold: 101 }, "failureThreshold"],
    ["failureThreshold 2.5", { failureThreshold: 2.5 }, "failureThreshold"],
    ["failureThreshold as a string", { failureThreshold: "3" }, "failureThreshold"],
    ["failureThreshold null", { failureThreshold: null }, "failureThreshold"],
    ["recoveryThreshold -1", { recoveryThreshold: -1 }, "recoveryThreshold"],
    ["recoveryThreshold 1000", { recoveryThreshold: 1000 }, "recoveryThreshold"]
  ]
  for (const [label, fields, path] of invalid) {
    it.effect(`${label} is a 400 naming ${path}, on create and on PATCH, and changes nothing`, () =>
      Effect.gen(function*() {
        const response = yield* call("POST", "/api/monitors", { body: validMonitor(fields) })
        expect(response.status).toBe(400)
        expect(response.body).toMatchObject({ _tag: "ValidationError", path })
        expect(response.body.message).toContain(`${path} must be a whole number from 1 to 100`)
        const monitor = (yield* call("POST", "/api/monitors", { body: validMonitor({ failureThreshold: 2 }) })).body
        const patch = yield* call("PATCH", `/api/monitors/${monitor.id}`, { body: fields })
        expect(patch.status).toBe(400)
        expect(patch.body).toMatchObject({ _tag: "ValidationError", path })
        expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body).toMatchObject({ failureThreshold: 2, recoveryThreshold: 1 })
      }))
  }
})
