import { type ParsedMail, simpleParser } from "mailparser"
import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"

/**
 * A real SMTP server on 127.0.0.1 (smtp-server), for tests whose service sends email: it takes
 * every mail, parses it back (mailparser) and keeps it with the time it arrived (`now`: real time
 * unless the test gives the Clock it drives). Started
 * before the test server's layer, whose SMTP_URL is `url`.
 */
export const startSmtp = async (now: () => number = Date.now) => {
  const mails: Array<{ readonly at: number; readonly mail: ParsedMail }> = []
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData: (stream, _session, callback) => {
      simpleParser(stream).then((mail) => {
        mails.push({ at: now(), mail })
        callback()
      }, callback)
    }
  })
  const port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.server.address() as AddressInfo).port)))
  return { url: `smtp://127.0.0.1:${port}`, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}
