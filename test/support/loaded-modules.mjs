// Preloaded into a cts process by tests (`node --import`): at exit, writes the CommonJS modules the
// main thread loaded to $CTS_TEST_LOADED_OUT. cdktf, constructs and the provider bindings are
// CommonJS, so this list shows whether the main thread ever loaded them (worker threads have their own).
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";

const out = process.env.CTS_TEST_LOADED_OUT;
if (out) process.on("exit", () => writeFileSync(out, JSON.stringify(Object.keys(createRequire(import.meta.url).cache))));
