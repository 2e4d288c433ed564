import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { hostname } from "node:os"
import { mergeMessages, packMessages } from "../../src/Delivery/ChatMessage.js"
import { send } from "../../src/Delivery/Sender.js"
import { receiver } from "./receiver.js"

const headers = { "Content-Type": "application/json" }

it.effect("at send time the guard refuses loopback, private and metadata targets, names by their DNS answer", () =>
  Effect.scoped(Effect.gen(function*() {
    const target = yield* receiver([200])
    const port = new URL(target.url).port
    for (
      const url of [
        `http://127.0.0.1:${port}/hook`,
        "http://10.0.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        `http://localhost:${port}/hook`,
        `http://${hostname()}:${port}/hook`
      ]
    ) {
      const result = yield* Effect.promise(() => send(url, "{}", headers, { allowPrivateTargets: false }))
      expect(result.outcome, url).toMatchObject({ _tag: "Refused", error: expect.stringMatching(/^refused: /) })
    }
    expect(target.received).toHaveLength(0)
    // the operator setting lets the same target through
    const allowed = yield* Effect.promise(() => send(`http://localhost:${port}/hook`, "{}", headers, { allowPrivateTargets: true }))
    expect(allowed.outcome).toEqual({ _tag: "Answered", status: 200 })
    expect(target.received).toHaveLength(1)
  })))

it("packing: every message once, in order, at most 10 embeds and 6,000 characters a message", () => {
  const message = (i: number, size: number) => ({
    embeds: [{ title: `FAIL: m${i}`, description: "d".repeat(size), footer: { text: "jobmon" } }],
    components: [{
      type: 1,
      components: [
        { type: 2, style: 5, label: "View incident", url: `https://x/incidents/${i}` },
        { type: 2, style: 5, label: "View monitor", url: `https://x/monitors/${i}` }
      ]
    }]
  }) as any
  const sizes = Array.from({ length: 40 }, (_, i) => (i % 7 === 0 ? 2500 : 100 + i))
  const items = sizes.map((size, i) => message(i, size))
  const groups = packMessages(items, (m) => m)
  expect(groups.flat()).toEqual(items)
  for (const group of groups) {
    const merged = mergeMessages(group)
    expect(merged.embeds!.length).toBeLessThanOrEqual(10)
    const characters = merged.embeds!.reduce((n, e) => n + e.title!.length + (e.description?.length ?? 0) + e.footer!.text.length, 0)
    expect(characters).toBeLessThanOrEqual(6000)
    expect(merged.components!.length).toBeLessThanOrEqual(5)
  }
  // one message stays exactly as it was
  expect(mergeMessages([items[0]])).toBe(items[0])
})
