import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/**
 * Summaries of a V8 `.cpuprofile` (from `node --cpu-prof`): where the busy time went, by self time.
 *
 * The service runs the JavaScript that tsc compiled into dist/, with a source map beside each file;
 * frames there are mapped back to the TypeScript line through it. The benchmarks' own scripts (and
 * a checkout whose dist/ is stale) run through tsx, which emits whitespace-minified code with
 * `keepNames` wrappers, so V8 sees one-line modules and many anonymous functions: those frames are
 * mapped through tsx's on-disk cache (generated code and source map, under `$TMPDIR/tsx-<uid>`).
 * An anonymous function is named by its first source line.
 *
 * The sampling profiler samples wall-clock time of the thread: on a machine where processes compete
 * for the cores, time the thread spent preempted inside a system call (typically `writev` waking
 * the client) is charged to that call.
 */

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}
interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
}
interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

export interface ProfileLine {
  readonly name: string
  readonly ms: number
  /** Share of the busy (not idle) time, percent. */
  readonly percent: number
}

export interface ProfileSummary {
  readonly file: string
  /** The part of the profile summarised, ms. */
  readonly totalMs: number
  readonly busyMs: number
  readonly topFrames: ReadonlyArray<ProfileLine>
  readonly byOrigin: ReadonlyArray<ProfileLine>
}

export interface SummaryOptions {
  /** Only samples in this window, in ms before the end of the profile (e.g. the measured phase). */
  readonly windowBeforeEndMs?: readonly [from: number, to: number] | undefined
  /** When the profiled process had loaded its modules (picks the matching tsx cache entries). */
  readonly loadedBy?: Date | undefined
  readonly top?: number | undefined
}

// ---- source maps (only what is needed: generated line/column → original line)

const VLQ = new Map([..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"].map((c, i) => [c, i]))

const decodeSegment = (segment: string): Array<number> => {
  const out: Array<number> = []
  let value = 0
  let shift = 0
  for (const c of segment) {
    const digit = VLQ.get(c) ?? 0
    value += (digit & 31) << shift
    if (digit & 32) shift += 5
    else {
      out.push(value & 1 ? -(value >>> 1) : value >>> 1)
      value = 0
      shift = 0
    }
  }
  return out
}

/** Per generated line: sorted [generatedColumn, originalLine] pairs. */
const decodeMappings = (mappings: string): Array<Array<readonly [number, number]>> => {
  const lines: Array<Array<readonly [number, number]>> = []
  let srcLine = 0
  for (const line of mappings.split(";")) {
    const segs: Array<readonly [number, number]> = []
    let genCol = 0
    for (const segment of line.split(",")) {
      if (segment === "") continue
      const f = decodeSegment(segment)
      genCol += f[0] ?? 0
      if (f.length >= 4) {
        srcLine += f[2]!
        segs.push([genCol, srcLine])
      }
    }
    lines.push(segs)
  }
  return lines
}

interface Compiled {
  readonly code: ReadonlyArray<string>
  readonly lines: Array<Array<readonly [number, number]>>
  readonly source: ReadonlyArray<string>
  /** The TypeScript file, when the frame's own file is the build's (dist/). */
  readonly sourceFile?: string
}

/** dist/ (tsconfig.build.json): a built file → its source map and TypeScript source; undefined without. */
const builtMaps = new Map<string, Compiled | undefined>()
const loadBuiltMap = (file: string): Compiled | undefined => {
  if (!builtMaps.has(file)) {
    let compiled: Compiled | undefined
    try {
      const map = JSON.parse(fs.readFileSync(`${file}.map`, "utf8")) as { sources: Array<string>; mappings: string }
      const sourceFile = path.resolve(path.dirname(file), map.sources[0]!)
      compiled = { code: [], lines: decodeMappings(map.mappings), source: fs.readFileSync(sourceFile, "utf8").split("\n"), sourceFile }
    } catch {
      compiled = undefined
    }
    builtMaps.set(file, compiled)
  }
  return builtMaps.get(file)
}

/** tsx's cache: source path → the compiled form the profiled process most likely used. */
const loadTsxCache = (loadedBy: Date | undefined): Map<string, Compiled> => {
  const uid = typeof process.geteuid === "function" ? process.geteuid() : os.userInfo().username
  const dir = path.join(os.tmpdir(), `tsx-${uid}`)
  const best = new Map<string, { mtime: number; file: string }>()
  let entries: Array<string> = []
  try {
    entries = fs.readdirSync(dir)
  } catch {
    return new Map()
  }
  const limit = loadedBy === undefined ? Number.POSITIVE_INFINITY : loadedBy.getTime() + 1000
  for (const name of entries) {
    const file = path.join(dir, name)
    try {
      const stat = fs.statSync(file)
      if (!stat.isFile() || stat.mtimeMs > limit) continue
      const text = fs.readFileSync(file, "utf8")
      const m = /"sources":\["([^"]+)"/.exec(text)
      if (m === null) continue
      const source = m[1]!
      const previous = best.get(source)
      if (previous === undefined || stat.mtimeMs > previous.mtime) best.set(source, { mtime: stat.mtimeMs, file })
    } catch {
      // unreadable entry
    }
  }
  const out = new Map<string, Compiled>()
  for (const [source, { file }] of best) {
    try {
      const entry = JSON.parse(fs.readFileSync(file, "utf8")) as { code: string; map: { mappings: string } }
      const original = fs.existsSync(source) ? fs.readFileSync(source, "utf8").split("\n") : []
      out.set(source, { code: entry.code.split("\n"), lines: decodeMappings(entry.map.mappings), source: original })
    } catch {
      // not a cache entry after all
    }
  }
  return out
}

const originalLine = (compiled: Compiled, line: number, column: number): number | undefined => {
  const segs = compiled.lines[line]
  if (segs === undefined || segs.length === 0) return undefined
  let found: number | undefined
  for (const [col, src] of segs) {
    if (col > column) break
    found = src
  }
  return found ?? segs[0]![1]
}

// ---- naming and grouping

const shortUrl = (url: string): string => {
  const nm = url.lastIndexOf("/node_modules/")
  if (nm >= 0) return url.slice(nm + "/node_modules/".length)
  for (const dir of ["/src/", "/dist/", "/bench/", "/test/"]) {
    const at = url.indexOf(dir)
    if (at >= 0) return url.slice(at + 1)
  }
  return url.replace(/^file:\/\//, "")
}

/** Where a frame's code comes from: a package, a file of ours, node's core, or a V8 pseudo-frame. */
const origin = (frame: CallFrame): string => {
  const { url, functionName } = frame
  if (url === "") return functionName.startsWith("(") ? functionName : "(native: V8 builtins, syscalls)"
  if (url.startsWith("node:")) {
    const m = /^node:(?:internal\/)?([^/]+)/.exec(url)
    return `node:${m?.[1] ?? url}`
  }
  const nm = url.lastIndexOf("/node_modules/")
  if (nm >= 0) {
    const rest = url.slice(nm + "/node_modules/".length).split("/")
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!
  }
  return shortUrl(url)
}

const frameName = (frame: CallFrame, cache: Map<string, Compiled>): string => {
  if (frame.url === "") return frame.functionName || "(anonymous)"
  const file = frame.url.replace(/^file:\/\//, "")
  const compiled = cache.get(file) ?? (file.includes("/dist/") ? loadBuiltMap(file) : undefined)
  const short = shortUrl(compiled?.sourceFile ?? frame.url)
  if (compiled === undefined) return `${frame.functionName || "(anonymous)"} ${short}:${frame.lineNumber + 1}`
  const line = originalLine(compiled, frame.lineNumber, frame.columnNumber)
  const where = line === undefined ? `${short}` : `${short}:${line + 1}`
  if (frame.functionName !== "" && frame.functionName !== "__name") return `${frame.functionName} ${where}`
  const text = line === undefined ? "" : (compiled.source[line] ?? "").trim()
  return `${where} ${text.length > 60 ? `${text.slice(0, 57)}…` : text}`.trim()
}

export const summarizeProfile = (file: string, options: SummaryOptions = {}): ProfileSummary => {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile
  const cache = loadTsxCache(options.loadedBy)
  const nodes = new Map<number, ProfileNode>()
  for (const node of profile.nodes) nodes.set(node.id, node)
  // Sample times, µs on the profile's clock.
  const from = options.windowBeforeEndMs === undefined ? Number.NEGATIVE_INFINITY : profile.endTime - options.windowBeforeEndMs[0] * 1000
  const to = options.windowBeforeEndMs === undefined ? Number.POSITIVE_INFINITY : profile.endTime - options.windowBeforeEndMs[1] * 1000
  const self = new Map<number, number>()
  let totalUs = 0
  let t = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0
    t += delta
    if (t < from || t > to) continue
    totalUs += delta
    self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + delta)
  }
  const byFrame = new Map<string, number>()
  const byOrigin = new Map<string, number>()
  let idleUs = 0
  for (const [id, us] of self) {
    const frame = nodes.get(id)?.callFrame
    if (frame === undefined) continue
    if (frame.functionName === "(idle)") {
      idleUs += us
      continue
    }
    const name = frameName(frame, cache)
    byFrame.set(name, (byFrame.get(name) ?? 0) + us)
    const o = origin(frame)
    byOrigin.set(o, (byOrigin.get(o) ?? 0) + us)
  }
  const busyUs = totalUs - idleUs
  const lines = (map: Map<string, number>, n: number): Array<ProfileLine> =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({
        name,
        ms: Math.round(us / 1000),
        percent: busyUs === 0 ? 0 : Math.round((1000 * us) / busyUs) / 10
      }))
  return {
    file,
    totalMs: Math.round(totalUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    topFrames: lines(byFrame, options.top ?? 25),
    byOrigin: lines(byOrigin, 14)
  }
}

/** The main thread's profile in a --cpu-prof directory (tsx's loader thread writes one too). */
export const mainThreadProfile = (dir: string): string | undefined => {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))
  // Names are CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile; the main thread is 0.
  const main = files.find((f) => f.split(".")[4] === "0") ?? files.sort((a, b) => fs.statSync(path.join(dir, b)).size - fs.statSync(path.join(dir, a)).size)[0]
  return main === undefined ? undefined : path.join(dir, main)
}
