/**
 * The durable floor: what a ping intake costs on this machine with nothing but durability. A bare
 * node:http server (as bench/support/bare-server.ts) that stores each ping before it answers: the
 * pings that arrive together are written in one multi-row `unnest` INSERT on one connection (group
 * commit, one batch in flight, an idle writer waiting for the end of the event-loop turn, as the
 * service's writer does) into a five-column table with a primary key and a (monitor, time) index,
 * and each is answered with the service's headers after the COMMIT. No authentication, validation,
 * output redaction, pairing, incident engine or ping events: the distance from this floor to the
 * intake is the product's own work per ping, and from bare node:http to this floor the price of
 * durability.
 *
 * Arguments: the database URL (the benchmark's fresh database). Listens on 127.0.0.1 at a free port
 * and prints `listening <port>` once it does.
 */
import { randomUUID } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import pg from "pg"

const client = new pg.Client({ connectionString: process.argv[2], application_name: "jobmon-bench-floor" })
await client.connect()
await client.query(`create table if not exists bench_floor_runs (
  id uuid primary key, monitor_id text not null, started_at timestamptz not null, duration_ms bigint, output text)`)
await client.query(`create index if not exists bench_floor_runs_monitor on bench_floor_runs (monitor_id, started_at desc)`)

const INSERT = `insert into bench_floor_runs (id, monitor_id, started_at, duration_ms, output)
  select id, monitor_id, to_timestamp(at_ms / 1000.0), duration_ms, output
  from unnest($1::uuid[], $2::text[], $3::float8[], $4::int8[], $5::text[]) as t(id, monitor_id, at_ms, duration_ms, output)`

interface Pending {
  readonly id: string
  readonly monitorId: string
  readonly at: number
  readonly durationMs: number | null
  readonly output: string | null
  readonly res: http.ServerResponse
}

let pending: Array<Pending> = []
let flushing = false
let scheduled = false

const answer = (res: http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), "x-api-version": "1" })
  res.end(text)
}

const flush = () => {
  const batch = pending
  pending = []
  flushing = true
  client.query({
    name: "floor_insert",
    text: INSERT,
    values: [
      batch.map((p) => p.id),
      batch.map((p) => p.monitorId),
      batch.map((p) => p.at),
      batch.map((p) => p.durationMs),
      batch.map((p) => p.output)
    ]
  }).then(
    () => {
      for (const p of batch) answer(p.res, 200, { received: true, runId: p.id })
    },
    (error: Error) => {
      for (const p of batch) answer(p.res, 503, { message: error.message })
    }
  ).finally(() => {
    flushing = false
    if (pending.length > 0) flush()
  })
}

const server = http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    let body: { durationMs?: unknown; output?: unknown } = {}
    try {
      const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")
      if (text !== "") body = JSON.parse(text)
    } catch {
      return answer(res, 400, { message: "not JSON" })
    }
    pending.push({
      id: randomUUID(),
      monitorId: (req.url ?? "").split("/")[3] ?? "",
      at: Date.now(),
      durationMs: typeof body.durationMs === "number" ? body.durationMs : null,
      output: typeof body.output === "string" ? body.output : null,
      res
    })
    if (!flushing && !scheduled) {
      scheduled = true
      setImmediate(() => {
        scheduled = false
        if (!flushing && pending.length > 0) flush()
      })
    }
  })
})
server.keepAliveTimeout = 65_000
server.listen(0, "127.0.0.1", () => {
  console.log(`listening ${(server.address() as AddressInfo).port}`)
})
const stop = () => {
  server.close(() => void client.end().finally(() => process.exit(0)))
  server.closeAllConnections()
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
