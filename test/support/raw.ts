import { Effect } from "effect"
import * as http from "node:http"
import * as net from "node:net"

/** An answer read off the wire: status, headers and the body as text (and JSON when it parses). */
export interface RawResponse {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  readonly body: any
}

const parse = (text: string) => {
  try {
    return text === "" ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * One request through node:http with the request target exactly as given (absolute form, `//`,
 * `%xx` and dot segments are sent as written, which fetch would normalise away).
 */
export const rawRequest = (
  baseUrl: string,
  method: string,
  target: string,
  options: { headers?: Record<string, string>; body?: string | Buffer } = {}
) =>
  Effect.async<RawResponse, Error>((resume) => {
    const url = new URL(baseUrl)
    const request = http.request({
      host: url.hostname,
      port: url.port,
      method,
      path: target,
      headers: {
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...(options.body === undefined || options.headers?.["transfer-encoding"] !== undefined
          ? {}
          : { "content-length": String(Buffer.byteLength(options.body)) }),
        ...options.headers
      },
      agent: false
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, text, body: parse(text) }))
      })
      response.on("error", (error) => resume(Effect.fail(error)))
    })
    request.on("error", (error) => resume(Effect.fail(error)))
    request.end(options.body)
  })

/**
 * A request whose body is streamed in chunks (Transfer-Encoding: chunked, no Content-Length) until
 * the server answers or `totalBytes` are sent. Answers the status, the text, and how many bytes went
 * out before the answer came; or `reset` when the server closed the connection before its answer
 * could be read (status 0).
 */
export const chunkedRequest = (
  baseUrl: string,
  method: string,
  target: string,
  options: { headers?: Record<string, string>; prefix: string; filler: string; totalBytes: number }
) =>
  Effect.async<RawResponse & { readonly sentBytes: number; readonly reset: boolean }, Error>((resume) => {
    const url = new URL(baseUrl)
    let sent = 0
    let answered = false
    const request = http.request({
      host: url.hostname,
      port: url.port,
      method,
      path: target,
      headers: { "content-type": "application/json", "transfer-encoding": "chunked", ...options.headers },
      agent: false
    }, (response) => {
      answered = true
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, text, body: parse(text), sentBytes: sent, reset: false }))
      })
      response.on("error", (error) => resume(Effect.fail(error)))
    })
    // A server that stops reading and closes may reset the connection before its answer is read.
    request.on("error", (error) => {
      if (answered) return
      if ((error as NodeJS.ErrnoException).code === "ECONNRESET" || (error as NodeJS.ErrnoException).code === "EPIPE") {
        resume(Effect.succeed({ status: 0, headers: {}, text: "", body: undefined, sentBytes: sent, reset: true }))
      } else resume(Effect.fail(new Error(`${error.message} after ${sent} bytes`)))
    })
    const chunk = Buffer.from(options.filler.repeat(Math.ceil(65536 / options.filler.length)).slice(0, 65536))
    const pump = () => {
      while (!answered && sent < options.totalBytes) {
        const next = sent === 0 ? Buffer.concat([Buffer.from(options.prefix), chunk]) : chunk
        sent += next.length
        if (!request.write(next)) return request.once("drain", pump)
      }
      if (!answered) request.end()
    }
    pump()
    return Effect.sync(() => request.destroy())
  })

/** A connection that sends `head` and then nothing: answers when the server closes it, and what it said. */
export const stalledConnection = (baseUrl: string, head: string) =>
  Effect.async<{ readonly received: string; readonly closedAfterMs: number }, Error>((resume) => {
    const url = new URL(baseUrl)
    const started = performance.now()
    let received = ""
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(head))
    socket.on("data", (data) => (received += data.toString("utf8")))
    socket.on("close", () => resume(Effect.succeed({ received, closedAfterMs: performance.now() - started })))
    socket.on("error", () => {})
    return Effect.sync(() => socket.destroy())
  })
