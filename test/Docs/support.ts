import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** Helpers for tests that run what a page of docs/ shows: programs, shell commands. */

/** A port that was free a moment ago (the OS picks it). */
export const freePort = () =>
  Effect.promise(
    () =>
      new Promise<number>((resolve, reject) => {
        const server = net.createServer()
        server.once("error", reject)
        server.listen(0, "127.0.0.1", () => {
          const port = (server.address() as net.AddressInfo).port
          server.close(() => resolve(port))
        })
      })
  )

/** A temporary directory, removed when the scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-docs-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

export interface Program {
  readonly child: ChildProcess
  /** Everything written to stdout so far. */
  readonly stdout: () => string
  readonly stderr: () => string
}

/** A program running until the scope closes (then SIGTERM, and SIGKILL if it lingers). */
export const startProgram = (command: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
      let out = ""
      let err = ""
      child.stdout!.on("data", (chunk) => (out += chunk))
      child.stderr!.on("data", (chunk) => (err += chunk))
      return { child, stdout: () => out, stderr: () => err } satisfies Program
    }),
    ({ child }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve()
            const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
            child.once("exit", () => {
              clearTimeout(timer)
              resolve()
            })
            child.kill("SIGTERM")
          })
      )
  )

/** Polls until `check` answers a value (not undefined), or fails after `timeoutMs` with `what`. */
export const waitFor = <A, R>(what: string, check: () => Effect.Effect<A | undefined, never, R>, timeoutMs = 30_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (true) {
      const value = yield* check()
      if (value !== undefined) return value
      if (Date.now() > deadline) return yield* Effect.dieMessage(`timed out waiting for ${what}`)
      // real time, whatever Clock the test provides
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
    }
  })

/** Until something accepts TCP connections on the port (a program that started listening). */
export const waitForPort = (port: number, program: Program) =>
  waitFor(`a listener on port ${port} (stderr: ${program.stderr()})`, () =>
    Effect.promise(
      () =>
        new Promise<true | undefined>((resolve) => {
          if (program.child.exitCode !== null) return resolve(undefined)
          const socket = net.connect(port, "127.0.0.1")
          socket.once("connect", () => {
            socket.destroy()
            resolve(true)
          })
          socket.once("error", () => resolve(undefined))
        })
    ))
