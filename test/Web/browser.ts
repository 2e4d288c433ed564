import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chromium, type BrowserContext } from "playwright-core"

/** Debian's Chromium, driven by playwright-core (no browser is ever downloaded). */
export const CHROMIUM = "/usr/bin/chromium"
export const hasChromium = existsSync(CHROMIUM)
export const WAIT_MS = 30_000

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-quic",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync"
]

/** A browser with a fresh profile of its own; close() also removes the profile. */
export const launch = async (viewport = { width: 1280, height: 900 }) => {
  const profile = mkdtempSync(join(tmpdir(), "jobmon-chromium-"))
  let context: BrowserContext
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport,
      timeout: WAIT_MS
    })
  } catch (error) {
    rmSync(profile, { recursive: true, force: true })
    throw error
  }
  context.setDefaultTimeout(WAIT_MS)
  context.setDefaultNavigationTimeout(WAIT_MS)
  return {
    context,
    close: async () => {
      await context.close().catch(() => undefined)
      rmSync(profile, { recursive: true, force: true })
    }
  }
}
