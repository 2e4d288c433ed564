import { existsSync, readFileSync, statSync } from "node:fs"
import type * as http from "node:http"
import { extname, join, normalize } from "node:path"
import { gzipSync } from "node:zlib"
import { packageRoot } from "../PackageRoot.js"

/**
 * The dashboard (docs/dashboard.md): the single-page app built into web/dist by `npm run build:web`.
 * GET/HEAD of any path outside /api, /healthz and /metrics is answered here; /assets/* are the hashed,
 * immutable bundle files; every other path is a page of the app and gets index.html. Everything
 * else (all of /api, other methods) is passed on to the API router untouched.
 */

export const defaultWebRoot = join(packageRoot, "web", "dist")

const types: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2"
}

const pageHeaders = {
  "content-security-policy":
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin"
}

const notBuilt = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>jobmon: dashboard not built</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5">
<h1>The dashboard is not built</h1>
<p>The service is running and its API answers under <a href="/api/docs">/api</a>, but the dashboard's
files (<code>web/dist</code>) are missing.</p>
<p>Build them with <code>npm run build:web</code> (<code>npm install</code> and <code>npm ci</code> do it
too), then reload this page.</p>
</body></html>`

interface File {
  readonly body: Buffer
  readonly gzip: Buffer | null
  readonly type: string
}

/** The API's paths, in any letter case: the router matches them so (src/Http/Canonical.ts). */
const isApi = (path: string) => {
  const lower = path.toLowerCase()
  return lower === "/api" || lower.startsWith("/api/") || lower === "/healthz" || lower === "/metrics"
}

/** Answers dashboard requests; returns false for anything it leaves to the API router. */
export const webRoutes = (root: string = defaultWebRoot) => {
  const cache = new Map<string, File>()
  const load = (path: string): File | null => {
    const hit = cache.get(path)
    if (hit !== undefined) return hit
    if (!existsSync(path) || !statSync(path).isFile()) return null
    const body = readFileSync(path)
    const type = types[extname(path)] ?? "application/octet-stream"
    const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.length > 1024
    const file = { body, gzip: compressible ? gzipSync(body) : null, type }
    // index.html is read again on each request (a rebuild shows at once); hashed assets never change.
    if (!path.endsWith("index.html")) cache.set(path, file)
    return file
  }

  const send = (req: http.IncomingMessage, res: http.ServerResponse, file: File, headers: Record<string, string>) => {
    const gzip = file.gzip !== null && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""))
    const body = gzip ? file.gzip! : file.body
    res.writeHead(200, {
      "content-type": file.type,
      "content-length": body.length,
      vary: "accept-encoding",
      ...(gzip ? { "content-encoding": "gzip" } : {}),
      ...headers
    })
    res.end(req.method === "HEAD" ? undefined : body)
  }

  return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    if (req.method !== "GET" && req.method !== "HEAD") return false
    let path: string
    try {
      path = decodeURIComponent((req.url ?? "/").split("?")[0]!)
    } catch {
      return false
    }
    if (isApi(path)) return false

    if (path.startsWith("/assets/")) {
      const file = normalize(path) === path ? load(join(root, path)) : null
      if (file === null) {
        res.writeHead(404, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" })
        res.end(`No dashboard file at ${path}.`)
        return true
      }
      send(req, res, file, { "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" })
      return true
    }

    // Other files at the root of the build (the icon), then the app itself for every page route.
    const rootFile = /^\/[\w.-]+\.\w+$/.test(path) && path !== "/index.html" ? load(join(root, path)) : null
    if (rootFile !== null) {
      send(req, res, rootFile, { "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff" })
      return true
    }
    const index = load(join(root, "index.html"))
    if (index === null) {
      const text = Buffer.from(notBuilt)
      res.writeHead(503, { "content-type": "text/html; charset=utf-8", "content-length": text.length, "cache-control": "no-store" })
      res.end(req.method === "HEAD" ? undefined : text)
      return true
    }
    send(req, res, index, { "cache-control": "no-cache", ...pageHeaders })
    return true
  }
}
