import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { call, createMonitor, createUser, TestApp, TestServer } from "../support/fixture.js"
import { receiver } from "../Delivery/receiver.js"
import { hasChromium, launch } from "./browser.js"

/**
 * Settings → Alert channels in a real browser (Debian's Chromium through playwright-core) against
 * the real service: an invalid Slack channel is marked so with Slack's reason, its delivery log
 * shows what Slack answered; editing it replaces its webhook url without ever showing the old one,
 * sets its routing rules and reminders, and makes it active again; a later edit that leaves the
 * secret empty keeps it.
 */

if (!hasChromium) {
  console.warn("SKIPPED test/Web/AlertChannels.test.ts: /usr/bin/chromium is missing (apt-get install chromium to run the browser tests)")
}

describe.skipIf(!hasChromium)("alert channels in Chromium", () => {
  layer(TestServer({ allowPrivateTargets: true }), { excludeTestServices: true, timeout: 120_000 })("a signed-in user", (it) => {
    it.effect("sees an invalid channel and its delivery log, edits its secret, rules and reminders, and it is active again", () =>
      Effect.scoped(Effect.gen(function*() {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        yield* createUser({ email: "ada@example.test", password: "correct horse battery", name: "Ada Lovelace" })
        const db = yield* createMonitor({ name: "db backup", tags: ["db"] })
        yield* createMonitor({ name: "web deploy" })
        // Slack's stand-in: the old webhook is gone (404 no_service), the new one posts.
        const slack = yield* receiver((r) => (r.url.includes("gone") ? { status: 404, body: "no_service" } : { status: 200, body: "ok" }))
        const base = slack.url.replace(/\/hook$/, "")
        const oldUrl = `${base}/services/T1/B2/goneSecretValue1`
        const newUrl = `${base}/services/T1/B2/freshSecretValue2`
        const created = yield* call("POST", "/api/alerts/channels", { body: { type: "slack", name: "ops-slack", config: { url: oldUrl } } })
        expect(created.status, created.text).toBe(201)
        const id = created.body.id as string
        const tested = yield* call("POST", `/api/alerts/channels/${id}/test`)
        expect(tested.body.channel.status).toBe("invalid")
        const storedUrl = () =>
          Effect.runPromise(Effect.map(sql<{ url: string }>`select config->>'url' as url from alert_channels where id = ${id}`, (rows) => rows[0]!.url))
        const getChannel = async () =>
          (await fetch(`${app.baseUrl}/api/alerts/channels/${id}`, { headers: { authorization: `Bearer ${app.adminToken}` } })).json() as Promise<any>

        yield* Effect.acquireUseRelease(
          Effect.promise(() => launch()),
          ({ context }) =>
            Effect.promise(async () => {
              const page = await context.newPage()
              const errors: string[] = []
              page.on("pageerror", (e) => errors.push(e.message))
              await page.goto(`${app.baseUrl}/`)
              await page.getByLabel("Email").fill("ada@example.test")
              await page.getByLabel("Password").fill("correct horse battery")
              await page.getByRole("button", { name: "Sign in", exact: true }).click()
              await page.getByRole("link", { name: "Settings" }).click()
              const section = page.locator("[data-section=alert-channels]")

              // The invalid channel, clearly marked, with Slack's reason.
              const row = section.getByRole("row", { name: /ops-slack/ })
              await row.locator("[data-status]", { hasText: "invalid" }).waitFor()
              await row.locator("[data-status-reason]", { hasText: "Slack answered 404" }).waitFor()
              expect(await row.textContent()).toContain("Nothing is sent to it until it is edited.")

              // Its delivery log: the test, failed, with Slack's answer.
              await row.getByRole("button", { name: "Deliveries of ops-slack" }).click()
              const log = section.getByRole("table", { name: "Deliveries of ops-slack" })
              const failed = log.getByRole("row", { name: /channel\.test/ })
              await failed.waitFor()
              expect(await failed.textContent()).toContain("failed")
              expect(await failed.textContent()).toContain("HTTP 404: no_service")

              // Edit: the secret is never shown, a new one replaces it; rules and reminders set.
              await row.getByRole("button", { name: "Edit ops-slack" }).click()
              const form = section.getByRole("form", { name: "Edit ops-slack" })
              await form.waitFor()
              expect(await form.textContent()).toContain("saving makes it active again")
              const urlInput = form.getByLabel("Webhook URL")
              expect(await urlInput.inputValue()).toBe("")
              expect(await urlInput.getAttribute("type")).toBe("password")
              expect(await page.content()).not.toContain("goneSecretValue1")
              await form.getByLabel("Name", { exact: true }).fill("ops-slack-db")
              await urlInput.fill(newUrl)
              await form.getByLabel("Monitors").selectOption([db.id])
              await form.getByLabel("Tags (comma separated)").fill("db, nightly")
              await form.getByRole("group", { name: /Incident types/ }).getByLabel("FAIL").check()
              await form.getByRole("group", { name: /Incident types/ }).getByLabel("MISSED").check()
              await form.getByRole("group", { name: /Severity/ }).getByLabel("HIGH").check()
              await form.getByRole("group", { name: /Events/ }).getByLabel("opened", { exact: true }).check()
              await form.getByRole("group", { name: /Events/ }).getByLabel("resolved", { exact: true }).check()
              await form.getByRole("group", { name: /Events/ }).getByLabel("maintenance started").check()
              await form.getByLabel("Send reminders").check()
              await form.getByLabel("every (minutes)").fill("15")
              await form.getByLabel("at most (reminders)").fill("4")
              await form.getByRole("button", { name: "Save" }).click()
              await form.waitFor({ state: "detached" })

              // Active again, under its new name, its rules and reminders shown.
              const edited = section.getByRole("row", { name: /ops-slack-db/ })
              await edited.locator("[data-status]", { hasText: "active" }).waitFor()
              expect(await edited.locator("[data-status-reason]").count()).toBe(0)
              expect(await edited.locator("[data-rules]").textContent()).toBe(
                "1 monitor · tags db, nightly · FAIL/MISSED · HIGH · events: incident.opened, incident.resolved, maintenance.started · reminds every 15 min, at most 4×"
              )
              expect(await section.textContent()).not.toContain("freshSecretValue2")
              const channel = await getChannel()
              expect(channel).toMatchObject({
                name: "ops-slack-db",
                status: "active",
                statusReason: null,
                config: { url: `${base}/services/***` },
                rules: {
                  monitorIds: [db.id],
                  tags: ["db", "nightly"],
                  types: ["FAIL", "MISSED"],
                  severity: ["HIGH"],
                  events: ["incident.opened", "incident.resolved", "maintenance.started"]
                },
                reminders: { everyMinutes: 15, max: 4 }
              })
              expect(await storedUrl()).toBe(newUrl)

              // Test: it posts to the new url; the log shows the delivered test above the failed one.
              await edited.getByRole("button", { name: "Test ops-slack-db" }).click()
              await edited.locator("[data-test-answer]", { hasText: "Sent: HTTP 200: ok" }).waitFor()
              expect(slack.received.at(-1)!.url).toBe("/services/T1/B2/freshSecretValue2")
              const editedLog = section.getByRole("table", { name: "Deliveries of ops-slack-db" })
              await editedLog.getByRole("row", { name: /delivered/ }).waitFor()
              const outcomes = await editedLog.locator("tbody tr td[data-label=Outcome]").allTextContents()
              expect(outcomes).toEqual(["delivered", "failed"])

              // An edit that leaves the secret empty keeps it; turning reminders off and clearing the rules.
              await edited.getByRole("button", { name: "Edit ops-slack-db" }).click()
              const again = section.getByRole("form", { name: "Edit ops-slack-db" })
              expect(await again.getByLabel("Tags (comma separated)").inputValue()).toBe("db, nightly")
              expect(await again.getByLabel("every (minutes)").inputValue()).toBe("15")
              await again.getByLabel("Tags (comma separated)").fill("")
              await again.getByLabel("Monitors").selectOption([])
              await again.getByLabel("Send reminders").uncheck()
              await again.getByRole("button", { name: "Save" }).click()
              await again.waitFor({ state: "detached" })
              await section.locator("[data-rules]", { hasText: "FAIL/MISSED · HIGH · events" }).waitFor()
              const after = await getChannel()
              expect(after.rules).toMatchObject({ monitorIds: [], tags: [] })
              expect(after.reminders).toBeNull()
              expect(await storedUrl()).toBe(newUrl)
              expect(errors).toEqual([])
            }),
          ({ close }) => Effect.promise(close)
        )
      })), { timeout: 180_000 })
  })
})
