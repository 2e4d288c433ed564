import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { renderApiReference } from "../../src/Http/ApiReference.js"
import { call, TestApp, TestServer } from "../support/fixture.js"
import { markdownCodeBlocks } from "./markdown.js"
import { tempDir, waitFor } from "./support.js"

/**
 * docs/quick-tour.md, run: each `<!-- tour: … -->` block in order, in bash with curl and jq,
 * against the real service; what each block prints is checked against the output the page shows
 * beneath it (and a few things the page says in words).
 */

const page = fs.readFileSync(new URL("../../docs/quick-tour.md", import.meta.url), "utf8")

interface Step {
  readonly name: string
  readonly script: string
  /** The output the page shows under the block, if any. */
  readonly shown: string | null
}

const steps: ReadonlyArray<Step> = (() => {
  const blocks = markdownCodeBlocks(page)
  return blocks.flatMap((block, i) => {
    if (block.name === null || block.lang !== "sh") return []
    const next = blocks[i + 1]
    const shown = next !== undefined && next.name === null && next.lang === "" ? next.code : null
    return [{ name: block.name, script: block.code, shown }]
  })
})()

const hasTools = (() => {
  try {
    execFileSync("curl", ["--version"], { stdio: "ignore" })
    execFileSync("jq", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

/** One block in bash; the variables it sets are carried to the next block through `state`. */
const runStep = (step: Step, state: string) =>
  Effect.promise(
    () =>
      new Promise<string>((resolve, reject) => {
        const script = `set -a\nsource ${JSON.stringify(state)}\nset -euo pipefail\n${step.script}\nexport -p > ${JSON.stringify(state)}\n`
        execFile("bash", ["-c", script], { env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp" }, timeout: 60_000 },
          (error, stdout, stderr) =>
            error ? reject(new Error(`tour block "${step.name}" failed: ${error.message}\n${stderr}`)) : resolve(stdout))
      })
  )

const variable = (state: string, name: string) => {
  const match = new RegExp(`^declare -x ${name}="(.*)"$`, "m").exec(fs.readFileSync(state, "utf8"))
  return match?.[1]
}

const jsonLines = (text: string) => text.trim().split("\n").map((line) => JSON.parse(line))

/** A receiver for the tour's webhook: answers 204 and keeps what it got. */
const hookReceiver = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ server: http.Server; url: string; received: Array<string> }>((resolve) => {
        const received: Array<string> = []
        const server = http.createServer((req, res) => {
          req.resume()
          received.push(String(req.headers["x-service-event"]))
          res.writeHead(204).end()
        })
        server.listen(0, "127.0.0.1", () =>
          resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/jobmon`, received }))
      })
  ),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

layer(TestServer({ allowPrivateTargets: true }), { excludeTestServices: true, timeout: 180_000 })("docs/quick-tour.md", (it) => {
  it.effect("docs/api-reference.md renders the OpenAPI document the running service serves", () =>
    Effect.gen(function*() {
      const served = yield* call("GET", "/api/openapi.json", { token: null })
      expect(served.status).toBe(200)
      const onDisk = fs.readFileSync(new URL("../../docs/api-reference.md", import.meta.url), "utf8")
      expect(renderApiReference(served.body) === onDisk, "docs/api-reference.md is stale: run `npm run docs:api`").toBe(true)
    }))

  it.effect.skipIf(!hasTools)("every block runs, in order, and prints what the page says", () =>
    Effect.scoped(Effect.gen(function*() {
      const app = yield* TestApp
      const hook = yield* hookReceiver
      const dir = yield* tempDir
      const state = path.join(dir, "state.sh")
      expect(steps.map((s) => s.name)).toEqual(
        ["setup", "token", "monitor", "success", "fail", "runs", "percentiles", "incident", "maintenance", "webhook"]
      )
      // The setup block names the variables; the test gives them its own values.
      expect(steps[0]!.script).toMatch(/^JOBMON=.*\nADMIN_TOKEN=.*\nHOOK_URL=/)
      fs.writeFileSync(state, `JOBMON=${app.baseUrl}\nADMIN_TOKEN=${app.adminToken}\nHOOK_URL=${hook.url}\n`)

      const outputs: Record<string, string> = {}
      for (const step of steps.slice(1)) {
        if (step.name === "incident") {
          // The FAIL incident opens a moment after the fail ping is stored.
          const monitorId = variable(state, "MONITOR")!
          yield* waitFor("the FAIL incident", () =>
            Effect.map(call("GET", `/api/incidents?status=OPEN&monitorId=${monitorId}`), (r) => r.body.incidents[0]))
        }
        const out = yield* runStep(step, state)
        outputs[step.name] = out
        if (step.shown !== null && step.name !== "maintenance") {
          expect(jsonLines(out), `output of tour block "${step.name}"`).toEqual(jsonLines(step.shown))
        }
      }

      expect(outputs.token).toMatch(/^jmt_\S+\n$/)
      const token = variable(state, "TOKEN")!
      const tokens = yield* call("GET", "/api/tokens")
      expect(tokens.body.tokens.find((t: any) => token.startsWith(t.prefix))).toMatchObject({ name: "tour", scope: "write" })

      const [monitor] = jsonLines(outputs.monitor!)
      expect(monitor).toMatchObject({ name: "nightly backup", status: "NEW" })
      const london = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/London", hour: "2-digit", minute: "2-digit" })
      expect(london.format(new Date(monitor.nextExpectedAt))).toBe("02:30")

      const run = variable(state, "RUN")!
      expect(jsonLines(outputs.success!)).toEqual([{ received: true, runId: run }])
      const [failed] = jsonLines(outputs.fail!)
      expect(failed).toMatchObject({ received: true })
      expect(failed.runId).not.toBe(run)

      const [recurring, oneTime, active] = jsonLines(outputs.maintenance!)
      const shown = jsonLines(steps.find((s) => s.name === "maintenance")!.shown!)
      expect([recurring, oneTime]).toEqual(shown.slice(0, 2))
      expect(active.name).toBe("database migration")
      expect(active.remainingSeconds).toBeGreaterThan(3400)
      expect(active.remainingSeconds).toBeLessThanOrEqual(3600)
      const monitorNow = yield* call("GET", `/api/monitors/${variable(state, "MONITOR")}`)
      expect(monitorNow.body).toMatchObject({ inMaintenance: true, maintenance: { name: "database migration" } })

      expect(hook.received).toContain("webhook.test")
    })))
})
