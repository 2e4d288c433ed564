import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { call, createMonitor, createToken, TestApp, TestServer } from "../support/fixture.js"

/**
 * `jobmon exec` and `jobmon ping` end to end: the real bin/jobmon.js as a child process, with no
 * stdin (/dev/null) and no TTY, as cron, systemd and CI run it, against the real service.
 */

const bin = fileURLToPath(new URL("../../bin/jobmon.js", import.meta.url))

/** The curl-only recipe, exactly as docs/client.md shows it. */
const curlRecipe = () => {
  const docs = readFileSync(fileURLToPath(new URL("../../docs/client.md", import.meta.url)), "utf8")
  const block = /<!-- jobmon-run\.sh[^\n]*-->\n```sh\n([\s\S]*?)```/.exec(docs)
  if (block === null) throw new Error("docs/client.md lost its jobmon-run.sh block")
  return block[1]!
}

interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly elapsedMs: number
}

/**
 * Runs `node bin/jobmon.js …` with a stripped environment. `whenStdout` sees the output as it comes
 * (to signal the process once the job has started); `stdin` is written to a pipe, else /dev/null.
 */
const jobmon = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  options: { whenStdout?: (stdout: string, pid: number) => void; stdin?: string } = {}
) => run(process.execPath, [bin, ...args], env, options)

const run = (
  command: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  options: { whenStdout?: (stdout: string, pid: number) => void; stdin?: string } = {}
) =>
  Effect.promise(() =>
    new Promise<Finished>((resolve, reject) => {
      const began = Date.now()
      const child = spawn(command, args, {
        stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env }
      })
      let stdout = ""
      let stderr = ""
      child.stdout!.setEncoding("utf8").on("data", (text: string) => {
        stdout += text
        options.whenStdout?.(stdout, child.pid!)
      })
      child.stderr!.setEncoding("utf8").on("data", (text: string) => (stderr += text))
      if (options.stdin !== undefined) child.stdin!.end(options.stdin)
      const killer = setTimeout(() => child.kill("SIGKILL"), 50_000)
      child.on("error", reject)
      child.on("close", (code) => {
        clearTimeout(killer)
        resolve({ code, stdout, stderr, elapsedMs: Date.now() - began })
      })
    })
  )

/** The environment of a job: where the service is and a `ping` token. */
const jobEnv = Effect.gen(function*() {
  const app = yield* TestApp
  const { token } = yield* createToken("ping")
  return { JOBMON_URL: app.baseUrl, JOBMON_TOKEN: token }
})

const runsOf = (monitorId: string) =>
  Effect.map(call("GET", `/api/monitors/${monitorId}/runs`), (r) => {
    expect(r.status).toBe(200)
    return r.body.runs as Array<any>
  })

/** Polls until `check` passes (the engine opens incidents asynchronously); fails after 30 s. */
const eventually = <A, R>(effect: Effect.Effect<A, never, R>, check: (a: A) => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 30_000
    for (;;) {
      const value = yield* effect
      if (check(value) || Date.now() > deadline) return value
      yield* Effect.sleep("100 millis")
    }
  })

/** A port on 127.0.0.1 that nothing listens on. */
const unusedPort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
)

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("jobmon exec and jobmon ping", (it) => {
  it.effect("success: the output passes through, one SUCCESS run with its duration and output", () =>
    Effect.gen(function*() {
      const env = yield* jobEnv
      const monitor = yield* createMonitor()
      const result = yield* jobmon(
        ["exec", "--monitor", monitor.id, "--", "sh", "-c", "echo hello; sleep 0.4; echo done >&2"],
        env
      )
      expect(result).toMatchObject({ code: 0, stdout: "hello\n", stderr: "done\n" })
      const runs = yield* runsOf(monitor.id)
      expect(runs).toHaveLength(1)
      expect(runs[0]).toMatchObject({ status: "SUCCESS", startInferred: false, exitCode: null, outputTruncated: false })
      expect(runs[0].output).toBe("hello\ndone\n")
      expect(runs[0].durationMs).toBeGreaterThanOrEqual(350)
      expect(runs[0].durationMs).toBeLessThan(result.elapsedMs)
    }))

  it.effect("failure with code 3: jobmon exits 3, a FAIL run with exitCode 3 and a FAIL incident", () =>
    Effect.gen(function*() {
      const env = yield* jobEnv
      const monitor = yield* createMonitor()
      const result = yield* jobmon(["exec", "--monitor", monitor.id, "--", "sh", "-c", "echo 'disk full' >&2; exit 3"], env)
      expect(result.code).toBe(3)
      expect(result.stderr).toBe("disk full\n")
      const [run] = yield* runsOf(monitor.id)
      expect(run).toMatchObject({ status: "FAIL", exitCode: 3, output: "disk full\n", startInferred: false })
      expect(run.durationMs).toEqual(expect.any(Number))
      const incidents = yield* eventually(
        Effect.map(call("GET", `/api/incidents?monitorId=${monitor.id}&type=FAIL`), (r) => r.body.incidents as Array<any>),
        (list) => list.length > 0
      )
      expect(incidents).toHaveLength(1)
      expect(incidents[0]).toMatchObject({ type: "FAIL", status: "OPEN", details: { exitCode: 3, output: "disk full\n" } })
    }))

  it.effect("SIGTERM to jobmon reaches the job: jobmon exits 143 and sends a fail ping with exitCode 143", () =>
    Effect.gen(function*() {
      const env = yield* jobEnv
      const monitor = yield* createMonitor()
      let signalled = false
      const result = yield* jobmon(
        ["exec", "--monitor", monitor.id, "--", "sh", "-c", "echo started; exec sleep 60"],
        env,
        {
          whenStdout: (stdout, pid) => {
            if (!signalled && stdout.includes("started")) {
              signalled = true
              process.kill(pid, "SIGTERM")
            }
          }
        }
      )
      expect(result.code).toBe(143)
      expect(result.elapsedMs).toBeLessThan(40_000)
      const [run] = yield* runsOf(monitor.id)
      expect(run).toMatchObject({ status: "FAIL", exitCode: 143, output: "started\n", startInferred: false })
    }))

  it.effect("output: the end of a long output is kept, and a password in it is redacted before it is stored", () =>
    Effect.gen(function*() {
      const env = yield* jobEnv
      const monitor = yield* createMonitor({ maxOutputSizeKb: 1 })
      // About 25 KiB: more than the client keeps (10 KiB and a margin) and the monitor's 1 KiB.
      const script = "i=0; while [ $i -lt 2500 ]; do echo \"line $i\"; i=$((i+1)); done; echo 'db password=hunter2'; echo 'the end'"
      const result = yield* jobmon(["exec", "--monitor", monitor.id, "--", "sh", "-c", script], env)
      expect(result.code).toBe(0)
      // The job's own output is passed through whole and unchanged.
      expect(result.stdout.startsWith("line 0\nline 1\n")).toBe(true)
      expect(result.stdout.endsWith("line 2499\ndb password=hunter2\nthe end\n")).toBe(true)
      const [run] = yield* runsOf(monitor.id)
      expect(run.outputTruncated).toBe(true)
      expect(Buffer.byteLength(run.output)).toBeLessThanOrEqual(1024)
      expect(run.output.endsWith("line 2499\ndb password=***REDACTED***\nthe end\n")).toBe(true)
      const sql = yield* SqlClient.SqlClient
      const leaks = yield* sql<{ n: number }>`select count(*)::int as n from runs where output like ${"%hunter2%"}`
      expect(leaks[0]!.n).toBe(0)
    }))

  it.scoped("a command not found exits 127, one not executable 126; both are reported as failures with that code", () =>
    Effect.gen(function*() {
      const env = yield* jobEnv
      const monitor = yield* createMonitor()
      const result = yield* jobmon(["exec", "--monitor", monitor.id, "--", "./no-such-command-here"], env)
      expect(result.code).toBe(127)
      expect(result.stderr).toContain("command not found: ./no-such-command-here")
      const [run] = yield* runsOf(monitor.id)
      expect(run).toMatchObject({ status: "FAIL", exitCode: 127 })
      const dir = mkdtempSync(join(tmpdir(), "jobmon-exec-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const script = join(dir, "not-executable.sh")
      writeFileSync(script, "#!/bin/sh\necho never\n", { mode: 0o644 })
      const denied = yield* jobmon(["exec", "--monitor", monitor.id, "--", script], env)
      expect(denied).toMatchObject({ code: 126, stdout: "" })
      const latest = (yield* runsOf(monitor.id))[0]
      expect(latest).toMatchObject({ status: "FAIL", exitCode: 126 })
    }))

  it.effect("service down: the job still runs and jobmon exits with its code, in bounded time, saying so once", () =>
    Effect.gen(function*() {
      const port = yield* unusedPort
      const result = yield* jobmon(
        ["exec", "--monitor", "any", "--url", `http://127.0.0.1:${port}`, "--token", "jmt_whatever", "--", "sh", "-c", "echo ran; exit 4"],
        {}
      )
      expect(result.code).toBe(4)
      expect(result.stdout).toBe("ran\n")
      expect(result.stderr.match(/cannot reach the service at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/g)).toHaveLength(1)
      expect(result.stderr.split("\n").filter((line) => line.startsWith("jobmon:"))).toHaveLength(1)
      // 3 s of retries before the job and 5 s after, at most; generous for a loaded machine.
      expect(result.elapsedMs).toBeLessThan(30_000)
    }))

  it.effect("a refused token: the job runs and keeps its exit code; stderr says why", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const app = yield* TestApp
      const result = yield* jobmon(
        ["exec", "--monitor", monitor.id, "--url", app.baseUrl, "--token", "jmt_not_a_real_token", "--", "sh", "-c", "exit 0"],
        {}
      )
      expect(result.code).toBe(0)
      expect(result.stderr).toMatch(/^jobmon: the service at .* refused the start ping \(401 /)
      expect(yield* runsOf(monitor.id)).toHaveLength(0)
    }))

  it.effect("usage errors exit 2 without running anything", () =>
    Effect.gen(function*() {
      const env = yield* jobEnv
      const noMonitor = yield* jobmon(["exec", "--", "sh", "-c", "echo ran"], env)
      expect(noMonitor).toMatchObject({ code: 2, stdout: "" })
      expect(noMonitor.stderr).toContain("--monitor <id> is required")
      const noToken = yield* jobmon(["exec", "--monitor", "m", "--", "true"], { JOBMON_URL: env.JOBMON_URL })
      expect(noToken.code).toBe(2)
      expect(noToken.stderr).toContain("JOBMON_TOKEN")
      const badKind = yield* jobmon(["ping", "m", "finish"], env)
      expect(badKind.code).toBe(2)
      expect(badKind.stderr).toContain("start, success or fail")
    }))

  it.effect("jobmon ping start, then fail with exit code, duration, output and run id; success alone", () =>
    Effect.gen(function*() {
      const env = yield* jobEnv
      const monitor = yield* createMonitor()
      const start = yield* jobmon(["ping", monitor.id, "start"], env)
      expect(start.code).toBe(0)
      const runId = start.stdout.trim()
      expect(runId).toMatch(/^[0-9a-f-]{36}$/)
      const fail = yield* jobmon(
        ["ping", monitor.id, "fail", "--exit-code", "5", "--duration-ms", "1234", "--output", "-", "--run-id", runId],
        env,
        { stdin: "restore failed: token=abc123\n" }
      )
      expect(fail).toMatchObject({ code: 0, stdout: `${runId}\n` })
      const success = yield* jobmon(["ping", monitor.id, "success", "--output", "all good"], env)
      expect(success.code).toBe(0)
      const runs = yield* runsOf(monitor.id)
      const failed = runs.find((r) => r.id === runId)
      expect(failed).toMatchObject({ status: "FAIL", exitCode: 5, durationMs: 1234, startInferred: false })
      expect(failed.output).toBe("restore failed: token=***REDACTED***\n")
      expect(runs.find((r) => r.id === success.stdout.trim())).toMatchObject({ status: "SUCCESS", output: "all good", startInferred: true })
      // A ping the service refuses: exit 1, and stderr says why.
      const unknown = yield* jobmon(["ping", "7b0b5b8e-6c39-4a32-9a53-3d0f5c1e0a11", "start"], env)
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toMatch(/refused the start ping \(404 NotFound/)
    }))

  it.scoped("the curl-only recipe of docs/client.md: start, fail with exit code, duration and output; service down", () =>
    Effect.gen(function*() {
      const env = yield* jobEnv
      const monitor = yield* createMonitor()
      const dir = mkdtempSync(join(tmpdir(), "jobmon-run-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const script = join(dir, "jobmon-run.sh")
      writeFileSync(script, curlRecipe())
      const job = ["sh", "-c", "printf 'a \"quoted\" \\\\ line\\twith tab\\n'; sleep 0.3; echo 'password=hunter2' >&2; exit 3"]
      const result = yield* run("sh", [script, monitor.id, ...job], env)
      expect(result.code).toBe(3)
      expect(result.stdout).toBe("a \"quoted\" \\ line\twith tab\npassword=hunter2\n")
      const [stored] = yield* runsOf(monitor.id)
      expect(stored).toMatchObject({ status: "FAIL", exitCode: 3, startInferred: false })
      expect(stored.output).toBe("a \"quoted\" \\ line\twith tab\npassword=***REDACTED***\n")
      expect(stored.durationMs).toBeGreaterThanOrEqual(250)
      // The service down: the job runs, keeps its exit code, and one line says so.
      const port = yield* unusedPort
      const down = yield* run("sh", [script, monitor.id, "sh", "-c", "echo ran; exit 0"], { ...env, JOBMON_URL: `http://127.0.0.1:${port}` })
      expect(down).toMatchObject({ code: 0, stdout: "ran\n" })
      expect(down.stderr).toMatch(/^jobmon-run: could not report this run to http:\/\/127\.0\.0\.1:\d+\/api\/ping\/.* \(the job is not affected\)\n$/)
      expect(down.elapsedMs).toBeLessThan(40_000)
    }))
})
