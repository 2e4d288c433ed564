import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { createUser, TestApp, TestServer } from "../support/fixture.js"
import { hasChromium, launch } from "./browser.js"

/**
 * The monitor page's duration chart and its "Runs (30 d)" card in a real browser (Debian's
 * Chromium through playwright-core) against the real service: the time axis covers the runs and
 * ends now, a single run gets a window of a day rather than years, no runs show an empty state,
 * and the card counts every run of the last 30 days with its failures.
 */

if (!hasChromium) {
  console.warn("SKIPPED test/Web/MonitorChart.test.ts: /usr/bin/chromium is missing (apt-get install chromium to run the browser tests)")
}

const HOUR = 3600
const DAY = 24 * HOUR

/** The chart's x scale as uPlot set it (epoch seconds), read from the chart's data attributes. */
const xScale = async (page: Page) => {
  const chart = page.locator(".chart[data-x-min]")
  await chart.waitFor()
  const min = Number(await chart.getAttribute("data-x-min"))
  const max = Number(await chart.getAttribute("data-x-max"))
  expect(Number.isFinite(min) && Number.isFinite(max)).toBe(true)
  return { min, max }
}

/** The text of the facts card named `label` once it has loaded (it shows "—" until then). */
const card = async (page: Page, label: string) => {
  const dd = page.locator(".facts div", { has: page.getByText(label, { exact: true }) }).locator("dd")
  await dd.filter({ hasNotText: "—" }).waitFor()
  return (await dd.textContent())!.trim()
}

/** The real service's API with the bootstrap admin token. */
const apiOf = (baseUrl: string, token: string) => async (method: string, path: string, body?: unknown): Promise<any> => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  expect(response.status, `${method} ${path}`).toBeLessThan(300)
  return response.json()
}

/** A signed-in page of a fresh browser, given to `use`; no page errors allowed. */
const withSignedInPage = (baseUrl: string, email: string, use: (page: Page) => Promise<void>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => launch()),
    ({ context }) =>
      Effect.promise(async () => {
        const page = await context.newPage()
        const errors: string[] = []
        page.on("pageerror", (e) => errors.push(e.message))
        await page.goto(`${baseUrl}/`)
        await page.getByLabel("Email").fill(email)
        await page.getByLabel("Password").fill(PASSWORD)
        await page.getByRole("button", { name: "Sign in", exact: true }).click()
        await page.getByRole("heading", { name: "Monitors" }).waitFor()
        await use(page)
        expect(errors).toEqual([])
      }),
    ({ close }) => Effect.promise(close)
  )

const PASSWORD = "correct horse battery"
const schedule = { type: "interval", expression: "1h" }

describe.skipIf(!hasChromium)("monitor page chart in Chromium", () => {
  layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("a monitor's runs", (it) => {
    it.effect("one failed run: the axis is the last day, ending now, with the run in it (not years); the card counts 1 run, 1 failed", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        yield* createUser({ email: "one@example.test", password: PASSWORD })
        const api = apiOf(app.baseUrl, app.adminToken)
        const monitor = yield* Effect.promise(() => api("POST", "/api/monitors", { name: "one failed run", schedule }))
        yield* Effect.promise(() => api("POST", `/api/ping/${monitor.id}/fail`, { exitCode: 2, durationMs: 1500, output: "boom" }))
        const runs = (yield* Effect.promise(() => api("GET", `/api/monitors/${monitor.id}/runs`))).runs as Array<{ startedAt: string; status: string }>
        expect(runs.map((r) => r.status)).toEqual(["FAIL"])
        const startedAt = Date.parse(runs[0]!.startedAt) / 1000

        yield* withSignedInPage(app.baseUrl, "one@example.test", async (page) => {
          await page.goto(`${app.baseUrl}/monitors/${monitor.id}`)
          await page.getByRole("heading", { name: "one failed run" }).waitFor()
          const x = await xScale(page)
          expect(x.min).toBeLessThanOrEqual(startedAt)
          expect(x.max).toBeGreaterThanOrEqual(startedAt)
          expect(x.max).toBeGreaterThanOrEqual(Date.now() / 1000 - 60)
          expect(x.max - x.min).toBeGreaterThanOrEqual(DAY)
          expect(x.max - x.min).toBeLessThanOrEqual(DAY + 2 * HOUR)
          expect(await card(page, "Runs (30 d)")).toBe("1 (1 failed)")
          expect(await page.getByRole("row", { name: /FAILING/ }).count()).toBe(1)
        })
      }), { timeout: 120_000 })

    it.effect("no runs: an empty state instead of a chart, and the card says 0; runs without a duration: a line saying so", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        yield* createUser({ email: "none@example.test", password: PASSWORD })
        const api = apiOf(app.baseUrl, app.adminToken)
        const monitor = yield* Effect.promise(() => api("POST", "/api/monitors", { name: "no runs yet", schedule }))
        const bare = yield* Effect.promise(() => api("POST", "/api/monitors", { name: "no durations", schedule }))
        yield* Effect.promise(() => api("POST", `/api/ping/${bare.id}/fail`, { exitCode: 1 }))

        yield* withSignedInPage(app.baseUrl, "none@example.test", async (page) => {
          await page.goto(`${app.baseUrl}/monitors/${monitor.id}`)
          await page.getByRole("heading", { name: "no runs yet" }).waitFor()
          expect(await card(page, "Runs (30 d)")).toBe("0")
          const duration = page.locator("h2:text-is('Duration') + *")
          expect(await duration.textContent()).toBe("No runs yet.")
          expect(await page.locator(".chart").count()).toBe(0)

          await page.goto(`${app.baseUrl}/monitors/${bare.id}`)
          await page.getByRole("heading", { name: "no durations" }).waitFor()
          expect(await card(page, "Runs (30 d)")).toBe("1 (1 failed)")
          expect(await duration.textContent()).toBe("No run has reported a duration yet.")
          expect(await page.locator(".chart").count()).toBe(0)
        })
      }), { timeout: 120_000 })

    it.effect("runs over ten days: the axis spans those days up to now, not more; the card counts all of them and the failures", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        yield* createUser({ email: "ten@example.test", password: PASSWORD })
        const api = apiOf(app.baseUrl, app.adminToken)
        const monitor = yield* Effect.promise(() => api("POST", "/api/monitors", { name: "ten days of runs", schedule }))
        // Eleven runs, one a day from 10 days ago to 5 minutes ago; every third one failed.
        yield* sql`
          insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms, exit_code)
          select gen_random_uuid(), m.id, m.org_id, case when d % 3 = 0 then 'FAIL' else 'SUCCESS' end,
                 now() - (d || ' days')::interval - interval '5 minutes',
                 now() - (d || ' days')::interval - interval '5 minutes' + ((1000 + d * 100) || ' milliseconds')::interval,
                 1000 + d * 100, case when d % 3 = 0 then 1 else 0 end
          from monitors m, generate_series(0, 10) as d
          where m.id = ${monitor.id}`

        yield* withSignedInPage(app.baseUrl, "ten@example.test", async (page) => {
          await page.goto(`${app.baseUrl}/monitors/${monitor.id}`)
          await page.getByRole("heading", { name: "ten days of runs" }).waitFor()
          const x = await xScale(page)
          const now = Date.now() / 1000
          const first = now - 10 * DAY - 300
          expect(x.min).toBeLessThanOrEqual(first)
          expect(x.min).toBeGreaterThanOrEqual(first - DAY)
          expect(x.max).toBeGreaterThanOrEqual(now - 60)
          expect(x.max).toBeLessThanOrEqual(now + DAY)
          expect(await card(page, "Runs (30 d)")).toBe("11 (4 failed)")
        })
      }), { timeout: 120_000 })
  })
})
