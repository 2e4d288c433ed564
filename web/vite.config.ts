import { defineConfig } from "vite"

/** The dashboard: Preact (JSX through esbuild, no plugin) and uPlot, built into web/dist. */
export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    assetsInlineLimit: 0,
    reportCompressedSize: true
  },
  logLevel: "warn"
})
