import Module, { createRequire, register } from "node:module";
import { dirname } from "node:path";
import { lazyIndexBeside, type LazyIndex } from "./binding-roots.ts";
import { LAZY_BINDING_HOOKS } from "./lazy-binding-hooks.ts";
import { deferCdktfZipLibrary } from "./lazy-zip-library.ts";

/** The parts of Node's CommonJS loader this uses, which are not in @types/node. */
interface ModuleInternals {
  _resolveFilename(request: string, parent: unknown, isMain: boolean, options?: unknown): string;
  _cache: Record<string, NodeJS.Module>;
  _nodeModulePaths(dir: string): string[];
}

// Once per thread, whichever copy of this file runs (cts's own, the config's namespace, dist/).
const REGISTERED = Symbol.for("cdktf-sync.lazy-bindings");

/**
 * Makes the root of every prebuilt provider binding that ships a lib/lazy-index.js lazy in this
 * thread: `import * as aws from "@cdktf/provider-aws"` (ESM) or `require("@cdktf/provider-aws")`
 * (CommonJS) then loads a namespace's module when the task first uses it, as a deep import would.
 * A binding without a lazy index, and a deep import, load as they ship. cdktf's zip library waits
 * for its first use too (lazy-zip-library.ts). Idempotent.
 */
export function registerLazyBindings(): void {
  const scope = globalThis as Record<symbol, unknown>;
  if (scope[REGISTERED]) return;
  scope[REGISTERED] = true;
  register(`data:text/javascript,${encodeURIComponent(LAZY_BINDING_HOOKS)}`);
  hookCommonJsRoots(Module as unknown as ModuleInternals);
  deferCdktfZipLibrary();
}

/**
 * CommonJS: before a binding's root index.js is loaded, its place in the module cache is taken by
 * lazy exports (one enumerable getter per namespace, reading the lazy index), so `require` never
 * runs the eager index. Not the lazy index itself: its getters are not enumerable, so
 * `Object.keys(aws)` and `{ ...aws }` would be empty. Wrapping the resolver installed now (tsx's,
 * when registered first) means this sees its answer, `?namespace=` query included, which is the
 * key its loader looks up.
 */
function hookCommonJsRoots(internals: ModuleInternals): void {
  const lazyIndexes = new Map<string, LazyIndex | undefined>();
  const resolveFilename = internals._resolveFilename;
  internals._resolveFilename = function (this: unknown, request, parent, isMain, options) {
    const key = resolveFilename.call(this, request, parent, isMain, options);
    if (internals._cache[key] || !key.includes("index.js")) return key;
    const path = key.split("?")[0]!;
    if (!lazyIndexes.has(path)) lazyIndexes.set(path, lazyIndexBeside(path));
    const lazy = lazyIndexes.get(path);
    if (lazy) internals._cache[key] = lazyRootModule(internals, key, path, lazy);
    return key;
  };
}

/** A loaded module standing for a binding's root: its exports read the lazy index on first use. */
function lazyRootModule(internals: ModuleInternals, key: string, path: string, lazy: LazyIndex): NodeJS.Module {
  const requireLazy = createRequire(lazy.file);
  // Marked as the eager index marks itself, so transpiled `import` interop treats both alike.
  const exports: Record<string, unknown> = Object.defineProperty({}, "__esModule", { value: true });
  for (const name of lazy.names)
    Object.defineProperty(exports, name, { enumerable: true, configurable: true, get: () => (requireLazy(lazy.file) as Record<string, unknown>)[name] });
  const module = new (Module as unknown as new (id: string) => NodeJS.Module)(key);
  Object.assign(module, { filename: path, paths: internals._nodeModulePaths(dirname(path)), exports, loaded: true });
  return module;
}
