import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHmac } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { call, TestServer } from "../support/fixture.js"
import { markdownCodeBlocks } from "./markdown.js"
import { freePort, startProgram, tempDir, waitFor, waitForPort } from "./support.js"

/**
 * The receivers of docs/webhook-verification.md, copied from the page and run, against real signed
 * deliveries of the service. (The Go one is not run: no Go toolchain on the test machine.)
 */

const page = fs.readFileSync(new URL("../../docs/webhook-verification.md", import.meta.url), "utf8")
const snippet = (name: string) => {
  const block = markdownCodeBlocks(page).find((b) => b.name === name)
  if (block === undefined) throw new Error(`docs/webhook-verification.md has no code block marked <!-- ${name} -->`)
  return block.code
}

const receivers = [
  { language: "Node", marker: "verify-node", file: "receiver.mjs", command: process.execPath },
  { language: "Python", marker: "verify-python", file: "receiver.py", command: "python3" }
]

const post = (url: string, body: string, headers: Record<string, string>) =>
  Effect.promise(() => fetch(url, { method: "POST", body, headers: { "Content-Type": "application/json", ...headers } }))

layer(TestServer({ allowPrivateTargets: true }), { excludeTestServices: true, timeout: 120_000 })(
  "docs/webhook-verification.md",
  (it) => {
    it.effect("the Go receiver is on the page with its constant-time compare", () =>
      Effect.sync(() => {
        const go = snippet("verify-go")
        expect(go).toContain("hmac.Equal(expected, given)")
        expect(go).toContain("http.StatusUnauthorized")
      }))

    for (const { language, marker, file, command } of receivers) {
      it.effect(`${language}: genuine deliveries are answered 204; a wrong secret, a tampered body or no signature 401`, () =>
        Effect.scoped(Effect.gen(function*() {
          const dir = yield* tempDir
          const port = yield* freePort()
          const url = `http://127.0.0.1:${port}/hooks/jobmon`
          const genuine = yield* call("POST", "/api/webhooks", { body: { url, events: ["incident.opened"] } })
          expect(genuine.status, genuine.text).toBe(201)
          const secret = genuine.body.secret as string
          const impostor = yield* call("POST", "/api/webhooks", {
            body: { url, events: ["incident.opened"], secret: "not-the-receivers-secret-0123" }
          })
          expect(impostor.status, impostor.text).toBe(201)

          fs.writeFileSync(path.join(dir, file), snippet(marker))
          const program = yield* startProgram(command, [path.join(dir, file)], { WEBHOOK_SECRET: secret, PORT: String(port) })
          yield* waitForPort(port, program)

          // A real delivery, signed by the service with the receiver's secret: accepted.
          const sent = yield* call("POST", `/api/webhooks/${genuine.body.id}/test`)
          expect(sent.status, sent.text).toBe(200)
          const delivered = yield* waitFor("the genuine delivery to succeed", () =>
            Effect.map(call("GET", `/api/webhooks/${genuine.body.id}/deliveries`), (r) =>
              r.body.deliveries.find((d: any) => d.id === sent.body.id && d.status !== "pending")))
          expect(delivered).toMatchObject({ status: "succeeded", lastStatusCode: 204, attempts: 1 })
          yield* waitFor("the receiver to print what it verified", () =>
            Effect.sync(() => (program.stdout().includes(`verified ${sent.body.id} webhook.test`) ? true : undefined)))

          // Signed with another secret: 401, which the service records as final (no retry).
          const refused = yield* call("POST", `/api/webhooks/${impostor.body.id}/test`)
          expect(refused.status, refused.text).toBe(200)
          const failed = yield* waitFor("the impostor delivery to fail", () =>
            Effect.map(call("GET", `/api/webhooks/${impostor.body.id}/deliveries`), (r) =>
              r.body.deliveries.find((d: any) => d.id === refused.body.id && d.status !== "pending")))
          expect(failed).toMatchObject({ status: "failed", lastStatusCode: 401, attempts: 1 })

          // By hand: a correctly signed body passes; one changed byte, or no header, does not.
          const body = JSON.stringify({ event: "incident.opened", id: "e1", createdAt: new Date().toISOString(), data: {} })
          const signature = createHmac("sha256", secret).update(body).digest("hex")
          expect((yield* post(url, body, { "X-Service-Signature": signature })).status).toBe(204)
          expect((yield* post(url, body.replace("e1", "e2"), { "X-Service-Signature": signature })).status).toBe(401)
          expect((yield* post(url, body, { "X-Service-Signature": signature.toUpperCase() })).status).toBe(401)
          expect((yield* post(url, body, {})).status).toBe(401)
          // Only the two genuine requests got through to the handling code.
          expect(program.stdout().split("\n").filter((line) => line.startsWith("verified"))).toHaveLength(2)
        })))
    }
  }
)
