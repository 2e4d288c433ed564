import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { createUser, TestApp, TestServer } from "../support/fixture.js"
import { hasChromium, launch } from "./browser.js"

/**
 * The monitor page's ping URL and badges in a real browser against the real service: an admin sees
 * the ping URL, the slug URL and the badge URLs with Copy buttons (what they copy is what works),
 * rotates the ping URL; a member (write) sees the ping URL and no badges; the badge image loads.
 */

if (!hasChromium) {
  console.warn("SKIPPED test/Web/PingUrls.test.ts: /usr/bin/chromium is missing (apt-get install chromium to run the browser tests)")
}

const PASSWORD = "correct horse battery"

const apiOf = (baseUrl: string, token: string) => async (method: string, path: string, body?: unknown): Promise<any> => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  expect(response.status, `${method} ${path}`).toBeLessThan(300)
  return response.json()
}

const withSignedInPage = (baseUrl: string, email: string, use: (page: Page, context: BrowserContext) => Promise<void>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => launch()),
    ({ context }) =>
      Effect.promise(async () => {
        await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseUrl })
        const page = await context.newPage()
        const errors: string[] = []
        page.on("pageerror", (e) => errors.push(e.message))
        await page.goto(`${baseUrl}/`)
        await page.getByLabel("Email").fill(email)
        await page.getByLabel("Password").fill(PASSWORD)
        await page.getByRole("button", { name: "Sign in", exact: true }).click()
        await page.getByRole("heading", { name: "Monitors" }).waitFor()
        await use(page, context)
        expect(errors).toEqual([])
      }),
    ({ close }) => Effect.promise(close)
  )

/** Runs in the page: what the clipboard holds (the test's own types have no DOM). */
const readClipboard = () => (globalThis as unknown as { navigator: { clipboard: { readText: () => Promise<string> } } }).navigator.clipboard.readText()

/** The path of a URL the API built on PUBLIC_URL, on the test server. */
const onServer = (baseUrl: string, url: string) => `${baseUrl}${new URL(url).pathname}`

describe.skipIf(!hasChromium)("ping URL and badges on the monitor page", () => {
  layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("monitor page", (it) => {
    it.effect("an admin copies the ping URL and badge URLs, rotates the ping URL; a member sees no badges", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        yield* createUser({ email: "admin@example.test", password: PASSWORD })
        yield* createUser({ email: "member@example.test", password: PASSWORD, role: "member" })
        const api = apiOf(app.baseUrl, app.adminToken)
        const monitor = yield* Effect.promise(() =>
          api("POST", "/api/monitors", { name: "nightly backup", slug: "nightly-backup", tags: ["db"], schedule: { type: "interval", expression: "1h" } }))
        const keys = yield* Effect.promise(() => api("GET", "/api/keys"))

        yield* withSignedInPage(app.baseUrl, "admin@example.test", async (page) => {
          await page.goto(`${app.baseUrl}/monitors/${monitor.id}`)
          await page.getByRole("heading", { name: "Ping URL and badges" }).waitFor()
          await page.getByRole("button", { name: "Copy Ping URL" }).click()
          await page.getByRole("button", { name: "Copy Ping URL" }).filter({ hasText: "Copied" }).waitFor()
          const copied = await page.evaluate(readClipboard)
          expect(copied).toBe(monitor.pingUrl)
          // What was copied pings the monitor.
          const pinged = await fetch(onServer(app.baseUrl, copied))
          expect(pinged.status).toBe(200)
          expect(await pinged.text()).toBe("OK")

          await page.getByRole("button", { name: "Copy Badge (SVG)" }).click()
          const badgeUrl = await page.evaluate(readClipboard)
          expect(badgeUrl).toBe(`${keys.badgeUrl}/nightly-backup.svg`)
          await page.getByRole("button", { name: "Copy Slug ping URL" }).click()
          expect(await page.evaluate(readClipboard)).toBe(`${keys.slugPingUrl}/nightly-backup`)
          expect(await page.getByRole("button", { name: "Copy Badge of tag db" }).count()).toBe(1)
          // The badge itself is shown, and loads.
          const img = page.getByRole("img", { name: "badge of nightly-backup" })
          await img.waitFor()
          await expect.poll(() => img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0)

          page.once("dialog", (dialog) => void dialog.accept())
          await page.getByRole("button", { name: "Rotate ping URL" }).click()
          await expect.poll(() => page.locator("code", { hasText: monitor.pingUrl }).count(), { timeout: 15_000 }).toBe(0)
          const shown = await page.locator(".copy-line", { hasText: "Ping URL" }).first().locator("code").textContent()
          expect(shown).toMatch(/\/ping\/[0-9a-f-]{36}$/)
          expect((await fetch(onServer(app.baseUrl, monitor.pingUrl))).status).toBe(404)
        })

        yield* withSignedInPage(app.baseUrl, "member@example.test", async (page) => {
          // A slug given in the New monitor form is the monitor's.
          await page.getByText("New monitor").click()
          await page.getByLabel("Name", { exact: true }).fill("weekly report")
          await page.getByLabel("Slug (optional)").fill("weekly-report")
          await page.getByRole("button", { name: "Create monitor" }).click()
          await page.waitForURL(/\/monitors\/[0-9a-f-]{36}$/)
          await page.getByRole("heading", { name: "Ping URL and badges" }).waitFor()
          expect(await page.locator(".facts.urls div", { hasText: "Slug" }).first().locator("dd").textContent()).toBe("weekly-report")

          await page.goto(`${app.baseUrl}/monitors/${monitor.id}`)
          await page.getByRole("heading", { name: "Ping URL and badges" }).waitFor()
          await page.getByRole("button", { name: "Copy Ping URL" }).waitFor()
          expect(await page.getByRole("button", { name: "Copy Badge (SVG)" }).count()).toBe(0)
          expect(await page.getByRole("button", { name: "Copy Slug ping URL" }).count()).toBe(0)
        })
      }), { timeout: 120_000 })
  })
})
