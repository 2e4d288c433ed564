/**
 * The baseline: a bare node:http server that reads the request body and answers a tiny JSON,
 * as the ping intake would, with nothing behind it. Listens on 127.0.0.1 at the port given as the
 * first argument (0: any) and prints `listening <port>` once it does.
 */
import { randomUUID } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

const port = Number(process.argv[2] ?? "0")

const server = http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    // Read the body as the intake does (the bytes are not needed).
    void (chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"))
    const text = JSON.stringify({ received: true, runId: randomUUID() })
    res.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text)
    })
    res.end(text)
  })
})
server.keepAliveTimeout = 65_000
server.listen(port, "127.0.0.1", () => {
  console.log(`listening ${(server.address() as AddressInfo).port}`)
})
const stop = () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
