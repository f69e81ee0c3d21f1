// Runs cts from its TypeScript sources inside this repository (bin/cts.js, synthesis workers).
// Not part of the package: the published dist/ is plain JavaScript and needs neither hook.
import { register as registerHooks } from "node:module";
import { register as registerTsx } from "tsx/esm/api";

// `cdktf-sync` resolves to src/index.ts under the "cts-source" export condition (package.json),
// so configs and examples in this repo that import the package name get the sources, not dist/.
const addCondition = `export async function resolve(specifier, context, next) {
  return next(specifier, context.conditions.includes("cts-source") ? context : { ...context, conditions: [...context.conditions, "cts-source"] });
}`;

/** Registers tsx and the "cts-source" condition for this thread. */
export function registerSourceLoader() {
  registerHooks(`data:text/javascript,${encodeURIComponent(addCondition)}`);
  registerTsx();
}
