import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { parse } from "yaml"

/**
 * docker-compose.yml, .env.example and the Dockerfile, checked without a docker engine (there is
 * none on the test machine): their structure, and that the runtime image has what the service needs.
 */

const root = new URL("../../", import.meta.url)
const read = (file: string) => fs.readFileSync(new URL(file, root), "utf8")
const compose = parse(read("docker-compose.yml"))
const envExample = read(".env.example")
const dockerfile = read("Dockerfile")

const composePlugin = (() => {
  try {
    execFileSync("docker", ["compose", "version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

const haproxyBinary = (() => {
  try {
    execFileSync("haproxy", ["-v"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

/** The Dockerfile's stages: name and instructions (continuation lines joined). */
const stages = dockerfile
  .replace(/\\\n\s*/g, " ")
  .split("\n")
  .filter((line) => line.trim() !== "" && !line.trim().startsWith("#"))
  .reduce<Array<{ name: string; lines: Array<string> }>>((acc, line) => {
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(line)
    if (from) acc.push({ name: from[1] ?? `stage${acc.length}`, lines: [line] })
    else acc[acc.length - 1]!.lines.push(line)
    return acc
  }, [])

const atLeast = (version: string, minimum: string) => {
  const a = version.split(".").map(Number)
  const b = minimum.split(".").map(Number)
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0)
  return true
}

describe("docker-compose.yml", () => {
  it("runs the service beside TimescaleDB >= 2.29.1 on PostgreSQL 17, with a named volume and health checks for both", () => {
    const { db, jobmon } = compose.services
    const image = /^timescale\/timescaledb:(\d+\.\d+\.\d+)-pg17$/.exec(db.image)
    expect(image, `db image ${db.image}`).not.toBeNull()
    expect(atLeast(image![1]!, "2.29.1")).toBe(true)
    expect(db.volumes).toContain("jobmon-db:/var/lib/postgresql/data")
    expect(Object.keys(compose.volumes)).toContain("jobmon-db")
    for (const service of [db, jobmon]) {
      expect(Array.isArray(service.healthcheck?.test) && service.healthcheck.test.length > 1).toBe(true)
    }
    expect(jobmon.healthcheck.test.join(" ")).toContain("/healthz")
    expect(jobmon.build).toBe(".")
    expect(jobmon.depends_on).toEqual({ db: { condition: "service_healthy" } })
    expect(jobmon.environment.DATABASE_URL).toMatch(/^postgres:\/\/jobmon:.*@db:5432\/jobmon$/)
    expect(jobmon.environment.HOST).toBe("0.0.0.0")
  })

  it("takes BOOTSTRAP_TOKEN (required) and PUBLIC_URL from .env; .env.example lists every variable it uses", () => {
    const { environment } = compose.services.jobmon
    expect(environment.BOOTSTRAP_TOKEN).toMatch(/^\$\{BOOTSTRAP_TOKEN:\?/)
    expect(environment.PUBLIC_URL).toMatch(/^\$\{PUBLIC_URL[:}]/)
    // `$${…}` is compose's escape for a `${…}` left to the container's shell, not a variable of .env.
    const used = new Set([...read("docker-compose.yml").matchAll(/(?<!\$)\$\{([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]!))
    expect([...used].sort()).toEqual(expect.arrayContaining(["BOOTSTRAP_TOKEN", "PUBLIC_URL"]))
    const listed = new Set([...envExample.matchAll(/^#?\s*([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1]!))
    expect([...used].filter((name) => !listed.has(name))).toEqual([])
    expect(envExample).toMatch(/^BOOTSTRAP_TOKEN=/m)
    expect(envExample).toMatch(/^PUBLIC_URL=/m)
  })

  it("scales: `docker compose up --scale jobmon=3` runs replicas in cluster mode behind the `lb` service, which alone publishes the port", () => {
    const { jobmon, lb } = compose.services
    // Nothing fixed per container: a container_name or a published host port would make a second replica fail.
    expect(jobmon.container_name).toBeUndefined()
    expect(jobmon.ports).toBeUndefined()
    expect(Number(jobmon.environment.CLUSTER_PORT)).toBeGreaterThan(0)
    expect(Number(jobmon.environment.CLUSTER_PORT)).not.toBe(Number(jobmon.environment.PORT))
    // Every request arrives through lb, which appends the client to X-Forwarded-For.
    expect(Number(jobmon.environment.TRUST_PROXY)).toBe(1)
    expect(lb.ports).toEqual(["${JOBMON_PORT:-8080}:8080"])
    expect(lb.image, "an official image, pinned to a release").toMatch(/^haproxy:\d+\.\d+\.\d+(-alpine)?$/)
    expect(lb.container_name).toBeUndefined()
    const mount = (lb.volumes as Array<string>).find((v) => v.endsWith(":/usr/local/etc/haproxy/haproxy.cfg:ro"))
    expect(mount).toBeDefined()
    const haproxy = read(mount!.split(":")[0]!.replace(/^\.\//, ""))
    // Finds the replicas through Docker's DNS as they come and go, health-checks them, and
    // passes the client's address on.
    expect(haproxy).toMatch(/^\s*nameserver \S+ 127\.0\.0\.11:53$/m)
    expect(haproxy).toMatch(/^\s*server-template \S+ \d+ jobmon:8080$/m)
    expect(haproxy).toMatch(/^\s*default-server .*\bcheck\b.*\bresolvers docker\b/m)
    expect(haproxy).toMatch(/^\s*option httpchk GET \/healthz$/m)
    expect(haproxy).toMatch(/^\s*option forwardfor$/m)
    expect(haproxy).toMatch(/^\s*bind :8080$/m)
  })

  it("each replica advertises its own address as CLUSTER_HOST (`hostname -i`), unless one is given, and runs the image's command", () => {
    const { command } = compose.services.jobmon
    expect(command.slice(0, 2)).toEqual(["sh", "-c"])
    // What the container's shell receives: compose turns `$$` into `$`.
    const script = (command[2] as string).replace(/\$\$/g, "$")
    expect(script).toMatch(/&& exec node bin\/jobmon\.js serve$/)
    const advertised = (env: Record<string, string>) =>
      execFileSync("sh", ["-c", script.replace(/exec node bin\/jobmon\.js serve$/, "printf %s \"$CLUSTER_HOST\"")], {
        env: { PATH: process.env.PATH!, ...env },
        encoding: "utf8"
      })
    expect(advertised({ CLUSTER_HOST: "10.9.8.7" })).toBe("10.9.8.7")
    const own = (() => {
      try {
        return execFileSync("hostname", ["-i"], { encoding: "utf8" }).trim().split(" ")[0]!
      } catch {
        return undefined
      }
    })()
    if (own !== undefined && own !== "") expect(advertised({})).toBe(own)
  })

  it.skipIf(!haproxyBinary)(
    `haproxy -c accepts the load balancer's configuration${haproxyBinary ? "" : " (skipped: no haproxy on this machine)"}`,
    () => {
      execFileSync("haproxy", ["-c", "-f", fs.realpathSync(new URL("deploy/haproxy.cfg", root))], { stdio: "pipe" })
    }
  )

  it.skipIf(!composePlugin)(
    `docker compose config accepts it${composePlugin ? "" : " (skipped: this docker client has no compose plugin)"}`,
    () => {
      execFileSync("docker", ["compose", "config", "--quiet"], {
        cwd: fs.realpathSync(root),
        env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", BOOTSTRAP_TOKEN: "ci-check-token-0123456789abcdef" },
        stdio: "pipe"
      })
    }
  )
})

describe("Dockerfile", () => {
  it("builds with full npm ci (which compiles dist/) and the dashboard, then runs the compiled service on production dependencies only, as a non-root user", () => {
    expect(stages.length).toBe(2)
    const [build, runtime] = stages
    const buildText = build!.lines.join("\n")
    expect(buildText).toMatch(/^RUN npm ci\b(?!.*--omit)(?!.*--ignore-scripts)/m)
    expect(JSON.parse(read("package.json")).scripts.prepare).toContain("scripts/build-server.mjs")
    expect(buildText).toMatch(/^RUN test -f dist\/Cli\/main\.js$/m)
    expect(buildText).toMatch(/^RUN npm run build:web --if-present/m)
    const runtimeText = runtime!.lines.join("\n")
    expect(runtimeText).toMatch(/^RUN npm ci --omit=dev --ignore-scripts/m)
    expect(runtimeText).toContain(`COPY --from=${build!.name} /app/web/dist ./web/dist`)
    expect(runtimeText).toContain(`COPY --from=${build!.name} /app/dist ./dist`)
    for (const dir of ["bin", "sql"]) expect(runtimeText).toContain(`COPY ${dir} ./${dir}`)
    // The TypeScript sources stay out of the image: it runs dist/ and has no tsx to run them with.
    expect(runtimeText).not.toMatch(/^COPY (?:\S+ )?(?:\.|src)(?:\/)? /m)
    const user = runtime!.lines.filter((l) => l.startsWith("USER ")).at(-1)
    expect(user).toBe("USER node")
    expect(runtimeText).toMatch(/^CMD \["node", "bin\/jobmon\.js", "serve"\]$/m)
    expect(runtimeText).toMatch(/^HEALTHCHECK .*\/healthz/m)
  })

  it("every package the service imports at run time is installed by `npm ci --omit=dev`; tsx, the checkout's fallback, is not", () => {
    const lock = JSON.parse(read("package-lock.json")).packages as Record<string, { dev?: boolean }>
    /** The packages the .ts and .js files under `dir` import (not types only). */
    const importsUnder = (dir: string) => {
      const files: Array<string> = []
      const walk = (dir: string) => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
          const full = path.join(dir, entry.name)
          if (entry.isDirectory()) walk(full)
          else if (/\.(ts|js)$/.test(entry.name)) files.push(full)
        }
      }
      walk(fs.realpathSync(new URL(dir, root)))
      const imported = new Set<string>()
      for (const file of files) {
        const text = fs.readFileSync(file, "utf8")
        const specifiers = [
          ...text.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^"';]*?from\s+"([^"]+)"/gm),
          ...text.matchAll(/^\s*import\s+"([^"]+)"/gm),
          ...text.matchAll(/import\("([^"]+)"\)/g)
        ].map((m) => m[1]!)
        for (const s of specifiers) {
          if (s.startsWith(".") || s.startsWith("node:")) continue
          imported.add(s.startsWith("@") ? s.split("/").slice(0, 2).join("/") : s.split("/")[0]!)
        }
      }
      return imported
    }
    // src/ is what dist/ is compiled from, import for import.
    const service = importsUnder("src")
    const bin = importsUnder("bin")
    expect(service).toContain("effect")
    expect(service).not.toContain("tsx")
    // The bin imports tsx only to run the sources of a checkout whose dist/ is missing or stale.
    expect(bin).toContain("tsx")
    expect(lock["node_modules/tsx"]?.dev).toBe(true)
    bin.delete("tsx")
    const imported = [...service, ...bin]
    const missing = imported.filter((name) => lock[`node_modules/${name}`] === undefined || lock[`node_modules/${name}`]!.dev === true)
    expect(missing, "imported at run time but dev-only (or absent) in package-lock.json").toEqual([])
  })
})
