#!/usr/bin/env node
// The CLI from this repository's TypeScript sources (development and tests; no build step).
// The published package's `cts` is dist/cli/main.js, compiled by `npm run build`.
import { registerSourceLoader } from "../src/source-loader.mjs";

registerSourceLoader();
await import("../src/cli/main.ts");
