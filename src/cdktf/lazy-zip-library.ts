import Module from "node:module";

/** The parts of Node's CommonJS loader this uses, which are not in @types/node. */
interface ModuleInternals {
  _resolveFilename(request: string, parent: { filename?: string } | undefined, isMain: boolean, options?: unknown): string;
  _load(request: string, parent: unknown, isMain: boolean): unknown;
  _cache: Record<string, NodeJS.Module>;
}

// Once per thread, whichever copy of this file runs (cts's own, a config's namespace, dist/).
const INSTALLED = Symbol.for("cdktf-sync.lazy-zip-library");

/** cdktf's file helpers, the one module that requires its zip library when it loads. */
const CDKTF_FILE_HELPERS = /[\\/]cdktf[\\/]lib[\\/]private[\\/]fs\.js$/;

/**
 * cdktf requires its zip library (`archiver`, and through it about 200 modules: streams, glob…)
 * when it loads, although it zips a `TerraformAsset` of type ARCHIVE in a `node` of its own that
 * runs the same file. That was about half of cdktf's load, on the path of every first synthesis.
 * From now on, in this thread, that require gets a stand-in which requires the real library on
 * its first use, should anything in this thread use it. cdktn zips with a small library and is
 * left alone. Idempotent.
 */
export function deferCdktfZipLibrary(): void {
  const scope = globalThis as Record<symbol, unknown>;
  if (scope[INSTALLED]) return;
  scope[INSTALLED] = true;
  const internals = Module as unknown as ModuleInternals;
  const resolveFilename = internals._resolveFilename;
  internals._resolveFilename = function (this: unknown, request, parent, isMain, options) {
    const key = resolveFilename.call(this, request, parent, isMain, options);
    if (request === "archiver" && !internals._cache[key] && CDKTF_FILE_HELPERS.test(parent?.filename ?? "")) internals._cache[key] = standIn(internals, key, parent);
    return key;
  };
}

/** A loaded module whose export calls (and reads from) the real library, required on first use. */
function standIn(internals: ModuleInternals, key: string, parent: unknown): NodeJS.Module {
  let real: ((...args: unknown[]) => unknown) | undefined;
  const load = () => {
    if (!real) {
      delete internals._cache[key];
      real = internals._load(key, parent, false) as (...args: unknown[]) => unknown;
    }
    return real;
  };
  const exports = new Proxy(function archiver() {}, {
    apply: (_target, self, args) => Reflect.apply(load(), self, args),
    get: (_target, property) => Reflect.get(load(), property),
    has: (_target, property) => Reflect.has(load(), property),
  });
  const module = new (Module as unknown as new (id: string) => NodeJS.Module)(key);
  Object.assign(module, { filename: key.split("?")[0], exports, loaded: true });
  return module;
}
