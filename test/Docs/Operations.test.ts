import { Effect, Exit, Scope } from "effect"
import { execFile, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { inject } from "vitest"
import { migrate } from "../../src/Db/Migrator.js"
import { makeTestDatabase } from "../support/fixture.js"

const page = fs.readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8")
const source = (file: string) => fs.readFileSync(new URL(`../../src/${file}`, import.meta.url), "utf8")

describe("docs/operations.md", () => {
  it("the configuration table names every environment variable the service reads", () => {
    const read = new Set(
      [source("Config.ts"), source("Db/Database.ts")].flatMap((text) =>
        [...text.matchAll(/Config\.\w+(?:\([^)]*\))?\("([A-Z][A-Z0-9_]+)"\)/g)].map((m) => m[1]!)
      )
    )
    // and what the command itself reads before the service starts (bin/jobmon.js)
    const bin = fs.readFileSync(new URL("../../bin/jobmon.js", import.meta.url), "utf8")
    for (const m of bin.matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)) read.add(m[1]!)
    expect(read.size).toBeGreaterThanOrEqual(15)
    const section = page.slice(page.indexOf("## Configuration"), page.indexOf("\n## ", page.indexOf("## Configuration") + 5))
    const documented = new Set([...section.matchAll(/^\| `([A-Z0-9_]+)`(?:, `([A-Z0-9_]+)`)? \|/gm)].flatMap((m) => m.slice(1).filter(Boolean)))
    expect([...read].filter((name) => !documented.has(name)), "variables read but not in the table").toEqual([])
    expect([...documented].filter((name) => !read.has(name)), "variables in the table that nothing reads").toEqual([])
  })
})

/** The major version of the machine's pg_dump, and of the test server. */
const versions = await (async () => {
  let client: number | null = null
  try {
    const out = execFileSync("pg_dump", ["--version"], { encoding: "utf8" })
    client = Number(/(\d+)\.\d+/.exec(out)?.[1])
  } catch {
    client = null
  }
  const db = new pg.Client({ connectionString: inject("adminDatabaseUrl") })
  await db.connect()
  try {
    const server = Math.floor(Number((await db.query("show server_version_num")).rows[0].server_version_num) / 10000)
    return { client, server }
  } finally {
    await db.end()
  }
})()
const canDump = versions.client !== null && versions.client >= versions.server
const skipReason = versions.client === null
  ? " (skipped: no pg_dump on this machine)"
  : canDump
  ? ""
  : ` (skipped: pg_dump ${versions.client} cannot dump a PostgreSQL ${versions.server} server)`

const run = (command: string, args: ReadonlyArray<string>) =>
  new Promise<void>((resolve, reject) =>
    execFile(command, args, { timeout: 120_000 }, (error, _stdout, stderr) =>
      error ? reject(new Error(`${command} failed: ${error.message}\n${stderr}`)) : resolve()))

describe("backups", () => {
  const scope = Effect.runSync(Scope.make())
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  it.skipIf(!canDump)(`pg_dump --format=custom, then pg_restore into a new database, gives the same data back${skipReason}`, async () => {
    const source = await Effect.runPromise(Scope.extend(makeTestDatabase("jobmon_backup"), scope))
    const target = await Effect.runPromise(Scope.extend(makeTestDatabase("jobmon_restore"), scope))
    const pool = new pg.Pool({ connectionString: source.url, max: 2 })
    try {
      await Effect.runPromise(migrate(pool, { timescaledb: "off" }))
      await pool.query(`
        insert into organizations (id, slug, name) values ('00000000-0000-4000-8000-000000000001', 'acme', 'Acme');
        insert into monitors (id, org_id, name, schedule_type, schedule_expression, sla)
          values ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'nightly backup', 'cron', '30 2 * * *',
                  '{"durationTarget":"p95","maxDurationMs":1000}');
        insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms, exit_code, output)
          select gen_random_uuid(), '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001',
                 case when g % 5 = 0 then 'FAIL' else 'SUCCESS' end,
                 now() - g * interval '1 hour', now() - g * interval '1 hour' + interval '1 second', 200 * g, g % 5, 'line ' || g
          from generate_series(1, 50) g;
        insert into incidents (org_id, monitor_id, type, severity, status, created_at, resolved_at, resolved_by_name, last_occurred_at)
          values ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', 'FAIL', 'HIGH', 'RESOLVED',
                  now() - interval '3 hours', now() - interval '1 hour', 'system', now() - interval '3 hours');`)
    } finally {
      await pool.end()
    }
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-backup-")), "jobmon.dump")
    try {
      await run("pg_dump", ["--format=custom", "--no-owner", `--file=${file}`, source.url])
      await run("pg_restore", ["--no-owner", "--exit-on-error", `--dbname=${target.url}`, file])
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true, force: true })
    }

    const snapshot = async (url: string) => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      try {
        const text = async (query: string) => JSON.stringify((await client.query(query)).rows)
        return {
          migrations: await text("select id, name from schema_migrations order by id"),
          runs: await text("select * from analyst_runs order by started_at, run_id"),
          incidents: await text("select * from analyst_incidents order by created_at"),
          monitors: await text("select * from analyst_monitors order by monitor_id"),
          rollup: await text("select count(*) as n from run_duration_dirty")
        }
      } finally {
        await client.end()
      }
    }
    const before = await snapshot(source.url)
    const after = await snapshot(target.url)
    expect(JSON.parse(after.runs)).toHaveLength(50)
    expect(after).toEqual(before)

    // The restored database is current: migrating it again applies nothing.
    const restored = new pg.Pool({ connectionString: target.url, max: 2 })
    try {
      expect(await Effect.runPromise(migrate(restored, { timescaledb: "off" }))).toEqual([])
    } finally {
      await restored.end()
    }
  })
})
