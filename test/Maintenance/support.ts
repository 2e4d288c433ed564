import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { Engine } from "../../src/Engine/Engine.js"
import { Maintenance } from "../../src/Maintenance/Maintenance.js"
import { call, sendPing } from "../support/fixture.js"

/** What the maintenance tests share; they run the whole service (TestServer) on the TestClock. */

/**
 * Lets the maintenance scheduler and the engine's workers finish what the clock set off: `rounds`
 * times, a pause of `pauseMs` in real time (not on the TestClock), then both services idle.
 */
export const settleWith = (rounds: number, pauseMs: number) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const maintenance = yield* Maintenance
    for (let i = 0; i < rounds; i++) {
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, pauseMs)))
      yield* maintenance.idle
      yield* engine.idle
    }
  })

export const settle = settleWith(3, 20)

/** Creates a window (as the fixture's admin, or as `token`); anything but 201 ends the test. */
export const createWindow = (body: Record<string, unknown>, token?: string) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/maintenance-windows", token === undefined ? { body } : { body, token })
    if (r.status !== 201) return yield* Effect.dieMessage(`window create failed: ${r.status} ${r.text}`)
    return r.body as Record<string, any>
  })

export const incidentsOf = (monitorId: string) =>
  Effect.map(call("GET", `/api/incidents?monitorId=${monitorId}`), (r) => {
    expect(r.status).toBe(200)
    return r.body.incidents as Array<any>
  })

/** The window's entries in the default history range (the 30 days up to today). */
export const historyOf = (windowId: string) =>
  Effect.map(call("GET", "/api/maintenance-windows/history"), (r) => {
    expect(r.status).toBe(200)
    return (r.body as Array<any>).filter((h) => h.windowId === windowId)
  })

/** A fail ping (exit code 1), then `settle`. */
export const fail = (monitorId: string) =>
  Effect.gen(function*() {
    const r = yield* sendPing(monitorId, "fail", { body: { exitCode: 1 } })
    expect(r.status).toBe(200)
    yield* settle
  })
