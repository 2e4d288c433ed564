import { createHash } from "node:crypto"
import { Either } from "effect"
import { validateSchedule } from "../Monitors/Schedule.js"

/**
 * `jobmon import crontab` (docs/client.md#importing-a-crontab): a crontab read line by line as
 * cron itself reads it, one proposed monitor per scheduled job, and the crontab rewritten so that
 * each job reports through `jobmon exec` (or the curl-only script). Pure: no I/O here.
 *
 * What cron does and this follows (Vixie cron, cronie, Debian's cron):
 * - blank lines and lines whose first non-blank character is `#` are comments; a `#` later in a
 *   line belongs to the command;
 * - `NAME = value` sets an environment variable (quotes around the value are removed);
 *   `CRON_TZ=<zone>` makes the following jobs' schedules read in that zone (cronie), `SHELL=` is
 *   the shell that runs the commands;
 * - a job is 5 time fields (numbers, ranges, steps, lists, names) or a macro (`@daily` …),
 *   separated by spaces or tabs, then — in the system crontab and /etc/cron.d — the user, then the
 *   command; cronie's leading `-` (no syslog) is accepted;
 * - in the command, the first `%` not escaped as `\%` ends the command: the rest is its standard
 *   input, each further `%` a newline.
 */

export type CrontabEntry =
  | { readonly kind: "blank" | "comment"; readonly line: number; readonly text: string }
  | { readonly kind: "env"; readonly line: number; readonly text: string; readonly name: string; readonly value: string }
  | { readonly kind: "skipped"; readonly line: number; readonly text: string; readonly reason: string }
  | CrontabJob

export interface CrontabJob {
  readonly kind: "job"
  readonly line: number
  readonly text: string
  /** The schedule as the service stores it (whitespace collapsed, macros lower-cased) and its zone. */
  readonly schedule: { readonly type: "cron"; readonly expression: string; readonly timezone: string }
  /** The user field of a system crontab. */
  readonly user: string | null
  /** The command as the shell sees it: before the first unescaped `%`, `\%` unescaped, trimmed. */
  readonly command: string
  /** The command part exactly as written (escapes kept), for the rewrite. */
  readonly commandRaw: string
  /** What follows the first unescaped `%` (the command's standard input), as written; null if none. */
  readonly stdinRaw: string | null
  /** The line up to the command: the schedule, the user and the spacing, as written. */
  readonly head: string
  /** The shell that runs it (the last SHELL= above it, else /bin/sh). */
  readonly shell: string
}

export interface ParseOptions {
  /** The system crontab format: a user field between the schedule and the command. */
  readonly system: boolean
  /** The zone of jobs not under a CRON_TZ= line: the host's. */
  readonly timezone: string
}

const MACROS = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"]
const ENV_LINE = /^[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(.*?)[ \t]*$/
const FIELD = /^([^ \t]+)[ \t]+/

/** Already rewritten: the command is `… jobmon exec --monitor …` or the curl script. */
const REPORTING = /(^|[\/\s])jobmon(\.js)?\s+exec\s|jobmon-run\.sh\s/

const unquote = (value: string) =>
  value.length >= 2 && (value[0] === "'" || value[0] === "\"") && value[value.length - 1] === value[0]
    ? value.slice(1, -1)
    : value

/** The command part and the standard input part, split at the first `%` not escaped as `\%`. */
export const splitPercent = (raw: string): { commandRaw: string; stdinRaw: string | null } => {
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === "\\") {
      i++ // cron: a backslash escapes the next character (only `\%` loses its backslash)
      continue
    }
    if (raw[i] === "%") return { commandRaw: raw.slice(0, i), stdinRaw: raw.slice(i + 1) }
  }
  return { commandRaw: raw, stdinRaw: null }
}

const isTimeZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone })
    return zone !== ""
  } catch {
    return false
  }
}

/** Every line of a crontab, classified; jobs carry their schedule, zone and command. */
export const parseCrontab = (text: string, options: ParseOptions): ReadonlyArray<CrontabEntry> => {
  const entries: Array<CrontabEntry> = []
  let zone = options.timezone
  let zoneProblem: string | null = null
  let shell = "/bin/sh"
  const lines = text.split("\n")
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop()
  lines.forEach((rawLine, index) => {
    const line = index + 1
    const text = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine
    const trimmed = text.trim()
    if (trimmed === "") return void entries.push({ kind: "blank", line, text })
    if (trimmed.startsWith("#")) return void entries.push({ kind: "comment", line, text })
    const env = ENV_LINE.exec(text)
    if (env !== null) {
      const name = env[1]!
      const value = unquote(env[2]!)
      if (name === "CRON_TZ") {
        zone = value === "" ? options.timezone : value
        zoneProblem = value === "" || isTimeZone(value) ? null : value
      }
      if (name === "SHELL" && value !== "") shell = value
      return void entries.push({ kind: "env", line, text, name, value })
    }
    const skip = (reason: string) => void entries.push({ kind: "skipped", line, text, reason })

    // The schedule: a macro, or five fields; then the user field of a system crontab.
    let rest = text.replace(/^[ \t]+/, "")
    if (rest.startsWith("-")) rest = rest.slice(1) // cronie: do not log this job to syslog
    let expression: string
    if (rest.startsWith("@")) {
      const macro = /^@[^ \t]*/.exec(rest)![0]
      if (macro === "@reboot") {
        return skip(
          "@reboot runs once when cron starts (at boot), not on a schedule: there is no time to expect it at, so no monitor is proposed (report it with `jobmon ping` if its outcome matters)"
        )
      }
      if (!MACROS.includes(macro)) {
        return skip(`cron does not know the macro ${macro} (it knows @reboot, ${MACROS.join(", ")})`)
      }
      const taken = FIELD.exec(rest)
      if (taken === null) return skip("a schedule without a command")
      expression = macro
      rest = rest.slice(taken[0].length)
    } else {
      const fields: Array<string> = []
      for (let i = 0; i < 5; i++) {
        const taken = FIELD.exec(rest)
        if (taken === null) return skip("not a cron line: it needs 5 time fields (or a macro such as @daily) and a command")
        fields.push(taken[1]!)
        rest = rest.slice(taken[0].length)
      }
      expression = fields.join(" ")
    }
    let user: string | null = null
    if (options.system) {
      const taken = FIELD.exec(rest)
      if (taken === null) return skip("a system crontab line needs a user between the schedule and the command")
      user = taken[1]!
      rest = rest.slice(taken[0].length)
    }
    const head = text.slice(0, text.length - rest.length)
    const { commandRaw, stdinRaw } = splitPercent(rest)
    const command = commandRaw.replace(/\\%/g, "%").trim()
    if (command === "") return skip("the line has a schedule but no command")
    if (REPORTING.test(command)) return skip("the job already reports to jobmon")
    if (command.startsWith("*")) {
      return skip(`the command would start with '${command.split(/\s/)[0]}': a sixth time field (seconds or years)? cron reads 5, so it would run that as the command`)
    }
    if (zoneProblem !== null) return skip(`CRON_TZ=${zoneProblem} above it is not a time zone cron knows (an IANA name such as Europe/Paris)`)
    const checked = validateSchedule({ type: "cron", expression, timezone: zone })
    if (Either.isLeft(checked)) return skip(`the schedule '${expression}' is not one jobmon accepts: ${checked.left.message}`)
    entries.push({
      kind: "job",
      line,
      text,
      schedule: { type: "cron", expression: checked.right.expression, timezone: checked.right.timezone },
      user,
      command,
      commandRaw,
      stdinRaw,
      head,
      shell
    })
  })
  return entries
}

export interface Proposal {
  readonly job: CrontabJob
  readonly slug: string
  readonly name: string
}

/** Lower-case letters and digits joined by single hyphens. */
export const slugify = (text: string) =>
  text.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "")

const READABLE_LENGTH = 40
const PREFIX_LENGTH = 20
const NAME_LENGTH = 200

/** At most `max` characters, cut at a hyphen when there is one. */
const cut = (slug: string, max: number) => {
  if (slug.length <= max) return slug
  const head = slug.slice(0, max)
  const hyphen = head.lastIndexOf("-")
  return (hyphen > max / 2 ? head.slice(0, hyphen) : head).replace(/-+$/, "")
}

/**
 * A job's slug: the prefix (the host, by default), a readable part of the command, and 8 hex
 * digits of the SHA-256 of what makes the job itself — its user, command (spaces collapsed) and
 * standard input. The same job gets the same slug on every run wherever it sits in the file, and
 * a changed schedule keeps it (an update, not a new monitor). Identical jobs in one crontab get
 * `-2`, `-3` … in the order they appear.
 */
export const deriveSlug = (job: Pick<CrontabJob, "user" | "command" | "stdinRaw">, prefix: string) => {
  const identity = [job.user ?? "", job.command.replace(/\s+/g, " "), job.stdinRaw ?? ""].join("\n")
  const hash = createHash("sha256").update(identity, "utf8").digest("hex").slice(0, 8)
  const readable = cut(slugify(job.command), READABLE_LENGTH)
  return [cut(slugify(prefix), PREFIX_LENGTH), readable, hash].filter((part) => part !== "").join("-")
}

/** One monitor per job, with a slug unique within the crontab. */
export const propose = (entries: ReadonlyArray<CrontabEntry>, prefix: string): ReadonlyArray<Proposal> => {
  const seen = new Map<string, number>()
  const proposals: Array<Proposal> = []
  for (const entry of entries) {
    if (entry.kind !== "job") continue
    const base = deriveSlug(entry, prefix)
    const count = (seen.get(base) ?? 0) + 1
    seen.set(base, count)
    const name0 = (entry.user !== null && entry.user !== "root" ? `${entry.user}: ` : "") + entry.command.replace(/\s+/g, " ")
    const name = name0.length <= NAME_LENGTH ? name0 : `${name0.slice(0, NAME_LENGTH - 1)}…`
    proposals.push({ job: entry, slug: count === 1 ? base : `${base}-${count}`, name })
  }
  return proposals
}

/** `value` as one word for sh: single-quoted, a `'` inside written `'\''`. */
export const shellQuote = (value: string) => /^[A-Za-z0-9_\/.,:=@+-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`

export interface RewriteOptions {
  /** `exec`: `<jobmon> exec --monitor <id> -- <shell> -c '<command>'`; `curl`: `<script> <id> <shell> -c '<command>'`. */
  readonly runner: { readonly kind: "exec"; readonly jobmon: string } | { readonly kind: "curl"; readonly script: string }
  /** The monitor id of each proposal's slug; a missing one is written as ID-OF-<slug> (a dry run). */
  readonly ids: ReadonlyMap<string, string>
  /** JOBMON_URL for the jobs, added at the top unless the crontab sets it. */
  readonly url: string
}

/** The id written for a monitor not created yet (a dry run): a job run with it still runs. */
export const placeholderId = (slug: string) => `ID-OF-${slug}`

/**
 * The crontab with each proposed job wrapped so that it reports to jobmon: its schedule, user and
 * standard input (`%…`) unchanged, the command run by the same shell. Every other line is kept as
 * it was. cron reads `%` before the shell does, so the command keeps its `\%` escapes verbatim.
 */
export const rewriteCrontab = (
  entries: ReadonlyArray<CrontabEntry>,
  proposals: ReadonlyArray<Proposal>,
  options: RewriteOptions
): string => {
  const byLine = new Map(proposals.map((p) => [p.job.line, p]))
  const setsUrl = entries.some((e) => e.kind === "env" && e.name === "JOBMON_URL")
  const setsToken = entries.some((e) => e.kind === "env" && e.name === "JOBMON_TOKEN")
  const out: Array<string> = []
  if (proposals.length > 0) {
    out.push("# Rewritten by `jobmon import crontab`: each job reports its runs to jobmon (docs/client.md).")
    if (!setsUrl) out.push(`JOBMON_URL=${options.url}`)
    if (!setsToken) out.push("# JOBMON_TOKEN=<a token of scope ping: jobmon token create --scope ping --name cron>")
  }
  for (const entry of entries) {
    const proposal = byLine.get(entry.line)
    if (entry.kind !== "job" || proposal === undefined) {
      out.push(entry.text)
      continue
    }
    const id = options.ids.get(proposal.slug) ?? placeholderId(proposal.slug)
    const runner = options.runner.kind === "exec"
      ? `${shellQuote(options.runner.jobmon)} exec --monitor ${shellQuote(id)} --`
      : `${shellQuote(options.runner.script)} ${shellQuote(id)}`
    const command = entry.commandRaw.replace(/[ \t]+$/, "")
    out.push(
      `${entry.head}${runner} ${shellQuote(entry.shell)} -c ${shellQuote(command)}${entry.stdinRaw === null ? "" : `%${entry.stdinRaw}`}`
    )
  }
  return out.join("\n") + "\n"
}
