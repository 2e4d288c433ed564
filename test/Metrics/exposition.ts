import { spawnSync } from "node:child_process"

/** The Prometheus text format as the tests read it, and `promtool check metrics` (test/Metrics, test/Cluster). */

// ---- the exposition format, parsed -------------------------------------------------------------

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Exposition {
  readonly samples: ReadonlyArray<Sample>
  readonly types: ReadonlyMap<string, string>
  readonly helps: ReadonlyMap<string, string>
}

const unescapeLabel = (value: string) => value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))

const numberOf = (text: string) => (text === "+Inf" ? Infinity : text === "-Inf" ? -Infinity : Number(text))

/** A strict reading of the text format 0.0.4: a line that is not a sample, a TYPE, a HELP or empty fails the test. */
export const parseExposition = (text: string): Exposition => {
  const samples: Array<Sample> = []
  const types = new Map<string, string>()
  const helps = new Map<string, string>()
  for (const line of text.split("\n")) {
    if (line === "") continue
    const meta = /^# (TYPE|HELP) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (meta !== null) {
      ;(meta[1] === "TYPE" ? types : helps).set(meta[2]!, meta[3]!)
      continue
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (sample === null) throw new Error(`not a line of the exposition format: ${JSON.stringify(line)}`)
    const labels: Record<string, string> = {}
    const body = sample[2] ?? ""
    const pair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy
    let consumed = 0
    for (let m = pair.exec(body); m !== null; m = pair.exec(body)) {
      labels[m[1]!] = unescapeLabel(m[2]!)
      consumed = pair.lastIndex
    }
    if (consumed !== body.length) throw new Error(`labels that do not parse: ${JSON.stringify(line)}`)
    samples.push({ name: sample[1]!, labels, value: numberOf(sample[3]!) })
  }
  return { samples, types, helps }
}

/** The samples of a metric whose labels include `labels`. */
export const find = (e: Exposition, name: string, labels: Record<string, string> = {}) =>
  e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))

/** The one sample of a metric with these labels. */
export const valueOf = (e: Exposition, name: string, labels: Record<string, string> = {}) => {
  const found = find(e, name, labels)
  if (found.length !== 1) throw new Error(`${name}${JSON.stringify(labels)}: ${found.length} samples, expected one`)
  return found[0]!.value
}

// ---- promtool --------------------------------------------------------------------------------

export const promtool = (() => {
  const probe = spawnSync("promtool", ["--version"], { encoding: "utf8" })
  return probe.error === undefined && probe.status === 0
})()

/** `promtool check metrics` over the text: its exit status and what it printed (lint findings included). */
export const promtoolCheck = (text: string) => {
  const run = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" })
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}


/**
 * Runs `promtool check metrics` over the text and answers what it said (it must say nothing and exit
 * 0), or says that the check was skipped when promtool is not on PATH (CI installs it).
 */
export const checkWithPromtool = (text: string): { status: number | null; output: string } | "skipped" => {
  if (!promtool) {
    console.warn("promtool is not on PATH: the `promtool check metrics` check was skipped (Debian: apt-get install prometheus)")
    return "skipped"
  }
  return promtoolCheck(text)
}
