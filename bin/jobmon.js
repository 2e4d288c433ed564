#!/usr/bin/env node
// The `jobmon` command. TypeScript sources run through tsx's loader: no build step to forget.
import { register } from "tsx/esm/api"

register()
await import("../src/Cli/main.ts")
