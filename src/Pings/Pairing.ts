/**
 * Pairing pings into runs: a pure decision over one monitor's open runs (docs/decisions.md#pings,
 * #details-clients-depend-on).
 * `start` opens a run; `success`/`fail` close the run named by `runId`, else the newest open run,
 * else create a completed run whose start is inferred.
 */

export type PingKind = "start" | "success" | "fail"

export interface OpenRun {
  readonly id: string
  readonly startedAt: number
}

export interface PingInput {
  readonly kind: PingKind
  readonly receivedAt: number
  readonly runId?: string | undefined
  readonly durationMs?: number | undefined
  readonly exitCode?: number | undefined
  readonly output?: {
    readonly text: string
    readonly truncated: boolean
    readonly bytes: number
  } | undefined
}

/** The whole state of a run after a ping: what the writer upserts. */
export interface RunRow {
  readonly id: string
  readonly monitorId: string
  readonly orgId: string
  readonly status: "RUNNING" | "SUCCESS" | "FAIL"
  readonly startedAt: number
  readonly startInferred: boolean
  readonly finishedAt: number | null
  readonly durationMs: number | null
  readonly exitCode: number | null
  readonly output: string | null
  readonly outputTruncated: boolean
  readonly outputBytes: number | null
  /** When the ping arrived (monitors.last_ping_at). */
  readonly pingAt: number
}

export type PairingResult =
  | { readonly _tag: "Row"; readonly row: RunRow; readonly openRuns: ReadonlyArray<OpenRun> }
  | { readonly _tag: "UnknownRun"; readonly runId: string }
  | { readonly _tag: "RunFinished"; readonly runId: string }

export interface PairingContext {
  readonly monitorId: string
  readonly orgId: string
  /** A new run id, for a run that starts (or is inferred to start) at a ping received `at`. */
  readonly newId: (at: number) => string
  /** Whether a run id that is not open belongs to a finished run of this monitor. */
  readonly isFinished: (runId: string) => boolean
}

export const pair = (
  ctx: PairingContext,
  openRuns: ReadonlyArray<OpenRun>,
  ping: PingInput
): PairingResult => {
  // Rows are built as single object literals: on Node 20 a spread followed by more properties
  // costs many times as much, measurable on the ping path (docs/performance.md#figures-behind-code-comments).
  if (ping.kind === "start") {
    if (ping.runId !== undefined && (openRuns.some((r) => r.id === ping.runId) || ctx.isFinished(ping.runId))) {
      return { _tag: "RunFinished", runId: ping.runId }
    }
    const run: OpenRun = { id: ping.runId ?? ctx.newId(ping.receivedAt), startedAt: ping.receivedAt }
    return {
      _tag: "Row",
      row: {
        id: run.id,
        monitorId: ctx.monitorId,
        orgId: ctx.orgId,
        status: "RUNNING",
        startedAt: run.startedAt,
        startInferred: false,
        finishedAt: null,
        durationMs: null,
        exitCode: null,
        output: null,
        outputTruncated: false,
        outputBytes: null,
        pingAt: ping.receivedAt
      },
      openRuns: [...openRuns, run]
    }
  }
  const status = ping.kind === "success" ? "SUCCESS" : "FAIL"
  let open: OpenRun | undefined
  if (ping.runId !== undefined) {
    open = openRuns.find((r) => r.id === ping.runId)
    if (open === undefined) {
      return ctx.isFinished(ping.runId)
        ? { _tag: "RunFinished", runId: ping.runId }
        : { _tag: "UnknownRun", runId: ping.runId }
    }
  } else {
    // The newest open run: the one started last.
    for (const run of openRuns) if (open === undefined || run.startedAt >= open.startedAt) open = run
  }
  const output = ping.output
  if (open !== undefined) {
    const closing = open
    return {
      _tag: "Row",
      row: {
        id: closing.id,
        monitorId: ctx.monitorId,
        orgId: ctx.orgId,
        status,
        startedAt: closing.startedAt,
        startInferred: false,
        finishedAt: ping.receivedAt,
        durationMs: ping.durationMs ?? Math.max(0, ping.receivedAt - closing.startedAt),
        exitCode: ping.exitCode ?? null,
        output: output?.text ?? null,
        outputTruncated: output?.truncated ?? false,
        outputBytes: output?.bytes ?? null,
        pingAt: ping.receivedAt
      },
      openRuns: openRuns.length === 1 ? [] : openRuns.filter((r) => r !== closing)
    }
  }
  return {
    _tag: "Row",
    row: {
      id: ctx.newId(ping.receivedAt),
      monitorId: ctx.monitorId,
      orgId: ctx.orgId,
      status,
      startedAt: ping.receivedAt - (ping.durationMs ?? 0),
      startInferred: true,
      finishedAt: ping.receivedAt,
      durationMs: ping.durationMs ?? null,
      exitCode: ping.exitCode ?? null,
      output: output?.text ?? null,
      outputTruncated: output?.truncated ?? false,
      outputBytes: output?.bytes ?? null,
      pingAt: ping.receivedAt
    },
    openRuns
  }
}
