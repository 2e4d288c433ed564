import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type CrontabJob, deriveSlug, parseCrontab, propose, rewriteCrontab } from "../../src/Cli/Crontab.js"
import { call, TestApp, TestServer } from "../support/fixture.js"

/**
 * `jobmon import crontab` (docs/client.md#importing-a-crontab): a corpus of real crontab lines
 * (Debian's /etc/crontab and /etc/cron.d files, crontab(5)'s examples and odd ones), the slugs,
 * the rewrite run the way cron runs it, and the command through a real process.
 */

const root = path.resolve(import.meta.dirname, "../..")
const corpus = (name: string) => readFileSync(path.join(import.meta.dirname, "crontabs", name), "utf8")
const jobsOf = (text: string, system: boolean, timezone = "UTC") =>
  parseCrontab(text, { system, timezone }).filter((e): e is CrontabJob => e.kind === "job")
const skippedOf = (text: string, system: boolean) =>
  parseCrontab(text, { system, timezone: "UTC" }).flatMap((e) => (e.kind === "skipped" ? [[e.line, e.reason] as const] : []))

describe("crontab parsing", () => {
  it("Debian's /etc/crontab: four jobs with their user, tabs and all", () => {
    const jobs = jobsOf(corpus("debian-crontab"), true, "Europe/Berlin")
    expect(jobs.map((j) => [j.line, j.schedule.expression, j.schedule.timezone, j.user, j.command])).toEqual([
      [19, "17 * * * *", "Europe/Berlin", "root", "cd / && run-parts --report /etc/cron.hourly"],
      [20, "25 6 * * *", "Europe/Berlin", "root", "test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }"],
      [21, "47 6 * * 7", "Europe/Berlin", "root", "test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.weekly; }"],
      [22, "52 6 1 * *", "Europe/Berlin", "root", "test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.monthly; }"]
    ])
    // The commented-out PATH and the "# *  *  *  *  * user-name command" template are comments, not jobs.
    expect(skippedOf(corpus("debian-crontab"), true)).toEqual([])
  })

  it("Debian's /etc/cron.d lines: lists, ranges, steps, \\% kept from the shell, a user field", () => {
    const jobs = jobsOf(corpus("debian-cron.d"), true)
    expect(jobs.map((j) => j.schedule.expression)).toEqual([
      "30 3 * * 0", "10 3 * * *", "09,39 * * * *", "5-55/10 * * * *", "59 23 * * *", "0 */12 * * *", "30 7-23 * * *", "57 0 * * 0", "53 11 * * *"
    ])
    expect(new Set(jobs.map((j) => j.user))).toEqual(new Set(["root"]))
    const mdadm = jobs.find((j) => j.command.includes("checkarray"))!
    expect(mdadm.command).toBe(
      "if [ -x /usr/share/mdadm/checkarray ] && [ $(date +%d) -le 7 ]; then /usr/share/mdadm/checkarray --cron --all --idle --quiet; fi"
    )
    expect(mdadm.stdinRaw).toBeNull()
    expect(jobs.find((j) => j.command.includes("certbot"))!.command).toContain("perl -e 'sleep int(rand(43200))'")
    // Read as a user crontab, the user would be part of the command: the format matters.
    expect(jobsOf(corpus("debian-cron.d"), false)[0]!.command).toMatch(/^root test -e/)
  })

  it("a user crontab: CRON_TZ, SHELL, quoted values, every macro, % as standard input, odd spacing; what is skipped and why", () => {
    const text = corpus("user-crontab")
    const entries = parseCrontab(text, { system: false, timezone: "America/Chicago" })
    expect(entries.find((e) => e.kind === "env" && e.name === "MAILTO")).toMatchObject({ value: "ops@example.com" })
    const jobs = entries.filter((e): e is CrontabJob => e.kind === "job")
    const byLine = new Map(jobs.map((j) => [j.line, j]))
    // CRON_TZ applies to the jobs below it, until an empty CRON_TZ= gives the host's zone back.
    expect([5, 6, 7, 8, 9].map((l) => byLine.get(l)!.schedule.timezone)).toEqual(["Japan", "Japan", "Japan", "Japan", "Japan"])
    expect(byLine.get(12)!.schedule.timezone).toBe("America/Chicago")
    expect(byLine.get(29)!.schedule.timezone).toBe("Europe/Paris")
    expect(byLine.get(5)!.shell).toBe("/bin/bash")
    // % ends the command; the rest is its standard input.
    expect(byLine.get(7)).toMatchObject({ command: "mail -s \"It's 10pm\" joe", stdinRaw: "Joe,%%Where are your kids?%" })
    expect(byLine.get(29)).toMatchObject({ command: "date +%F > /tmp/date.txt", stdinRaw: null })
    // Every macro but @reboot is a schedule.
    expect([12, 13, 14, 15, 16, 17, 18].map((l) => byLine.get(l)!.schedule.expression)).toEqual([
      "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually", "@midnight"
    ])
    // Leading blanks, tabs, names and several spaces; cronie's "-" (no syslog) prefix.
    expect(byLine.get(20)).toMatchObject({ schedule: { expression: "*/15 9-17 * jan-jun,dec MON-FRI" }, command: "/usr/local/bin/sync   --quiet" })
    expect(byLine.get(21)).toMatchObject({ schedule: { expression: "*/5 * * * *" }, command: "/usr/local/bin/quiet-job" })
    expect(byLine.get(32)!.command).toBe("/usr/local/bin/windows-line-ending")

    const skipped = new Map(skippedOf(text, false))
    expect([...skipped.keys()]).toEqual([11, 19, 24, 25, 27, 30, 31])
    expect(skipped.get(11)).toMatch(/@reboot runs once when cron starts .* no time to expect it at/)
    expect(skipped.get(19)).toMatch(/does not know the macro @every/)
    expect(skipped.get(24)).toMatch(/sixth time field/)
    expect(skipped.get(25)).toMatch(/needs 5 time fields/)
    expect(skipped.get(27)).toMatch(/CRON_TZ=Mars\/Olympus .* not a time zone/)
    expect(skipped.get(30)).toMatch(/'61 \* \* \* \*' is not one jobmon accepts: .*minute: 61/)
    expect(skipped.get(31)).toMatch(/already reports to jobmon/)
  })
})

describe("slugs", () => {
  const job = (command: string, extra: Partial<CrontabJob> = {}) => ({ user: null, command, stdinRaw: null, ...extra })

  it.prop(
    "are deterministic, well-formed and depend on the job (user, command, input), not on its schedule or place",
    [FastCheck.string({ minLength: 1, maxLength: 300 }), FastCheck.string({ maxLength: 30 })],
    ([command, prefix]) => {
      const slug = deriveSlug(job(command), prefix)
      expect(slug).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/)
      expect(slug.length).toBeLessThanOrEqual(70)
      expect(deriveSlug(job(command), prefix)).toBe(slug)
      expect(deriveSlug(job(command, { user: "www-data" }), prefix)).not.toBe(slug)
      expect(deriveSlug(job(command, { stdinRaw: "input" }), prefix)).not.toBe(slug)
      expect(deriveSlug(job(`${command} --other`), prefix)).not.toBe(slug)
    }
  )

  it("stay the same when the schedule changes or lines move; identical jobs get -2, -3 in file order", () => {
    const before = "0 3 * * * /usr/local/bin/backup.sh\n0 4 * * * /usr/local/bin/backup.sh\n@daily /usr/local/bin/report\n"
    const after = "# moved and rescheduled\n@daily /usr/local/bin/report\n30 3 * * * /usr/local/bin/backup.sh\n0 4 * * *  /usr/local/bin/backup.sh\n"
    const slugs = (text: string) => propose(parseCrontab(text, { system: false, timezone: "UTC" }), "db1").map((p) => p.slug)
    expect(slugs(before)).toEqual([
      "db1-usr-local-bin-backup-sh-" + deriveSlug(job("/usr/local/bin/backup.sh"), "").slice(-8),
      "db1-usr-local-bin-backup-sh-" + deriveSlug(job("/usr/local/bin/backup.sh"), "").slice(-8) + "-2",
      expect.stringMatching(/^db1-usr-local-bin-report-[0-9a-f]{8}$/)
    ])
    expect(new Set(slugs(after))).toEqual(new Set(slugs(before)))
    expect(slugs(before)).toEqual(slugs(before))
    // A long command: a readable head cut at a word, the hash keeps it apart from its neighbours.
    const long = `/opt/app/bin/${"very-long-name-".repeat(10)}job --flag`
    expect(deriveSlug(job(long), "h")).toMatch(/^h-opt-app-bin-very-long-name(-very-long(-name)?)*-[0-9a-f]{8}$/)
  })
})

/** What cron does with a line's command: split at the first unescaped %, run with /bin/sh (cronie's loop). */
const runLikeCron = (commandPart: string, env: Record<string, string>) => {
  let command = ""
  let stdin: string | null = null
  let escaped = false
  for (let i = 0; i < commandPart.length; i++) {
    const ch = commandPart[i]!
    if (stdin !== null) {
      stdin += ch === "%" ? "\n" : ch
      continue
    }
    if (escaped) {
      command += ch === "%" ? "%" : `\\${ch}`
      escaped = false
    } else if (ch === "\\") escaped = true
    else if (ch === "%") stdin = ""
    else command += ch
  }
  if (escaped) command += "\\"
  const result = spawnSync("/bin/sh", ["-c", command], { input: stdin ?? "", encoding: "utf8", env: { PATH: process.env.PATH!, ...env } })
  return { stdout: result.stdout, code: result.status }
}

describe("the rewrite", () => {
  it("runs each job exactly as before, through jobmon exec with its monitor's id; every other line is kept", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "jobmon-crontab-"))
    try {
      // A stand-in for `jobmon exec`: records the monitor id and runs what follows `--`.
      const stub = path.join(dir, "jobmon")
      writeFileSync(stub, "#!/bin/sh\n[ \"$1\" = exec ] && [ \"$2\" = --monitor ] && [ \"$4\" = -- ] || exit 99\necho \"$3\" >> \"$STUB_LOG\"\nshift 4\nexec \"$@\"\n")
      chmodSync(stub, 0o755)
      const crontab = [
        "# jobs that print",
        "SHELL=/bin/sh",
        "MAILTO=\"\"",
        "0 1 * * * echo \"it's $((6 * 7))\" \\% done | tr a-z A-Z",
        "0 2 * * *\tcat -n%first line%second 'line'",
        "@daily  printf '\\%s|' a 'b c'; exit 3",
        "0 3 * * * echo out; echo err >&2; test -n \"$HOME\" && echo home",
        "@reboot echo boot"
      ].join("\n") + "\n"
      const entries = parseCrontab(crontab, { system: false, timezone: "UTC" })
      const proposals = propose(entries, "t")
      expect(proposals).toHaveLength(4)
      const ids = new Map(proposals.map((p, i) => [p.slug, `id-${i}`]))
      const rewritten = rewriteCrontab(entries, proposals, { runner: { kind: "exec", jobmon: stub }, ids, url: "http://jobmon.test:8080" })
      const lines = rewritten.split("\n")
      expect(lines.slice(0, 3)).toEqual([
        "# Rewritten by `jobmon import crontab`: each job reports its runs to jobmon (docs/client.md).",
        "JOBMON_URL=http://jobmon.test:8080",
        "# JOBMON_TOKEN=<a token of scope ping: jobmon token create --scope ping --name cron>"
      ])
      expect(lines.slice(3)).toContain("@reboot echo boot")
      expect(lines.slice(3, 6)).toEqual(["# jobs that print", "SHELL=/bin/sh", "MAILTO=\"\""])
      expect(lines[7]).toBe(`0 2 * * *\t${stub} exec --monitor id-1 -- /bin/sh -c 'cat -n'%first line%second 'line'`)

      const original = crontab.split("\n")
      for (const [i, proposal] of proposals.entries()) {
        const log = path.join(dir, `log-${i}`)
        const before = runLikeCron(proposal.job.text.slice(proposal.job.head.length), { STUB_LOG: log, HOME: dir })
        const after = runLikeCron(lines[3 + proposal.job.line - 1]!.slice(proposal.job.head.length), { STUB_LOG: log, HOME: dir })
        expect(after, original[proposal.job.line - 1]).toEqual(before)
        expect(readFileSync(log, "utf8")).toBe(`id-${i}\n`)
      }
      expect(runLikeCron(proposals[0]!.job.text.slice(proposals[0]!.job.head.length), {}).stdout).toBe("IT'S 42 % DONE\n")
      expect(runLikeCron(proposals[1]!.job.text.slice(proposals[1]!.job.head.length), {}).stdout).toMatch(/1\tfirst line\n\s+2\tsecond 'line'/)

      // Importing the rewritten crontab again proposes nothing: its jobs already report.
      const again = parseCrontab(rewritten, { system: false, timezone: "UTC" })
      expect(propose(again, "t")).toEqual([])
      expect(rewriteCrontab(again, [], { runner: { kind: "exec", jobmon: stub }, ids, url: "x" })).toBe(rewritten)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("--curl writes the curl-only script in place of jobmon exec, keeping the user field", () => {
    const entries = parseCrontab("17 *\t* * *\troot\tcd / && run-parts --report /etc/cron.hourly\n", { system: true, timezone: "UTC" })
    const proposals = propose(entries, "")
    const text = rewriteCrontab(entries, proposals, {
      runner: { kind: "curl", script: "/usr/local/bin/jobmon-run.sh" },
      ids: new Map([[proposals[0]!.slug, "5f0c"]]),
      url: "https://jobmon.example.com"
    })
    expect(text.split("\n")[3]).toBe("17 *\t* * *\troot\t/usr/local/bin/jobmon-run.sh 5f0c /bin/sh -c 'cd / && run-parts --report /etc/cron.hourly'")
  })
})

/** `jobmon import crontab …` as a real process, standard input given. */
const jobmon = (args: ReadonlyArray<string>, input: string, env: Record<string, string> = {}) =>
  Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const child = spawn(process.execPath, [path.join(root, "bin/jobmon.js"), ...args], {
      cwd: root,
      env: { ...process.env, JOBMON_TOKEN: "", LOG_LEVEL: "warn", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d) => (stdout += d))
    child.stderr!.on("data", (d) => (stderr += d))
    child.stdin!.end(input)
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout, stderr }))
    })
  })

const SMALL = "CRON_TZ=Europe/London\n0 3 * * * /usr/local/bin/backup.sh\n@reboot /usr/local/bin/warm\n*/10 * * * * /usr/local/bin/poll % x\n"

describe("jobmon import crontab (a real process)", () => {
  it.effect("a dry run prints the plan on stderr and the rewritten crontab on stdout, changes nothing, needs no service", () =>
    Effect.gen(function*() {
      const args = ["import", "crontab", "-", "--prefix", "web1", "--jobmon", "/usr/bin/jobmon", "--url", "http://127.0.0.1:9"]
      const result = yield* jobmon(args, SMALL)
      expect(result.code).toBe(0)
      expect(result.stderr).toMatch(/line 3: skipped: @reboot/)
      expect(result.stderr).toMatch(/line 2: would create or update web1-usr-local-bin-backup-sh-[0-9a-f]{8}: '0 3 \* \* \*' in Europe\/London/)
      expect(result.stderr).toMatch(/dry run: 2 monitor\(s\) proposed, nothing changed/)
      const out = result.stdout.split("\n")
      expect(out[1]).toBe("JOBMON_URL=http://127.0.0.1:9")
      expect(out[4]).toMatch(/^0 3 \* \* \* \/usr\/bin\/jobmon exec --monitor ID-OF-web1-usr-local-bin-backup-sh-[0-9a-f]{8} -- \/bin\/sh -c \/usr\/local\/bin\/backup.sh$/)
      expect(out[6]).toMatch(/^\*\/10 \* \* \* \* \/usr\/bin\/jobmon exec --monitor ID-OF-web1-usr-local-bin-poll-[0-9a-f]{8} -- \/bin\/sh -c \/usr\/local\/bin\/poll% x$/)
      // Twice the same: the slugs are stable across runs.
      expect((yield* jobmon(args, SMALL)).stdout).toBe(result.stdout)
    }), 120_000)

  it.effect("usage errors exit with code 2", () =>
    Effect.gen(function*() {
      const unknown = yield* jobmon(["import", "crontab", "--frobnicate"], "")
      expect(unknown.code).toBe(2)
      expect(unknown.stderr).toMatch(/unknown option --frobnicate/)
      const missing = yield* jobmon(["import", "crontab", "/nonexistent/crontab"], "")
      expect(missing.code).toBe(2)
      expect(missing.stderr).toMatch(/cannot read \/nonexistent\/crontab/)
      const noToken = yield* jobmon(["import", "crontab", "-", "--apply"], SMALL)
      expect(noToken.code).toBe(2)
      expect(noToken.stderr).toMatch(/--apply needs a token of scope write or admin/)
    }), 120_000)
})

layer(TestServer(), { excludeTestServices: true, timeout: 240_000 })("jobmon import crontab --apply", (it) => {
  const apply = (input: string) =>
    Effect.flatMap(TestApp, (app) =>
      jobmon(["import", "crontab", "-", "--apply", "--prefix", "web1", "--url", app.baseUrl, "--timezone", "UTC"], input, {
        JOBMON_TOKEN: app.adminToken
      }))
  const monitors = Effect.map(call("GET", "/api/monitors?limit=100"), (r) => r.body.monitors as Array<any>)

  it.effect("creates one monitor per job, then changes nothing; a changed schedule is an update of the same monitor", () =>
    Effect.gen(function*() {
      const first = yield* apply(SMALL)
      expect(first.stderr).toMatch(/applied: 2 created, 0 updated, 0 unchanged/)
      expect(first.code).toBe(0)
      const made = yield* monitors
      expect(made.map((m) => [m.name, m.schedule.expression, m.schedule.timezone]).sort()).toEqual([
        ["/usr/local/bin/backup.sh", "0 3 * * *", "Europe/London"],
        ["/usr/local/bin/poll", "*/10 * * * *", "Europe/London"]
      ])
      for (const m of made) expect(first.stdout).toContain(`exec --monitor ${m.id} --`)

      const second = yield* apply(SMALL)
      expect(second.stderr).toMatch(/applied: 0 created, 0 updated, 2 unchanged/)
      expect(second.stdout).toBe(first.stdout)
      expect(yield* monitors).toEqual(made)

      const third = yield* apply(SMALL.replace("0 3 * * *", "30 4 * * *"))
      expect(third.stderr).toMatch(/applied: 0 created, 1 updated, 1 unchanged/)
      const after = yield* monitors
      expect(after.map((m) => m.id).sort()).toEqual(made.map((m) => m.id).sort())
      expect(after.find((m) => m.name === "/usr/local/bin/backup.sh").schedule.expression).toBe("30 4 * * *")
    }), 240_000)
})
