#!/usr/bin/env node
// cts runs from its TypeScript sources through tsx, so there is no build step to forget.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
