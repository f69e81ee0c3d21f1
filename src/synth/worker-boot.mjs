// Worker threads do not inherit the parent's loader hooks. The built package (dist/) has worker.js
// next to this file and runs it as it is; from the sources, register tsx first, then load worker.ts.
import { existsSync } from "node:fs";

const built = new URL("./worker.js", import.meta.url);
if (existsSync(built)) {
  await import(built.href);
} else {
  const { registerSourceLoader } = await import("../source-loader.mjs");
  registerSourceLoader();
  await import("./worker.ts");
}
