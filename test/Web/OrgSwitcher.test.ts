import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Accounts } from "../../src/Auth/Accounts.js"
import { Tokens } from "../../src/Auth/Tokens.js"
import { createUser, TestApp, TestServer, validMonitor } from "../support/fixture.js"
import { hasChromium, launch } from "./browser.js"

/**
 * The organization switcher in a real browser (Debian's Chromium through playwright-core) against
 * the real service: a user in two organizations picks one and every page shows that one's data;
 * the choice belongs to the session (it survives a reload); a user in one organization sees no switcher.
 */

if (!hasChromium) {
  console.warn("SKIPPED test/Web/OrgSwitcher.test.ts: /usr/bin/chromium is missing (apt-get install chromium to run the browser tests)")
}

describe.skipIf(!hasChromium)("organization switcher in Chromium", () => {
  layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("two organizations", (it) => {
    it.effect("switches the monitors and settings shown; a one-organization user sees no switcher", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const accounts = yield* Accounts
        const qa = yield* Effect.orDie(accounts.createOrganization({ slug: "qa", name: "QA team" }))
        yield* createUser({ email: "both@example.test", password: "correct horse battery", name: "Both" })
        yield* createUser({ email: "one@example.test", password: "correct horse battery", name: "Only default" })
        yield* Effect.orDie(accounts.addMember({ email: "both@example.test", orgId: qa.id, role: "admin" }))
        const monitor = async (name: string, orgToken: string) => {
          const response = await fetch(`${app.baseUrl}/api/monitors`, {
            method: "POST",
            headers: { authorization: `Bearer ${orgToken}`, "content-type": "application/json" },
            body: JSON.stringify(validMonitor({ name }))
          })
          expect(response.status, await response.clone().text()).toBe(201)
        }
        const tokens = yield* Tokens
        const qaAdmin = yield* Effect.orDie(tokens.create({ orgId: qa.id, userId: null, name: "qa", scope: "admin", expiresAt: null }))

        yield* Effect.promise(() => monitor("home job", app.adminToken))
        yield* Effect.promise(() => monitor("qa smoke", qaAdmin.token))

        yield* Effect.acquireUseRelease(
          Effect.promise(() => launch()),
          ({ context }) =>
            Effect.promise(async () => {
              const page = await context.newPage()
              const errors: string[] = []
              page.on("pageerror", (e) => errors.push(e.message))
              const signIn = async (email: string) => {
                await page.goto(`${app.baseUrl}/`)
                await page.getByLabel("Email").fill(email)
                await page.getByLabel("Password").fill("correct horse battery")
                await page.getByRole("button", { name: "Sign in", exact: true }).click()
                await page.getByRole("heading", { name: "Monitors" }).waitFor()
              }
              await signIn("both@example.test")
              const switcher = page.getByLabel("Organization")
              await switcher.waitFor()
              expect(await switcher.locator("option").allTextContents()).toEqual(["Default organization (default)", "QA team (qa)"])
              await page.getByRole("link", { name: "home job" }).waitFor()
              expect(await page.getByRole("link", { name: "qa smoke" }).count()).toBe(0)

              await switcher.selectOption({ label: "QA team (qa)" })
              await page.getByRole("link", { name: "qa smoke" }).waitFor()
              expect(await page.getByRole("link", { name: "home job" }).count()).toBe(0)

              // The session acts in QA now: a reload and the other pages show QA's data.
              await page.reload()
              await page.getByRole("link", { name: "qa smoke" }).waitFor()
              expect(await page.getByLabel("Organization").inputValue()).toBe(qa.id)
              await page.getByRole("link", { name: "Settings" }).click()
              await page.getByRole("heading", { name: "Settings" }).waitFor()
              await page.getByText("both@example.test").first().waitFor()
              expect(await page.getByText("one@example.test").count()).toBe(0)

              // From a monitor's page, switching back lands on the list of the other organization.
              await page.getByRole("link", { name: "Monitors" }).click()
              await page.getByRole("link", { name: "qa smoke" }).click()
              await page.getByRole("heading", { name: "qa smoke" }).waitFor()
              await page.getByLabel("Organization").selectOption({ label: "Default organization (default)" })
              await page.getByRole("link", { name: "home job" }).waitFor()
              expect(new URL(page.url()).pathname).toBe("/monitors")

              await page.getByRole("button", { name: "Sign out" }).click()
              await signIn("one@example.test")
              await page.getByRole("link", { name: "home job" }).waitFor()
              expect(await page.getByLabel("Organization").count()).toBe(0)
              expect(errors).toEqual([])
            }),
          ({ close }) => Effect.promise(close)
        )
      }))
  })
})
