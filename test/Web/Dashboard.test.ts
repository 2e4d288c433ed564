import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { mkdirSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import type { Page } from "playwright-core"
import { createUser, TestApp, TestServer } from "../support/fixture.js"
import { hasChromium, launch, WAIT_MS } from "./browser.js"

/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core) against the real
 * service: sign in, create a monitor, see a failure become an incident and acknowledge it, put the
 * monitor in maintenance, create and revoke a token, and add, test and delete alert channels. With SCREENSHOTS=1 (npm run screenshots)
 * it also saves the main pages under docs/screenshots/.
 */

if (!hasChromium) {
  console.warn("SKIPPED test/Web/Dashboard.test.ts: /usr/bin/chromium is missing (apt-get install chromium to run the browser tests)")
}

const screenshots = process.env.SCREENSHOTS === "1" && process.env.CI === undefined
const shot = async (page: Page, name: string) => {
  if (!screenshots) return
  mkdirSync("docs/screenshots", { recursive: true })
  await page.waitForTimeout(600)
  await page.screenshot({ path: `docs/screenshots/${name}.png`, fullPage: name !== "monitor" })
}

/** Polls until `check` holds (the pages refresh every few seconds; the machine may be slow). */
const eventually = async <A>(check: () => Promise<A | undefined | false>, what: string, ms = WAIT_MS): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

/** Screenshots only: a chat webhook made invalid by a 404 and an outbound webhook with a delivery. */
const webhooksForScreenshot = async (page: Page, api: (method: string, path: string, token?: string, body?: unknown) => Promise<Response>) => {
  const receiver = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => res.writeHead(req.url === "/hook" ? 200 : 404).end(req.url === "/hook" ? "ok" : "Unknown Webhook"))
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
  try {
    const chat = await (await api("POST", "/api/alerts/chat/webhooks", undefined, { url: `${base}/chat-gone`, name: "ops-alerts" })).json() as { id: string }
    await api("POST", "/api/alerts/chat/test", undefined, { webhookId: chat.id })
    await page.getByLabel("URL", { exact: true }).fill(`${base}/hook`)
    await page.getByRole("button", { name: "Add webhook" }).click()
    const hook = page.locator(".hook", { hasText: `${base}/hook` })
    await hook.getByRole("button", { name: "Send test" }).click()
    await hook.getByRole("cell", { name: "webhook.test" }).waitFor()
    await page.reload()
    await page.getByText("invalid", { exact: true }).first().waitFor()
    await page.locator(".hook").getByRole("button", { name: "Deliveries" }).click()
    await page.locator(".hook details summary").first().click()
  } finally {
    await new Promise((resolve) => receiver.close(resolve))
  }
}

describe.skipIf(!hasChromium)("dashboard in Chromium", () => {
  layer(TestServer({ allowPrivateTargets: true }), { excludeTestServices: true, timeout: 120_000 })("a signed-in user", (it) => {
    it.effect("signs in, sees a failure become an incident and acknowledges it, puts a monitor in maintenance, creates and revokes a token, invites a user", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        yield* createUser({ email: "ada@example.test", password: "correct horse battery", name: "Ada Lovelace" })
        const api = (method: string, path: string, token: string = app.adminToken, body?: unknown) =>
          fetch(`${app.baseUrl}${path}`, {
            method,
            headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) })
          })
        const json = async (response: Promise<Response>): Promise<any> => (await response).json()
        const seedHistory = (monitorId: string) =>
          Effect.runPromise(
            sql`insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
              select gen_random_uuid(), m.id, m.org_id, 'SUCCESS', now() - (i || ' hours')::interval,
                     now() - (i || ' hours')::interval + (d || ' milliseconds')::interval, d
              from monitors m, lateral (select i, (5200 + 900 * sin(i / 5.0) + (i * 7919 % 1700))::int as d
                                        from generate_series(2, 120, 3) as i) s
              where m.id = ${monitorId}`
          )

        yield* Effect.acquireUseRelease(
          Effect.promise(() => launch()),
          ({ context }) =>
            Effect.promise(async () => {
              const page = await context.newPage()
              const errors: string[] = []
              page.on("pageerror", (e) => errors.push(e.message))
              page.on("dialog", (d) => void d.accept())

              // Sign in with email and password.
              await page.goto(`${app.baseUrl}/`)
              await page.getByLabel("Email").fill("ada@example.test")
              await page.getByLabel("Password").fill("correct horse battery")
              await page.getByRole("button", { name: "Sign in", exact: true }).click()
              await page.getByRole("heading", { name: "Monitors" }).waitFor()
              expect(await page.getByRole("banner").textContent()).toContain("Ada Lovelace")

              // Create a monitor in the form; the page moves to the new monitor.
              await page.getByText("New monitor").click()
              await page.getByLabel("Name", { exact: true }).fill("browser backup")
              await page.getByLabel("Cron expression", { exact: true }).fill("0 4 * * *")
              await page.getByLabel("Time zone", { exact: true }).fill("Europe/Paris")
              await page.getByLabel("Tags (comma separated)").fill("db, nightly")
              await page.getByRole("button", { name: "Create monitor" }).click()
              await page.waitForURL(/\/monitors\/[0-9a-f-]{36}$/)
              const monitorId = page.url().split("/").pop()!
              await page.getByRole("heading", { name: "browser backup" }).waitFor()
              const created = await json(api("GET", `/api/monitors/${monitorId}`))
              expect(created.schedule).toEqual({ type: "cron", expression: "0 4 * * *", timezone: "Europe/Paris" })
              expect(created.tags).toEqual(["db", "nightly"])

              // Pause and resume, and the settings form (PATCH).
              await page.getByRole("button", { name: "Pause" }).click()
              await page.locator(".head .status", { hasText: "PAUSED" }).waitFor()
              await page.getByRole("button", { name: "Resume" }).click()
              await page.getByRole("button", { name: "Pause" }).waitFor()
              await page.getByLabel("Grace (seconds)").fill("900")
              // (the failure threshold stays 1: the failure below must open an incident at once)
              expect(await page.getByLabel("Failures in a row before an incident").inputValue()).toBe("1")
              await page.getByLabel("Successes in a row to resolve").fill("2")
              await page.getByRole("button", { name: "Save settings" }).click()
              await page.getByText("Saved.").waitFor()
              expect(await json(api("GET", `/api/monitors/${monitorId}`))).toMatchObject({ graceSeconds: 900, failureThreshold: 1, recoveryThreshold: 2 })

              // The list filters by status and tag.
              await page.getByRole("link", { name: "← Monitors" }).click()
              const listed = page.locator(`tr[data-monitor="${monitorId}"]`)
              await listed.waitFor()
              await page.getByLabel("Status", { exact: true }).selectOption("FAILING")
              await page.getByText("No monitors match these filters").waitFor()
              await page.getByLabel("Status", { exact: true }).selectOption("")
              await page.getByLabel("Tag", { exact: true }).selectOption("nightly")
              await listed.waitFor()
              await page.getByLabel("Tag", { exact: true }).selectOption("")

              // A failure reported through the API becomes an incident on the Incidents page.
              if (screenshots) {
                await seedHistory(monitorId)
                for (const [name, schedule, tags, ping] of [
                  ["invoice sync", { type: "interval", expression: "15m" }, ["billing"], "success"],
                  ["cache warmer", { type: "cron", expression: "*/10 * * * *", timezone: "America/New_York" }, ["web"], "start"],
                  ["weekly report", { type: "cron", expression: "0 9 * * 1", timezone: "Asia/Tokyo" }, ["reports"], null]
                ] as const) {
                  const m = await json(api("POST", "/api/monitors", app.adminToken, { name, schedule, tags }))
                  if (ping) await api("POST", `/api/ping/${m.id}/${ping}`, app.adminToken, ping === "success" ? { durationMs: 1800 } : {})
                }
                await api("PATCH", `/api/monitors/${monitorId}`, app.adminToken, { sla: { durationTarget: "p95", maxDurationMs: 7000 } })
              }
              const fail = await api("POST", `/api/ping/${monitorId}/fail`, app.adminToken, {
                exitCode: 3,
                durationMs: 4200,
                output: "pg_dump: connection refused\npassword=hunter2"
              })
              expect(fail.status).toBe(200)
              await page.getByRole("link", { name: "Incidents" }).click()
              const incident = page.locator("li.incident", { hasText: "browser backup" })
              await incident.waitFor()
              expect(await incident.textContent()).toContain("FAIL")
              expect(await incident.textContent()).toContain("exit code 3")
              expect(await incident.textContent()).not.toContain("hunter2")
              await incident.getByLabel("Note").fill("looking into the database host")
              await incident.getByRole("button", { name: "Acknowledge" }).click()
              const acknowledged = await eventually(async () => {
                const list = await json(api("GET", `/api/incidents?monitorId=${monitorId}`))
                return list.incidents[0]?.status === "ACKNOWLEDGED" && list.incidents[0]
              }, "the incident to be acknowledged")
              expect(acknowledged.acknowledgedBy.name).toBe("Ada Lovelace")
              expect(acknowledged.notes.map((n: { text: string }) => n.text)).toContain("looking into the database host")
              // The link of a chat alert (/incidents/<id>) opens its tab with the incident highlighted; the session survives the reload.
              await page.goto(`${app.baseUrl}/incidents/${acknowledged.id}`)
              await page.locator(`li.incident.focused[data-incident="${acknowledged.id}"]`, { hasText: "Acknowledged by Ada Lovelace" }).waitFor()
              expect(await page.getByRole("tab", { name: /Acknowledged/ }).getAttribute("aria-selected")).toBe("true")
              await shot(page, "incidents")

              // A maintenance window made in the form shows its badge, name and remaining time, counting down.
              await page.getByRole("link", { name: "Maintenance" }).click()
              await page.getByText("New maintenance window").click()
              await page.getByLabel("Name", { exact: true }).fill("Database upgrade")
              await page.getByLabel("browser backup").check()
              await page.locator(".preview li").first().waitFor()
              await page.getByRole("button", { name: "Create window" }).click()
              await page.locator("li.window", { hasText: "Database upgrade" }).getByText("active").waitFor()
              if (screenshots) {
                // the human preview of a recurring window, in the window's zone
                await page.getByLabel("Recurring").check()
                await page.getByLabel("Time zone", { exact: true }).fill("Europe/Berlin")
                await page.locator(".preview li").nth(4).waitFor()
                await shot(page, "maintenance")
              }
              await page.getByRole("link", { name: "Monitors" }).click()
              const badge = page.locator(`tr[data-monitor="${monitorId}"] .badge.maint`)
              await badge.waitFor()
              const first = (await badge.textContent())!
              expect(first).toMatch(/^In Maintenance: Database upgrade, (5\d|60)m \d\ds left$/)
              await eventually(async () => (await badge.textContent()) !== first, "the remaining time to count down", 10_000)
              await shot(page, "monitors")
              if (screenshots) {
                await page.setViewportSize({ width: 390, height: 844 })
                await shot(page, "monitors-phone")
                await page.setViewportSize({ width: 1280, height: 900 })
              }
              if (screenshots) {
                await page.getByRole("link", { name: "browser backup" }).click()
                await page.locator(".chart canvas").waitFor()
                await shot(page, "monitor")
              }

              // Settings: a token is shown once, works, and is refused by the API once revoked.
              await page.getByRole("link", { name: "Settings" }).click()
              await page.getByLabel("Name", { exact: true }).first().fill("deploy script")
              await page.getByLabel("Scope").selectOption("read")
              await page.getByRole("button", { name: "Create token" }).click()
              const token = (await page.locator("[data-token]").textContent())!.trim()
              expect(token).toMatch(/^jmt_/)
              expect((await api("GET", "/api/monitors", token)).status).toBe(200)
              const row = page.getByRole("row", { name: /deploy script/ })
              await row.waitFor()
              if (screenshots) await webhooksForScreenshot(page, api)
              await shot(page, "settings")
              await row.getByRole("button", { name: "Revoke deploy script" }).click()
              await row.waitFor({ state: "detached" })
              const refused = await eventually(async () => {
                const r = await api("GET", "/api/monitors", token)
                return r.status === 401 && r
              }, "the revoked token to be refused")
              expect(((await refused.json()) as any)._tag).toBe("Unauthorized")

              // Alert channels: a Slack channel whose webhook is gone: Test shows Slack's answer, the channel
              // becomes invalid with the reason; a Telegram channel's token is never shown back; delete.
              const slack = http.createServer((req, res) => {
                req.resume()
                req.on("end", () => res.writeHead(404, { "content-type": "text/plain" }).end("no_service"))
              })
              await new Promise<void>((resolve) => slack.listen(0, "127.0.0.1", resolve))
              try {
                const channels = page.locator("[data-section=alert-channels]")
                await channels.getByLabel("Channel type").selectOption("slack")
                await channels.getByText("Incoming Webhooks").waitFor()
                await channels.getByLabel("Name (optional)").fill("ops-slack")
                await channels.getByLabel("Webhook URL").fill(`http://127.0.0.1:${(slack.address() as AddressInfo).port}/services/T1/B2/s3cr3tSlackValue`)
                await channels.getByRole("button", { name: "Add Slack channel" }).click()
                const slackRow = channels.getByRole("row", { name: /ops-slack/ })
                await slackRow.waitFor()
                expect(await slackRow.textContent()).not.toContain("s3cr3tSlackValue")
                await slackRow.getByRole("button", { name: "Test ops-slack" }).click()
                await slackRow.locator("[data-test-answer]", { hasText: "Not sent: HTTP 404: no_service" }).waitFor()
                await slackRow.locator("[data-status-reason]", { hasText: "Slack answered 404" }).waitFor()
                expect(await slackRow.getByText("invalid", { exact: true }).count()).toBe(1)

                await channels.getByLabel("Channel type").selectOption("telegram")
                await channels.getByText("@BotFather").waitFor()
                await channels.getByLabel("Bot token").fill("123456789:AAEdashboardSecretToken_012345")
                await channels.getByLabel("Chat id").fill("-1001234567890")
                await channels.getByRole("button", { name: "Add Telegram channel" }).click()
                const telegramRow = channels.getByRole("row", { name: /telegram -1001234567890/ })
                await telegramRow.waitFor()
                expect(await channels.textContent()).not.toContain("dashboardSecretToken")
                expect(await telegramRow.textContent()).toContain("chatId: -1001234567890")

                await slackRow.getByRole("button", { name: "Delete ops-slack" }).click()
                await slackRow.waitFor({ state: "detached" })
                await telegramRow.waitFor()
              } finally {
                await new Promise((resolve) => slack.close(resolve))
              }

              // An invitation: the link is shown once; after signing out, it opens the page that creates the account.
              await page.getByLabel("Email").fill("grace@example.test")
              await page.getByRole("button", { name: "Invite" }).click()
              const link = (await page.locator("code.secret", { hasText: "/invite?token=" }).textContent())!
              await page.getByRole("button", { name: "Sign out" }).click()
              await page.getByRole("heading", { name: "Sign in to jobmon" }).waitFor()
              await page.goto(link)
              await page.getByLabel("Your name").fill("Grace Hopper")
              await page.getByLabel("Choose a password").fill("a long enough password")
              await page.getByRole("button", { name: "Create account" }).click()
              await page.getByRole("heading", { name: "Monitors" }).waitFor()
              expect(await page.getByRole("banner").textContent()).toContain("Grace Hopper")
              const users = await json(api("GET", "/api/users"))
              expect(users.users.map((u: { email: string }) => u.email)).toContain("grace@example.test")
              expect(errors).toEqual([])
            }),
          ({ close }) => Effect.promise(close)
        )
      }), { timeout: 240_000 })
  })
})
