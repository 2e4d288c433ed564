// @ts-check
/**
 * The job-side client: `jobmon exec` and `jobmon ping` (docs/client.md).
 *
 * Plain JavaScript on Node's own modules, loaded by bin/jobmon.js before (and instead of) tsx and
 * the service: a wrapped job starts a few tens of milliseconds after `node` itself, and the
 * wrapper holds little memory. It must never change what the job does: the job's stdio, exit code
 * and signals pass through, and a service that is down or slow costs the job a few seconds at most.
 */
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import http from "node:http"
import https from "node:https"
import { constants } from "node:os"
import { isatty } from "node:tty"

const DEFAULT_URL = "http://127.0.0.1:8080"
const DEFAULT_MAX_OUTPUT_KB = 10
/**
 * Kept beyond the output limit, starting at a line boundary: the service redacts secrets before it
 * cuts output to the monitor's limit, so a secret cut in half by the client (a private key block
 * without its BEGIN line, `word=hunter2` without `pass`) falls outside what the service keeps.
 */
const OUTPUT_MARGIN_BYTES = 8 * 1024
/** Time the job may be held up by pings: before it starts, and after it ends. */
const START_BUDGET_MS = 3_000
const FINISH_BUDGET_MS = 5_000
/** A single request never waits longer than this (less when the budget is nearly spent). */
const REQUEST_TIMEOUT_MS = 2_000

export const USAGE = `usage:
  jobmon exec --monitor <id> [--url <base>] [--token <token>] [--max-output-kb <n>] -- <command> [args…]
  jobmon ping <monitorId> start|success|fail [--exit-code <n>] [--duration-ms <n>] [--output <text>|-]
                                             [--run-id <id>] [--url <base>] [--token <token>]
The token comes from --token or JOBMON_TOKEN (a 'ping' token is enough); the base url from --url
or JOBMON_URL (default ${DEFAULT_URL}). See docs/client.md.`

class UsageError extends Error {}

/**
 * Reads `--name value` and `--name=value` options until `--` or the first positional argument.
 * @param {ReadonlyArray<string>} args
 * @param {ReadonlyArray<string>} known
 * @returns {{ options: Map<string, string>, rest: string[], sawDashDash: boolean }}
 */
const parseOptions = (args, known) => {
  /** @type {Map<string, string>} */
  const options = new Map()
  let i = 0
  for (; i < args.length; i++) {
    const arg = /** @type {string} */ (args[i])
    if (arg === "--") return { options, rest: args.slice(i + 1), sawDashDash: true }
    if (!arg.startsWith("--")) break
    const eq = arg.indexOf("=")
    const name = eq > 0 ? arg.slice(2, eq) : arg.slice(2)
    if (!known.includes(name)) throw new UsageError(`unknown option --${name}`)
    let value = eq > 0 ? arg.slice(eq + 1) : args[i + 1]
    if (eq < 0) i++
    if (value === undefined) throw new UsageError(`--${name} needs a value`)
    options.set(name, value)
  }
  return { options, rest: args.slice(i), sawDashDash: false }
}

/**
 * @param {Map<string, string>} options
 * @param {string} name
 * @param {number} min
 * @param {number} max
 */
const integerOption = (options, name, min, max) => {
  const raw = options.get(name)
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!/^-?\d+$/.test(raw) || value < min || value > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, not '${raw}'`)
  }
  return value
}

/**
 * @param {Map<string, string>} options
 * @param {NodeJS.ProcessEnv} env
 */
const connection = (options, env) => {
  const base = options.get("url") ?? env["JOBMON_URL"] ?? DEFAULT_URL
  let url
  try {
    url = new URL(base)
  } catch {
    throw new UsageError(`--url must be an http(s) address, not '${base}'`)
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--url must be an http(s) address, not '${base}'`)
  const token = options.get("token") ?? env["JOBMON_TOKEN"] ?? ""
  if (token === "") throw new UsageError("no token: pass --token <token> or set JOBMON_TOKEN (a 'ping' token is enough)")
  return { base: base.replace(/\/+$/, ""), token }
}

/**
 * The last `limit` bytes of a stream, in chunks; memory stays near `limit` however much is written.
 */
export class OutputTail {
  /** @param {number} limit */
  constructor(limit) {
    this.limit = limit
    /** @type {Buffer[]} */
    this.chunks = []
    this.kept = 0
    this.dropped = false
  }

  /** @param {Buffer} chunk */
  push(chunk) {
    this.chunks.push(chunk)
    this.kept += chunk.length
    while (this.kept > this.limit) {
      const first = /** @type {Buffer} */ (this.chunks[0])
      const excess = this.kept - this.limit
      this.dropped = true
      if (first.length <= excess) {
        this.chunks.shift()
        this.kept -= first.length
      } else {
        this.chunks[0] = first.subarray(excess)
        this.kept -= excess
      }
    }
  }

  /** The tail as text; when its start was dropped, it begins at the first whole line. */
  text() {
    let bytes = Buffer.concat(this.chunks)
    if (this.dropped) {
      const newline = bytes.indexOf(10)
      bytes = newline >= 0 && newline < bytes.length - 1 ? bytes.subarray(newline + 1) : bytes
      let start = 0
      while (start < bytes.length && ((/** @type {number} */ (bytes[start])) & 0xc0) === 0x80) start++
      bytes = bytes.subarray(start)
    }
    return bytes.toString("utf8")
  }
}

/**
 * One POST with a JSON body; resolves with the status and parsed body, rejects on network errors.
 * @param {string} url
 * @param {string} token
 * @param {unknown} body
 * @param {number} timeoutMs
 * @returns {Promise<{ status: number, body: any }>}
 */
const post = (url, token, body, timeoutMs) =>
  new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body ?? {}))
    const target = new URL(url)
    const request = (target.protocol === "https:" ? https : http).request(target, {
      method: "POST",
      agent: false,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "content-length": payload.length,
        "user-agent": "jobmon-client"
      }
    })
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    request.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    request.on("response", (response) => {
      /** @type {Buffer[]} */
      const parts = []
      response.on("data", (part) => parts.push(part))
      response.on("error", (error) => {
        clearTimeout(timer)
        reject(error)
      })
      response.on("end", () => {
        clearTimeout(timer)
        const text = Buffer.concat(parts).toString("utf8")
        let parsed = undefined
        try {
          parsed = text === "" ? undefined : JSON.parse(text)
        } catch {
          parsed = undefined
        }
        resolve({ status: response.statusCode ?? 0, body: parsed })
      })
    })
    request.end(payload)
  })

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * @typedef {{ ok: true, runId: string | undefined, status: number }
 *   | { ok: false, reachable: boolean, reason: string }} PingResult
 */

/**
 * Sends one ping, retrying network errors, timeouts, 429 and 5xx with backoff (0.2 s, 0.4 s, 0.8 s…)
 * while the budget lasts. Never throws.
 * @param {{ base: string, token: string }} conn
 * @param {string} monitorId
 * @param {"start" | "success" | "fail"} kind
 * @param {Record<string, unknown>} body
 * @param {number} budgetMs
 * @returns {Promise<PingResult>}
 */
export const ping = async (conn, monitorId, kind, body, budgetMs) => {
  const url = `${conn.base}/api/ping/${encodeURIComponent(monitorId)}/${kind}`
  const deadline = Date.now() + budgetMs
  let backoff = 200
  let reason = "no attempt"
  let reachable = false
  for (;;) {
    const remaining = deadline - Date.now()
    if (remaining <= 0) return { ok: false, reachable, reason }
    try {
      const response = await post(url, conn.token, body, Math.min(REQUEST_TIMEOUT_MS, remaining))
      reachable = true
      if (response.status === 200) return { ok: true, runId: response.body?.runId, status: 200 }
      const detail = response.body?.message ? `: ${response.body.message}` : ""
      reason = `${response.status}${response.body?._tag ? ` ${response.body._tag}` : ""}${detail}`
      // A start retried after a lost answer finds its run already there: it was recorded.
      if (response.status === 409 && kind === "start") return { ok: true, runId: /** @type {string} */ (body["runId"]), status: 409 }
      if (response.status !== 429 && response.status < 500) return { ok: false, reachable, reason }
    } catch (error) {
      reason = /** @type {any} */ (error)?.code ?? /** @type {Error} */ (error)?.message ?? String(error)
    }
    const wait = Math.min(backoff, deadline - Date.now())
    if (wait <= 0) return { ok: false, reachable, reason }
    await sleep(wait)
    backoff *= 2
  }
}

/** @param {string} text */
const warn = (text) => {
  try {
    process.stderr.write(`jobmon: ${text}\n`)
  } catch {
    // stderr closed: nothing else to tell.
  }
}

/**
 * Why a ping failed, as one line for stderr.
 * @param {string} base
 * @param {string} kind
 * @param {{ reachable: boolean, reason: string }} result
 */
const failureMessage = (base, kind, result) =>
  result.reachable
    ? `the service at ${base} refused the ${kind} ping (${result.reason})`
    : `cannot reach the service at ${base} (${result.reason}): the ${kind} ping is not recorded`

/** @param {NodeJS.Signals} signal */
const signalExitCode = (signal) => 128 + (constants.signals[signal] ?? 0)

/**
 * Runs the command with stdio passed through, keeping the tail of stdout and stderr together.
 * @param {string} command
 * @param {ReadonlyArray<string>} args
 * @param {OutputTail} tail
 * @returns {Promise<{ exitCode: number, signalled: boolean }>}
 */
const runChild = (command, args, tail) =>
  new Promise((resolve) => {
    let child
    try {
      child = spawn(command, args, { stdio: ["inherit", "pipe", "pipe"] })
    } catch (error) {
      tail.push(Buffer.from(`jobmon: cannot run '${command}': ${/** @type {Error} */ (error).message}\n`))
      resolve({ exitCode: 126, signalled: false })
      return
    }
    let done = false
    /** @param {number} exitCode @param {boolean} signalled */
    const finish = (exitCode, signalled) => {
      if (done) return
      done = true
      for (const signal of forwarded) process.removeListener(signal, forward)
      resolve({ exitCode, signalled })
    }

    /** @param {NodeJS.Signals} signal */
    const forward = (signal) => {
      // In a terminal, Ctrl-C already reaches the whole foreground group, the job included.
      if (signal === "SIGINT" && isatty(0)) return
      child.kill(signal)
    }
    /** @type {NodeJS.Signals[]} */
    const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"]
    for (const signal of forwarded) process.on(signal, forward)

    /**
     * @param {import("node:stream").Readable} from
     * @param {NodeJS.WriteStream} to
     */
    const passThrough = (from, to) => {
      let broken = false
      to.on("error", () => {
        // The reader went away (`| head`): keep recording, stop passing through.
        broken = true
        from.resume()
      })
      from.on("data", (chunk) => {
        tail.push(chunk)
        if (broken) return
        if (!to.write(chunk)) {
          from.pause()
          to.once("drain", () => from.resume())
        }
      })
    }
    passThrough(/** @type {import("node:stream").Readable} */ (child.stdout), process.stdout)
    passThrough(/** @type {import("node:stream").Readable} */ (child.stderr), process.stderr)

    child.on("error", (error) => {
      const code = /** @type {any} */ (error).code
      const exitCode = code === "ENOENT" ? 127 : 126
      const text = code === "ENOENT" ? `command not found: ${command}` : `cannot run '${command}': ${error.message}`
      warn(text)
      tail.push(Buffer.from(`jobmon: ${text}\n`))
      finish(exitCode, false)
    })
    child.on("exit", (code, signal) => {
      const exitCode = signal !== null ? signalExitCode(signal) : code ?? 1
      // Wait for the last output, but not for a grandchild that keeps the pipes open.
      const timer = setTimeout(() => finish(exitCode, signal !== null), 1_000)
      child.on("close", () => {
        clearTimeout(timer)
        finish(exitCode, signal !== null)
      })
    })
  })

/**
 * `jobmon exec`: returns the exit code to exit with (the job's own, or 2 for a usage error).
 * @param {ReadonlyArray<string>} args
 * @param {NodeJS.ProcessEnv} env
 */
export const exec = async (args, env) => {
  const { options, rest } = parseOptions(args, ["monitor", "url", "token", "max-output-kb"])
  const monitorId = options.get("monitor") ?? ""
  if (monitorId === "") throw new UsageError("--monitor <id> is required")
  if (rest.length === 0) throw new UsageError("no command: put it after --, e.g. jobmon exec --monitor <id> -- ./backup.sh")
  const conn = connection(options, env)
  const maxOutputKb = integerOption(options, "max-output-kb", 0, 1024) ?? DEFAULT_MAX_OUTPUT_KB
  const [command, ...commandArgs] = /** @type {[string, ...string[]]} */ (rest)

  let warned = false
  /** @param {string} kind @param {PingResult} result */
  const report = (kind, result) => {
    if (result.ok || warned) return
    warned = true
    warn(`${failureMessage(conn.base, kind, result)}; the job is not affected`)
  }

  // A signal that arrives before the job starts: the job is not started.
  /** @type {NodeJS.Signals | undefined} */
  let early
  /** @param {NodeJS.Signals} signal */
  const onEarly = (signal) => {
    early = signal
  }
  /** @type {NodeJS.Signals[]} */
  const early_signals = ["SIGINT", "SIGTERM", "SIGHUP"]
  for (const signal of early_signals) process.on(signal, onEarly)
  const runId = randomUUID()
  const start = await ping(conn, monitorId, "start", { runId }, START_BUDGET_MS)
  for (const signal of early_signals) process.removeListener(signal, onEarly)
  report("start", start)
  const runIdField = start.ok ? { runId: start.runId ?? runId } : {}

  const tail = new OutputTail(maxOutputKb * 1024 + (maxOutputKb > 0 ? OUTPUT_MARGIN_BYTES : 0))
  const began = performance.now()
  const result = early === undefined
    ? await runChild(command, commandArgs, tail)
    : { exitCode: signalExitCode(early), signalled: true }
  const durationMs = Math.round(performance.now() - began)

  // A second signal while the result is being sent: stop waiting for the service.
  /** @type {NodeJS.Signals[]} */
  const late_signals = ["SIGINT", "SIGTERM", "SIGHUP"]
  for (const signal of late_signals) process.on(signal, () => process.exit(result.exitCode))

  const output = maxOutputKb > 0 ? tail.text() : ""
  const body = {
    ...runIdField,
    durationMs,
    ...(output === "" ? {} : { output }),
    ...(result.exitCode === 0 ? {} : { exitCode: result.exitCode })
  }
  const kind = result.exitCode === 0 ? "success" : "fail"
  report(kind, await ping(conn, monitorId, kind, body, FINISH_BUDGET_MS))
  return result.exitCode
}

/**
 * Reads standard input to its end, keeping its tail.
 * @param {number} limit
 * @returns {Promise<string>}
 */
const readStdinTail = (limit) =>
  new Promise((resolve) => {
    const tail = new OutputTail(limit)
    process.stdin.on("data", (chunk) => tail.push(chunk))
    process.stdin.on("end", () => resolve(tail.text()))
    process.stdin.on("error", () => resolve(tail.text()))
  })

/**
 * `jobmon ping <monitorId> start|success|fail`: prints the runId; 0 when recorded, 1 when not.
 * @param {ReadonlyArray<string>} args
 * @param {NodeJS.ProcessEnv} env
 */
export const pingCommand = async (args, env) => {
  const [monitorId, kind, ...more] = args
  if (monitorId === undefined || monitorId.startsWith("-")) throw new UsageError("ping needs a monitor id: jobmon ping <monitorId> start|success|fail")
  if (kind !== "start" && kind !== "success" && kind !== "fail") {
    throw new UsageError(`the ping kind must be start, success or fail, not '${kind ?? ""}'`)
  }
  const { options, rest } = parseOptions(more, ["exit-code", "duration-ms", "output", "run-id", "url", "token", "max-output-kb"])
  if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`)
  const conn = connection(options, env)
  const exitCode = integerOption(options, "exit-code", -2147483648, 2147483647)
  const durationMs = integerOption(options, "duration-ms", 0, Number.MAX_SAFE_INTEGER)
  const maxOutputKb = integerOption(options, "max-output-kb", 1, 1024) ?? DEFAULT_MAX_OUTPUT_KB
  const runId = options.get("run-id")
  const rawOutput = options.get("output")
  if (kind === "start" && (exitCode !== undefined || durationMs !== undefined || rawOutput !== undefined)) {
    throw new UsageError("a start ping carries no --exit-code, --duration-ms or --output")
  }
  const output = rawOutput === "-" ? await readStdinTail(maxOutputKb * 1024 + OUTPUT_MARGIN_BYTES) : rawOutput
  const body = {
    ...(runId === undefined ? {} : { runId }),
    ...(exitCode === undefined ? {} : { exitCode }),
    ...(durationMs === undefined ? {} : { durationMs }),
    ...(output === undefined ? {} : { output })
  }
  const result = await ping(conn, monitorId, kind, body, FINISH_BUDGET_MS)
  if (!result.ok) {
    warn(failureMessage(conn.base, kind, result))
    return 1
  }
  if (result.runId !== undefined) process.stdout.write(`${result.runId}\n`)
  return 0
}

/**
 * Entry point from bin/jobmon.js for `exec` and `ping`.
 * @param {ReadonlyArray<string>} argv  the arguments after `jobmon`
 */
export const main = async (argv) => {
  const [command, ...args] = argv
  if (args[0] === "--help" || args[0] === "-h") {
    process.stdout.write(`${USAGE}\n`)
    process.exit(0)
  }
  let code
  try {
    code = command === "exec" ? await exec(args, process.env) : await pingCommand(args, process.env)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    warn(`${error.message}\n${USAGE}`)
    code = 2
  }
  process.exit(code)
}
