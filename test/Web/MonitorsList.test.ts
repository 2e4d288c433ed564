import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { createUser, TestApp, TestServer } from "../support/fixture.js"
import { hasChromium, launch, WAIT_MS } from "./browser.js"

/**
 * The monitors page of a fleet larger than a page, in a real browser (Debian's Chromium through
 * playwright-core) against the real service: the page asks the service for the one page it shows
 * (50 monitors) and refreshes only that page; Next and Previous walk every monitor once; search,
 * status filter (with counts) and sort are the service's; the filters survive a reload.
 */

if (!hasChromium) {
  console.warn("SKIPPED test/Web/MonitorsList.test.ts: /usr/bin/chromium is missing (apt-get install chromium to run the browser tests)")
}

const FLEET = 120

/** Polls until `check` holds (the page refreshes every 5 s; the machine may be slow). */
const eventually = async <A>(check: () => Promise<A | undefined | false>, what: string, ms = WAIT_MS): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

describe.skipIf(!hasChromium)("monitors page in Chromium", () => {
  layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("a fleet of 120 monitors", (it) => {
    it.effect("pages, searches, filters and sorts on the service, and refreshes only the page shown", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        yield* createUser({ email: "ops@example.test", password: "correct horse battery", name: "Ops" })
        // The fleet as the engine would have left it: every tenth FAILING, the next MISSED, the rest OK.
        yield* sql`
          insert into monitors (org_id, name, schedule_type, schedule_expression, status, tags, created_at)
          select o.id, case when i % 15 = 0 then 'db backup ' || i else 'job ' || lpad(i::text, 3, '0') end,
                 'interval', '1h', case i % 10 when 0 then 'FAILING' when 1 then 'MISSED' else 'OK' end,
                 array['fleet'], now() - (${FLEET} - i) * interval '1 second'
          from organizations o, generate_series(1, ${FLEET}) as i
          where o.slug = 'default'`.pipe(Effect.orDie)
        const api = async (path: string, init: RequestInit = {}): Promise<any> => {
          const response = await fetch(`${app.baseUrl}${path}`, {
            ...init,
            headers: { authorization: `Bearer ${app.adminToken}`, "content-type": "application/json" }
          })
          expect(response.status, path).toBeLessThan(300)
          return response.json()
        }
        const byStatus: Array<{ id: string; name: string; status: string }> = []
        for (let page = 1; page <= 2; page++) {
          byStatus.push(...(yield* Effect.promise(() => api(`/api/monitors?sort=status&limit=100&page=${page}`))).monitors)
        }
        expect(byStatus).toHaveLength(FLEET)

        yield* Effect.acquireUseRelease(
          Effect.promise(() => launch()),
          ({ context }) =>
            Effect.promise(async () => {
              const page = await context.newPage()
              const errors: string[] = []
              page.on("pageerror", (e) => errors.push(e.message))
              const lists: string[] = []
              page.on("request", (r) => {
                const url = new URL(r.url())
                if (url.pathname === "/api/monitors") lists.push(url.search)
              })
              await page.goto(`${app.baseUrl}/`)
              await page.getByLabel("Email").fill("ops@example.test")
              await page.getByLabel("Password").fill("correct horse battery")
              await page.getByRole("button", { name: "Sign in", exact: true }).click()
              await page.getByRole("heading", { name: "Monitors" }).waitFor()

              const rows = page.locator("tr[data-monitor]")
              const pager = page.getByRole("navigation", { name: "Pages" })
              const shownIds = async () => Promise.all((await rows.all()).map((r) => r.getAttribute("data-monitor")))
              const names = async () => (await page.locator("tr[data-monitor] td[data-label=Name] a").allTextContents())

              // Page 1 of 3, most urgent first; the status filter shows the counts of the summary.
              await pager.getByText("1–50 of 120, page 1 of 3").waitFor()
              expect(await rows.count()).toBe(50)
              expect(await page.getByLabel("Status", { exact: true }).locator("option").allTextContents()).toEqual([
                "All (120)", "Needs attention (24)", "FAILING (12)", "MISSED (12)", "LATE (0)", "RUNNING (0)", "NEW (0)", "OK (96)", "PAUSED (0)"
              ])
              const seen = [...await shownIds()]
              await page.getByRole("button", { name: "Next →" }).click()
              await pager.getByText("51–100 of 120, page 2 of 3").waitFor()
              seen.push(...await shownIds())
              await page.getByRole("button", { name: "Next →" }).click()
              await pager.getByText("101–120 of 120, page 3 of 3").waitFor()
              seen.push(...await shownIds())
              expect(await page.getByRole("button", { name: "Next →" }).isDisabled()).toBe(true)
              // Every monitor once, in the service's order.
              expect(seen).toEqual(byStatus.map((m) => m.id))

              // A change to a monitor on the page shown appears without reloading: the page is asked for again.
              const onPage3 = byStatus[110]!
              const before = lists.length
              await api(`/api/monitors/${onPage3.id}`, { method: "PATCH", body: JSON.stringify({ name: "renamed while shown" }) })
              await page.getByRole("link", { name: "renamed while shown" }).waitFor()
              const refreshes = lists.slice(before)
              expect(refreshes.length).toBeGreaterThan(0)
              const page3 = lists[lists.length - 1]!
              expect(new URLSearchParams(page3).get("cursor")).not.toBeNull()
              // Never more than one page at a time.
              for (const query of lists) expect(new URLSearchParams(query).get("limit")).toBe("50")

              await page.getByRole("button", { name: "← Previous" }).click()
              await pager.getByText("51–100 of 120, page 2 of 3").waitFor()
              expect(await shownIds()).toEqual(byStatus.slice(50, 100).map((m) => m.id))

              // Search on the service: back to page 1, only the matching monitors, the count of them.
              await page.getByLabel("Search").fill("BACKUP")
              await eventually(async () => (await rows.count()) === 8 && (await names()).every((n) => n.includes("db backup")), "the search results")
              await page.getByText("8 of 120 match").waitFor()
              // One page: no pager.
              expect(await pager.count()).toBe(0)
              await page.getByLabel("Search").fill("")

              // The status filter, then the sort.
              await page.getByLabel("Status", { exact: true }).selectOption("MISSED")
              await page.getByText("12 of 120 match").waitFor()
              expect(new Set(await page.locator("tr[data-monitor] .status").allTextContents())).toEqual(new Set(["MISSED"]))
              await page.getByLabel("Status", { exact: true }).selectOption("")
              await page.getByLabel("Sort", { exact: true }).selectOption("name")
              await eventually(async () => (await names())[0] === "db backup 105", "the name order")
              const sorted = await names()
              expect(sorted).toEqual([...sorted].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1)))

              // The filters are in the address: a reload keeps them.
              await page.getByLabel("Tag", { exact: true }).selectOption("fleet")
              await eventually(async () => page.url().includes("sort=name") && page.url().includes("tag=fleet"), "the filters in the address")
              await page.reload()
              await pager.getByText("1–50 of 120, page 1 of 3").waitFor()
              expect(await page.getByLabel("Sort", { exact: true }).inputValue()).toBe("name")
              expect(await page.getByLabel("Tag", { exact: true }).inputValue()).toBe("fleet")
              expect((await names())[0]).toBe("db backup 105")
              expect(errors).toEqual([])
            }),
          ({ close }) => Effect.promise(close)
        )
      }), { timeout: 120_000 })
  })
})
