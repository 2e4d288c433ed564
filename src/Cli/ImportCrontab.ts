import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { hostname } from "node:os"
import * as path from "node:path"
import { type CrontabEntry, parseCrontab, placeholderId, type Proposal, propose, rewriteCrontab } from "./Crontab.js"

/**
 * `jobmon import crontab [FILE|-]` (docs/client.md#importing-a-crontab): the plan on standard error,
 * the rewritten crontab on standard output. A dry run unless --apply; --apply creates or updates
 * one monitor per job, found by its slug (GET /api/monitors?slug=…), so a second run changes nothing.
 */

export class ImportError extends Error {
  constructor(message: string, readonly exitCode: number) {
    super(message)
  }
}

export const IMPORT_USAGE = `usage: jobmon import crontab [FILE|-] [--apply] [--system|--user] [--timezone <zone>] [--prefix <text>]
                            [--url <base>] [--token <token>] [--jobmon <path> | --curl [--script <path>]]
Without FILE, the current user's crontab (crontab -l); - reads standard input. See docs/client.md.`

const VALUE_OPTIONS = ["url", "token", "timezone", "prefix", "jobmon", "script"]
const BOOLEAN_OPTIONS = ["apply", "system", "curl", "user"]

interface ImportOptions {
  readonly file: string | undefined
  readonly values: Map<string, string>
  readonly booleans: Set<string>
}

const parseArgs = (args: ReadonlyArray<string>): ImportOptions => {
  const values = new Map<string, string>()
  const booleans = new Set<string>()
  let file: string | undefined
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=")
      const name = eq > 0 ? arg.slice(2, eq) : arg.slice(2)
      if (BOOLEAN_OPTIONS.includes(name) && eq < 0) booleans.add(name)
      else if (VALUE_OPTIONS.includes(name)) {
        const value = eq > 0 ? arg.slice(eq + 1) : args[++i]
        if (value === undefined) throw new ImportError(`--${name} needs a value\n${IMPORT_USAGE}`, 2)
        values.set(name, value)
      } else throw new ImportError(`unknown option ${arg}\n${IMPORT_USAGE}`, 2)
    } else if (file === undefined) file = arg
    else throw new ImportError(`unexpected argument '${arg}': give one crontab\n${IMPORT_USAGE}`, 2)
  }
  return { file, values, booleans }
}

const readCrontab = (file: string | undefined): string => {
  if (file === "-") return readFileSync(0, "utf8")
  if (file !== undefined) {
    try {
      return readFileSync(file, "utf8")
    } catch (error) {
      throw new ImportError(`cannot read ${file}: ${(error as Error).message}`, 2)
    }
  }
  const listed = spawnSync("crontab", ["-l"], { encoding: "utf8" })
  if (listed.error !== undefined || listed.status !== 0) {
    const why = listed.error?.message ?? listed.stderr.trim()
    throw new ImportError(`cannot read your crontab with 'crontab -l' (${why}); give a FILE, or - for standard input`, 2)
  }
  return listed.stdout
}

/** The system crontab format (a user field) for /etc/crontab and /etc/cron.d/*, unless told. */
const isSystemFile = (file: string | undefined) =>
  file !== undefined && file !== "-" && (path.resolve(file) === "/etc/crontab" || path.dirname(path.resolve(file)) === "/etc/cron.d")

/** The host's zone, as Node resolves it (TZ, else the system's). */
const hostZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone

interface Found {
  readonly id: string
  readonly slug?: string
  readonly schedule: { readonly type: string; readonly expression: string; readonly timezone: string }
}

/** The service's monitors API with a token: find by slug, create, update the schedule. */
const service = (url: string, token: string) => {
  const request = async (method: string, pathname: string, body?: unknown) => {
    let response: Response
    try {
      response = await fetch(`${url}${pathname}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" })
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(15_000)
      })
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message
      throw new ImportError(`cannot reach the service at ${url} (${cause}); nothing more was changed`, 1)
    }
    const text = await response.text()
    const json = text === "" ? undefined : (() => {
      try {
        return JSON.parse(text)
      } catch {
        return undefined
      }
    })()
    if (!response.ok) {
      const message = json?.message ?? text.slice(0, 200)
      const hint = response.status === 401 || response.status === 403
        ? " (--apply needs a token of scope write or admin: --token or JOBMON_TOKEN)"
        : ""
      throw new ImportError(`the service refused ${method} ${pathname}: ${response.status} ${message}${hint}`, 1)
    }
    return json
  }
  return {
    findBySlug: async (slug: string): Promise<Found | undefined> => {
      const page = await request("GET", `/api/monitors?slug=${encodeURIComponent(slug)}`)
      const monitors: ReadonlyArray<Found> = page?.monitors ?? []
      // A service without the slug filter answers every monitor: never take one of those for this job.
      if (monitors.some((m) => m.slug === undefined)) {
        throw new ImportError(
          `the service at ${url} does not know monitor slugs (GET /api/monitors?slug= is not filtered): --apply needs a jobmon with them; nothing was changed`,
          1
        )
      }
      return monitors.find((m) => m.slug === slug)
    },
    create: async (proposal: Proposal): Promise<Found> => {
      const made: Found = await request("POST", "/api/monitors", {
        name: proposal.name,
        slug: proposal.slug,
        schedule: proposal.job.schedule,
        tags: ["crontab"]
      })
      if (made.slug !== proposal.slug) {
        // A service without slugs ignored the field: a monitor the next run could not find. Undone.
        await request("DELETE", `/api/monitors/${encodeURIComponent(made.id)}`)
        throw new ImportError(
          `the service at ${url} does not know monitor slugs (it ignored the slug of ${proposal.slug}; that monitor was deleted again): --apply needs a jobmon with them`,
          1
        )
      }
      return made
    },
    updateSchedule: (id: string, proposal: Proposal) =>
      request("PATCH", `/api/monitors/${encodeURIComponent(id)}`, { schedule: proposal.job.schedule }) as Promise<Found>
  }
}

const describe = (p: Proposal) =>
  `'${p.job.schedule.expression}' in ${p.job.schedule.timezone}: ${p.name.length > 70 ? `${p.name.slice(0, 69)}…` : p.name}`

/** Runs the command; answers the exit code. `out` gets the crontab, `err` the plan. */
export const importCrontab = async (
  args: ReadonlyArray<string>,
  io: { readonly out: (text: string) => void; readonly err: (line: string) => void } = {
    out: (text) => process.stdout.write(text),
    err: (line) => process.stderr.write(`${line}\n`)
  }
): Promise<number> => {
  const options = parseArgs(args)
  const apply = options.booleans.has("apply")
  const system = options.booleans.has("system") || (!options.booleans.has("user") && isSystemFile(options.file))
  const timezone = options.values.get("timezone") ?? hostZone()
  const prefix = options.values.get("prefix") ?? hostname().split(".")[0]!
  const url = (options.values.get("url") ?? process.env.JOBMON_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, "")
  const runner = options.booleans.has("curl")
    ? { kind: "curl" as const, script: options.values.get("script") ?? "/usr/local/bin/jobmon-run.sh" }
    : { kind: "exec" as const, jobmon: options.values.get("jobmon") ?? path.resolve(process.argv[1] ?? "jobmon") }

  const entries: ReadonlyArray<CrontabEntry> = parseCrontab(readCrontab(options.file), { system, timezone })
  const proposals = propose(entries, prefix)
  const ids = new Map<string, string>()
  const where = options.file === undefined ? "your crontab" : options.file === "-" ? "standard input" : options.file

  err(io, `jobmon import crontab: ${where}, ${system ? "system format (a user field)" : "user format"}, jobs without CRON_TZ in ${timezone}`)
  for (const entry of entries) {
    if (entry.kind === "skipped") err(io, `line ${entry.line}: skipped: ${entry.reason}`)
  }

  if (!apply) {
    for (const p of proposals) err(io, `line ${p.job.line}: would create or update ${p.slug}: ${describe(p)}`)
    err(
      io,
      `dry run: ${proposals.length} monitor(s) proposed, nothing changed. Run again with --apply to create them; the crontab below then gets their ids in place of ${
        placeholderId("<slug>")
      }.`
    )
  } else {
    const token = options.values.get("token") ?? process.env.JOBMON_TOKEN ?? ""
    if (token === "") throw new ImportError("--apply needs a token of scope write or admin: --token or JOBMON_TOKEN", 2)
    const api = service(url, token)
    const counts = { created: 0, updated: 0, unchanged: 0 }
    for (const p of proposals) {
      const found = await api.findBySlug(p.slug)
      if (found === undefined) {
        const made = await api.create(p)
        ids.set(p.slug, made.id)
        counts.created++
        err(io, `line ${p.job.line}: created ${p.slug} (${made.id}): ${describe(p)}`)
      } else if (found.schedule.expression !== p.job.schedule.expression || found.schedule.timezone !== p.job.schedule.timezone) {
        await api.updateSchedule(found.id, p)
        ids.set(p.slug, found.id)
        counts.updated++
        err(io, `line ${p.job.line}: updated ${p.slug} (${found.id}): schedule was '${found.schedule.expression}' in ${found.schedule.timezone}, now ${describe(p)}`)
      } else {
        ids.set(p.slug, found.id)
        counts.unchanged++
        err(io, `line ${p.job.line}: unchanged ${p.slug} (${found.id})`)
      }
    }
    err(io, `applied: ${counts.created} created, ${counts.updated} updated, ${counts.unchanged} unchanged. Install the crontab below (crontab FILE, or write it to ${where}).`)
  }
  io.out(rewriteCrontab(entries, proposals, { runner, ids, url }))
  return 0
}

const err = (io: { readonly err: (line: string) => void }, line: string) => io.err(line)
