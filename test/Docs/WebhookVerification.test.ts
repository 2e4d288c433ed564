import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHmac, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { call, TestServer } from "../support/fixture.js"
import { markdownCodeBlocks } from "./markdown.js"
import { freePort, startProgram, tempDir, waitFor, waitForPort } from "./support.js"

/**
 * The receivers of docs/webhook-verification.md, copied from the page and run, against real signed
 * deliveries of the service (on the real clock: the receivers compare the signed timestamp with
 * theirs). The Go one is not run: no Go toolchain on the test machine.
 */

const page = fs.readFileSync(new URL("../../docs/webhook-verification.md", import.meta.url), "utf8")
const snippet = (name: string) => {
  const block = markdownCodeBlocks(page).find((b) => b.name === name)
  if (block === undefined) throw new Error(`docs/webhook-verification.md has no code block marked <!-- ${name} -->`)
  return block.code
}
const nodeModules = fileURLToPath(new URL("../../node_modules", import.meta.url))

const receivers = [
  { language: "Node with the official library", marker: "verify-library", file: "receiver.mjs", command: process.execPath },
  { language: "Node", marker: "verify-node", file: "receiver.mjs", command: process.execPath },
  { language: "Python", marker: "verify-python", file: "receiver.py", command: "python3" }
]

const post = (url: string, body: string, headers: Record<string, string>) =>
  Effect.promise(() => fetch(url, { method: "POST", body, headers: { "Content-Type": "application/json", ...headers } }))

/** What the service sends: the Standard Webhooks headers for `body`, signed at `seconds`. */
const standardHeaders = (key: Buffer, id: string, seconds: number, body: string) => ({
  "webhook-id": id,
  "webhook-timestamp": String(seconds),
  "webhook-signature": `v1,${createHmac("sha256", key).update(`${id}.${seconds}.${body}`).digest("base64")}`
})

layer(TestServer({ allowPrivateTargets: true }), { excludeTestServices: true, timeout: 120_000 })(
  "docs/webhook-verification.md",
  (it) => {
    it.effect("the Go receiver is on the page with its timestamp window and constant-time compare", () =>
      Effect.sync(() => {
        const go = snippet("verify-go")
        expect(go).toContain("hmac.Equal(expected, []byte(signature))")
        expect(go).toContain("d > tolerance || d < -tolerance")
        expect(go).toContain("http.StatusUnauthorized")
      }))

    for (const { command, file, language, marker } of receivers) {
      for (const secretKind of ["generated", "whsec_"] as const) {
        it.effect(`${language}, ${secretKind} secret: genuine deliveries 204; a wrong secret, a tampered body, a stale or future timestamp, no signature 401; a replayed id is handled once`, () =>
          Effect.scoped(Effect.gen(function*() {
            const dir = yield* tempDir
            fs.symlinkSync(nodeModules, path.join(dir, "node_modules"))
            const port = yield* freePort()
            const url = `http://127.0.0.1:${port}/hooks/jobmon`
            const given = secretKind === "whsec_" ? { secret: `whsec_${randomBytes(32).toString("base64")}` } : {}
            const genuine = yield* call("POST", "/api/webhooks", { body: { url, events: ["incident.opened"], ...given } })
            expect(genuine.status, genuine.text).toBe(201)
            const secret = genuine.body.secret as string
            const key = secret.startsWith("whsec_") ? Buffer.from(secret.slice(6), "base64") : Buffer.from(secret, "utf8")
            const impostor = yield* call("POST", "/api/webhooks", {
              body: { url, events: ["incident.opened"], secret: "not-the-receivers-secret-0123" }
            })
            expect(impostor.status, impostor.text).toBe(201)

            fs.writeFileSync(path.join(dir, file), snippet(marker))
            const program = yield* startProgram(command, [path.join(dir, file)], { WEBHOOK_SECRET: secret, PORT: String(port) })
            yield* waitForPort(port, program)
            const handled = () => program.stdout().split("\n").filter((line) => line.startsWith("verified"))

            // A real delivery, signed by the service with the receiver's secret: accepted.
            const sent = yield* call("POST", `/api/webhooks/${genuine.body.id}/test`)
            expect(sent.status, sent.text).toBe(200)
            expect(sent.body, program.stderr()).toMatchObject({ status: "succeeded", lastStatusCode: 204, attempts: 1 })
            yield* waitFor("the receiver to print what it verified", () =>
              Effect.sync(() => (program.stdout().includes(`verified ${sent.body.id} webhook.test`) ? true : undefined)))

            // Signed with another secret: 401, which the service records as final (no retry).
            const refused = yield* call("POST", `/api/webhooks/${impostor.body.id}/test`)
            expect(refused.body).toMatchObject({ status: "failed", lastStatusCode: 401, attempts: 1 })

            // By hand: a correctly signed body passes once; a replay of it is answered but not handled again.
            const now = Math.floor(Date.now() / 1000)
            const body = JSON.stringify({ event: "incident.opened", id: "e1", createdAt: new Date().toISOString(), data: {} })
            const headers = standardHeaders(key, "d-by-hand", now, body)
            expect((yield* post(url, body, headers)).status).toBe(204)
            expect((yield* post(url, body, headers)).status).toBe(204)
            // one changed byte, another id, the signature of another time, a stale or a future
            // timestamp (signed correctly for it), no headers, the body signature alone: refused
            const refusedCases: Array<Record<string, string>> = [
              headers,
              { ...headers, "webhook-id": "d-other" },
              { ...headers, "webhook-timestamp": String(now - 1) },
              standardHeaders(key, "d-stale", now - 10 * 60, body),
              standardHeaders(key, "d-future", now + 10 * 60, body),
              {},
              { "X-Service-Signature": createHmac("sha256", secret).update(body).digest("hex") }
            ]
            for (const [i, h] of refusedCases.entries()) {
              const tampered = i === 0 ? body.replace("e1", "e2") : body
              expect((yield* post(url, tampered, h)).status, JSON.stringify(h)).toBe(401)
            }
            yield* waitFor("the by-hand delivery to be handled", () =>
              Effect.sync(() => (program.stdout().includes("verified d-by-hand incident.opened") ? true : undefined)))
            // Only the genuine delivery and the first by-hand one got through to the handling code.
            expect(handled()).toEqual([`verified ${sent.body.id} webhook.test`, "verified d-by-hand incident.opened"])
          })))
      }
    }
  }
)
