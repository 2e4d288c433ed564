/**
 * The webhook endpoints of `npm run bench:delivery`: `ports` node:http servers on 127.0.0.1 (first
 * argument), every path an endpoint. Each POST is read whole and answered 200. It counts requests
 * per path, and notes when each `incident.opened` arrived (Date.now(), the same clock as the
 * service's). `GET /_stats` on any port answers `{requests, byPath, arrivals: [[incidentId, ms]]}`.
 * Prints `listening <port>,<port>,…` once all listen.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

const count = Number(process.argv[2] ?? "4")
let requests = 0
const byPath = new Map<string, number>()
const arrivals: Array<[string, number]> = []

const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
  if (req.method === "GET" && req.url === "/_stats") {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ requests, byPath: Object.fromEntries(byPath), arrivals }))
    return
  }
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const at = Date.now()
    requests++
    byPath.set(req.url ?? "", (byPath.get(req.url ?? "") ?? 0) + 1)
    if (req.headers["x-service-event"] === "incident.opened") {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { data: { incident: { id: string } } }
      arrivals.push([body.data.incident.id, at])
    }
    res.writeHead(200, { "content-length": "0" })
    res.end()
  })
}

const servers = Array.from({ length: count }, () => {
  const server = http.createServer(handle)
  server.keepAliveTimeout = 65_000
  return server
})
Promise.all(servers.map((s) => new Promise<number>((resolve) => s.listen(0, "127.0.0.1", () => resolve((s.address() as AddressInfo).port)))))
  .then((ports) => console.log(`listening ${ports.join(",")}`))
const stop = () => {
  let open = servers.length
  for (const s of servers) {
    s.close(() => --open === 0 && process.exit(0))
    s.closeAllConnections()
  }
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
