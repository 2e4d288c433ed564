import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Console, Effect, Layer, Logger, LogLevel } from "effect"
import { Accounts } from "../Auth/Accounts.js"
import { Scopes, type Scope } from "../Auth/Scopes.js"
import { Tokens } from "../Auth/Tokens.js"
import { AppConfigLive } from "../Config.js"
import { makeDatabaseLive } from "../Db/Database.js"

const usage = `jobmon — job monitoring service

Usage:
  jobmon serve                      run the service (what npm start runs)
  jobmon migrate                    apply database migrations and exit
  jobmon token create --scope <admin|write|read|ping|metrics> --name <name> [--org <slug>] [--expires <ISO date>]
                                    print a new access token
  jobmon exec --monitor <id> [--url <base>] [--token <token>] [--max-output-kb <n>] -- <command> [args…]
                                    run a job and report it: start, then success or fail with its
                                    exit code, duration and the tail of its output; exits with the
                                    job's own code (signals: 128+n; not found: 127)
  jobmon ping <monitorId> start|success|fail [--exit-code <n>] [--duration-ms <n>]
              [--output <text>|-] [--run-id <id>] [--url <base>] [--token <token>]
                                    send one ping and print its run id
  jobmon user create --email <email> --name <name> [--org <slug>] [--role <admin|member>] [--password <p>]
                                    create a dashboard user and print its id; the password comes
                                    from --password or the environment variable JOBMON_PASSWORD
  jobmon org create --slug <slug> --name <name>
                                    create an organization (the operator's command) and print its id
  jobmon org list                   list the instance's organizations: slug, members, monitors, name
  jobmon org add-member --org <slug> --email <email> [--role <admin|member>]
                                    add an existing user to one more organization
  jobmon import crontab [FILE|-] [--apply] [--url <base>] [--token <token>] [--curl]
                                    propose one monitor per crontab job and print the crontab
                                    rewritten to report through jobmon exec; --apply creates or
                                    updates the monitors (by slug), see docs/client.md
  jobmon help                       this text

Configuration comes from the environment: DATABASE_URL, DATA_DIR, HOST, PORT, PUBLIC_URL,
BOOTSTRAP_TOKEN, ALLOW_PRIVATE_TARGETS, LOG_LEVEL (see README.md). exec and ping read JOBMON_URL
(default http://127.0.0.1:8080) and JOBMON_TOKEN (a 'ping' token is enough); see docs/client.md.`

class CliError extends Error {}

const flags = (args: ReadonlyArray<string>) => {
  const out = new Map<string, string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith("--")) throw new CliError(`unexpected argument '${arg}'`)
    const eq = arg.indexOf("=")
    if (eq > 0) out.set(arg.slice(2, eq), arg.slice(eq + 1))
    else {
      const value = args[i + 1]
      if (value === undefined) throw new CliError(`${arg} needs a value`)
      out.set(arg.slice(2), value)
      i++
    }
  }
  return out
}

/** A flag that must be given: its value, or the message that says so (with an example, if any). */
const required = (f: ReadonlyMap<string, string>, name: string, example?: string): string => {
  const value = f.get(name) ?? ""
  if (value === "") throw new CliError(`--${name} is required${example === undefined ? "" : ` (for example ${example})`}`)
  return value
}

/** `--role`: admin or member. */
const roleFlag = (f: ReadonlyMap<string, string>, fallback: "admin" | "member"): "admin" | "member" => {
  const role = f.get("role") ?? fallback
  if (role !== "admin" && role !== "member") throw new CliError("--role must be admin or member")
  return role
}

/** A refusal of the service's own code, said as the command's error. */
const asCliError = <A, R>(effect: Effect.Effect<A, { readonly message: string }, R>) =>
  Effect.catchAll(effect, (error) => Effect.die(new CliError(error.message)))

// A command run beside `npm start` uses the service's embedded PostgreSQL and leaves it running.
const DbOnly = makeDatabaseLive({ whenOwned: "attach" }).pipe(Layer.provideMerge(AppConfigLive))

const tokenCreate = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const f = flags(args)
    const scope = f.get("scope") ?? ""
    if (!(Scopes as ReadonlyArray<string>).includes(scope)) throw new CliError(`--scope must be one of ${Scopes.join(", ")}`)
    const name = required(f, "name")
    const slug = f.get("org") ?? "default"
    const expires = f.get("expires")
    const expiresAt = expires === undefined ? null : new Date(expires)
    if (expiresAt !== null && Number.isNaN(expiresAt.getTime())) throw new CliError("--expires must be an ISO 8601 date")
    const sql = yield* SqlClient.SqlClient
    const orgs = yield* sql<{ id: string }>`select id from organizations where slug = ${slug}`.pipe(Effect.orDie)
    if (orgs.length === 0) throw new CliError(`no organization with slug '${slug}' (start the service once to create 'default', or jobmon org create)`)
    const owner = yield* sql<{ user_id: string }>`
      select user_id from memberships where org_id = ${orgs[0]!.id} and role = 'admin' order by created_at limit 1`.pipe(Effect.orDie)
    const tokens = yield* Tokens
    const { token } = yield* tokens.create({
      orgId: orgs[0]!.id,
      userId: owner[0]?.user_id ?? null,
      name,
      scope: scope as Scope,
      expiresAt
    }).pipe(asCliError)
    yield* Console.log(token)
  }).pipe(Effect.provide(Tokens.Default), Effect.provide(DbOnly))

const userCreate = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const f = flags(args)
    const email = required(f, "email")
    const name = required(f, "name")
    const role = roleFlag(f, "admin")
    const password = f.get("password") ?? process.env.JOBMON_PASSWORD ?? ""
    if (password === "") throw new CliError("give the password in the environment variable JOBMON_PASSWORD, or with --password")
    const slug = f.get("org") ?? "default"
    const accounts = yield* Accounts
    const orgId = yield* accounts.orgBySlug(slug)
    if (orgId === undefined) throw new CliError(`no organization with slug '${slug}' (start the service once to create 'default')`)
    const user = yield* accounts.createUser({ email, name, password, orgId, role }).pipe(asCliError)
    yield* Console.log(user.id)
  }).pipe(Effect.provide(Accounts.Default), Effect.provide(DbOnly))

const orgCreate = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const f = flags(args)
    const slug = required(f, "slug", "--slug staging")
    const name = required(f, "name")
    const accounts = yield* Accounts
    const org = yield* accounts.createOrganization({ slug, name }).pipe(asCliError)
    yield* Console.log(org.id)
  }).pipe(Effect.provide(Accounts.Default), Effect.provide(DbOnly))

const orgList = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    flags(args)
    const accounts = yield* Accounts
    const orgs = yield* accounts.listOrganizations()
    const rows = [["SLUG", "MEMBERS", "MONITORS", "NAME"], ...orgs.map((o) => [o.slug, String(o.members), String(o.monitors), o.name])]
    const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)))
    for (const row of rows) {
      yield* Console.log(row.map((cell, i) => (i < 3 ? cell.padEnd(widths[i]!) : cell)).join("  "))
    }
  }).pipe(Effect.provide(Accounts.Default), Effect.provide(DbOnly))

const orgAddMember = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const f = flags(args)
    const slug = required(f, "org")
    const email = required(f, "email")
    const role = roleFlag(f, "member")
    const accounts = yield* Accounts
    const orgId = yield* accounts.orgBySlug(slug)
    if (orgId === undefined) throw new CliError(`no organization with slug '${slug}' (jobmon org list shows them)`)
    const user = yield* accounts.addMember({ email, orgId, role }).pipe(asCliError)
    yield* Console.log(user.id)
  }).pipe(Effect.provide(Accounts.Default), Effect.provide(DbOnly))

const orgUsage = "usage: jobmon org create --slug <slug> --name <name> | jobmon org list | jobmon org add-member --org <slug> --email <email>"

export const run = (argv: ReadonlyArray<string>): Effect.Effect<void, unknown> => {
  const [command, ...rest] = argv
  switch (command) {
    case "serve":
    case undefined:
      // Loaded only to serve: the other commands start faster without the whole service.
      return Effect.flatMap(Effect.promise(() => import("../main.js")), (main) => main.serve)
    case "migrate":
      return Effect.provide(Console.log("migrations applied"), DbOnly)
    case "token":
      if (rest[0] === "create") return tokenCreate(rest.slice(1))
      return Effect.fail(new CliError("usage: jobmon token create --scope <scope> --name <name>"))
    case "user":
      if (rest[0] === "create") return userCreate(rest.slice(1))
      return Effect.fail(new CliError("usage: jobmon user create --email <email> --name <name> [--org <slug>]"))
    case "org":
      if (rest[0] === "create") return orgCreate(rest.slice(1))
      if (rest[0] === "list") return orgList(rest.slice(1))
      if (rest[0] === "add-member") return orgAddMember(rest.slice(1))
      return Effect.fail(new CliError(orgUsage))
    case "import":
      if (rest[0] === "crontab") {
        return Effect.flatMap(Effect.promise(() => import("./ImportCrontab.js")), ({ ImportError, importCrontab }) =>
          Effect.tryPromise({
            try: () => importCrontab(rest.slice(1)),
            catch: (error) => error
          }).pipe(
            Effect.flatMap((code) => Effect.sync(() => void (process.exitCode = code))),
            Effect.catchIf((e): e is InstanceType<typeof ImportError> => e instanceof ImportError, (e) =>
              Effect.sync(() => {
                console.error(`jobmon: ${e.message}`)
                process.exitCode = e.exitCode
              }))
          ))
      }
      return Effect.fail(new CliError("usage: jobmon import crontab [FILE|-] [--apply] (see jobmon help)"))
    case "help":
    case "--help":
    case "-h":
      return Console.log(usage)
    default:
      return Effect.fail(new CliError(`unknown command '${command}'\n\n${usage}`))
  }
}

const program = run(process.argv.slice(2)).pipe(
  Effect.catchIf((e): e is CliError => e instanceof CliError, (e) =>
    Effect.sync(() => {
      console.error(`jobmon: ${e.message}`)
      process.exitCode = 2
    })),
  Effect.catchAllDefect((e) =>
    e instanceof CliError
      ? Effect.sync(() => {
        console.error(`jobmon: ${e.message}`)
        process.exitCode = 2
      })
      : Effect.die(e)
  ),
  Logger.withMinimumLogLevel(process.argv[2] === "serve" || process.argv[2] === undefined ? LogLevel.Info : LogLevel.Warning)
)

NodeRuntime.runMain(program as Effect.Effect<void>)
