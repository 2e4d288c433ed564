import { execSync } from "node:child_process"
import * as fs from "node:fs"

/**
 * CPU time from /proc (Linux), so that a phase can say what each ping cost each process, whatever
 * else the machine was doing: the server's µs per ping does not depend on how busy the cores were,
 * its rate does. Elsewhere (no /proc) the numbers are simply absent.
 */

const CLOCK_TICK_US = (() => {
  try {
    return 1_000_000 / Number(execSync("getconf CLK_TCK", { stdio: ["ignore", "pipe", "ignore"] }).toString().trim())
  } catch {
    return 10_000
  }
})()

/** utime + stime of a process, µs; undefined when it is gone or there is no /proc. */
export const processCpuUs = (pid: number): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_US
  } catch {
    return undefined
  }
}

const statFields = (pid: number): Array<string> | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** The parent of a process (a PostgreSQL backend's parent is its postmaster). */
export const parentPid = (pid: number): number | undefined => {
  const fields = statFields(pid)
  return fields === undefined ? undefined : Number(fields[1])
}

/**
 * All CPU a PostgreSQL server has used so far, µs: the postmaster, its live children (backends,
 * WAL writer, checkpointer, autovacuum, background workers) and, through the postmaster's
 * children counters, the children that already exited (autovacuum workers come and go).
 */
export const postgresServerCpuUs = (postmaster: number): { total: number; live: Map<number, number> } | undefined => {
  const own = statFields(postmaster)
  if (own === undefined) return undefined
  // utime, stime, cutime, cstime: fields 14–17 of /proc/<pid>/stat (11–14 after the name).
  let total = (Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) * CLOCK_TICK_US
  const live = new Map<number, number>()
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const fields = statFields(Number(entry))
    if (fields === undefined || Number(fields[1]) !== postmaster) continue
    const us = (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_US
    live.set(Number(entry), us)
    total += us
  }
  return { total, live }
}

/** Busy and total CPU time of the whole machine (all cores), µs. */
export const machineCpuUs = (): { busy: number; total: number } | undefined => {
  try {
    const line = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!
    const v = line.trim().split(/\s+/).slice(1).map(Number)
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = v
    const busy = user + nice + system + irq + softirq + steal
    return { busy: busy * CLOCK_TICK_US, total: (busy + idle + iowait) * CLOCK_TICK_US }
  } catch {
    return undefined
  }
}

export interface CpuSample {
  readonly at: number
  readonly processes: ReadonlyMap<number, number>
  readonly machine: { busy: number; total: number } | undefined
}

export const sampleCpu = (pids: Iterable<number>): CpuSample => {
  const processes = new Map<number, number>()
  for (const pid of pids) {
    const us = processCpuUs(pid)
    if (us !== undefined) processes.set(pid, us)
  }
  return { at: Date.now(), processes, machine: machineCpuUs() }
}

/** CPU µs spent by `pids` between two samples (processes missing from either are skipped). */
export const cpuBetween = (before: CpuSample, after: CpuSample, pids: Iterable<number>): number => {
  let us = 0
  for (const pid of pids) {
    const a = before.processes.get(pid)
    const b = after.processes.get(pid)
    if (a !== undefined && b !== undefined) us += b - a
  }
  return us
}

/** Share of all cores busy between two samples (0–1), whoever used them. */
export const machineBusyBetween = (before: CpuSample, after: CpuSample): number | undefined => {
  if (before.machine === undefined || after.machine === undefined) return undefined
  const total = after.machine.total - before.machine.total
  return total <= 0 ? undefined : (after.machine.busy - before.machine.busy) / total
}

/** How busy the machine is with nothing of ours running (other users' work), over `ms`. */
export const backgroundBusy = async (ms = 2000): Promise<number | undefined> => {
  const before = sampleCpu([])
  await new Promise((resolve) => setTimeout(resolve, ms))
  return machineBusyBetween(before, sampleCpu([]))
}
