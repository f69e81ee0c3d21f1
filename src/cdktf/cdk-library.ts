import { createRequire } from "node:module";
import type { IConstruct } from "constructs";

/**
 * The two CDKs a task can be written with: HashiCorp's `cdktf` (archived at 0.21.0) and its
 * maintained fork CDK Terrain, `cdktn`. They share the construct API, the synth output, the
 * `Symbol.for("cdktf.*")` symbols and even the global token map (`global.__cdktfTokenMap`), so
 * their `is*` checks cannot tell them apart: a construct of one accepts a stack of the other as
 * its scope. What differs is resolution (cdktn's `Fn` records its use on a cdktn stack) and the
 * classes, so cts tells them apart by class, through every loaded copy of each library.
 */
export type CdkName = "cdktf" | "cdktn";

/** Both libraries, cdktf (the default) first. */
export const CDK_NAMES: readonly CdkName[] = ["cdktf", "cdktn"];

/** The npm packages of a library, as users see them in imports (for messages). */
export const CDK_PACKAGES: Record<CdkName, string> = {
  cdktf: "'cdktf' and '@cdktf/provider-*'",
  cdktn: "'cdktn' and '@cdktn/provider-*'",
};

const moduleCache = createRequire(import.meta.url).cache;
/** A copy of a library's element module (tsx namespaces give a config its own copies: `…js?namespace=…`). */
const ELEMENT_FILE = /[\\/](cdktf|cdktn)[\\/]lib[\\/]terraform-element\.js(\?.*)?$/;
const INDEX_FILE = /[\\/](cdktf|cdktn)[\\/]lib[\\/]index\.js(\?.*)?$/;

interface Classes {
  scanned: number;
  elements: Array<[Function, CdkName]>;
  loaded: Set<CdkName>;
}
const classes: Classes = { scanned: -1, elements: [], loaded: new Set() };

function scan(): Classes {
  const keys = Object.keys(moduleCache);
  if (keys.length === classes.scanned) return classes;
  classes.elements = [];
  classes.loaded = new Set();
  for (const key of keys) {
    const index = INDEX_FILE.exec(key);
    if (index) classes.loaded.add(index[1] as CdkName);
    const m = ELEMENT_FILE.exec(key);
    const element = m && (moduleCache[key]?.exports as { TerraformElement?: Function } | undefined)?.TerraformElement;
    if (m && typeof element === "function") classes.elements.push([element, m[1] as CdkName]);
  }
  classes.scanned = keys.length;
  return classes;
}

/** The libraries some code of this thread has loaded (their package root). */
export function loadedCdks(): Set<CdkName> {
  return scan().loaded;
}

/** The library to use when nothing else says: cdktn when only cdktn is loaded, else cdktf. */
export function defaultCdk(): CdkName {
  const loaded = loadedCdks();
  return loaded.has("cdktn") && !loaded.has("cdktf") ? "cdktn" : "cdktf";
}

/** The package root of a library some code already loaded (a copy without a tsx namespace first). */
export function loadedCdk(name: CdkName): unknown {
  let copy: unknown;
  for (const key of Object.keys(moduleCache)) {
    const m = INDEX_FILE.exec(key);
    if (!m || m[1] !== name || !moduleCache[key]?.loaded) continue;
    if (!m[2]) return moduleCache[key]!.exports;
    copy ??= moduleCache[key]!.exports;
  }
  return copy;
}

/** The library a Terraform element (resource, provider, output, …) was built with; undefined for other constructs. */
export function cdkOf(construct: IConstruct, elements = scan().elements): CdkName | undefined {
  for (const [Element, name] of elements) if (construct instanceof Element) return name;
  return undefined;
}

/** Each library a stack's elements (below the stack itself) were built with, and one element's path. */
export function cdksIn(root: IConstruct): Map<CdkName, string> {
  const found = new Map<CdkName, string>();
  // One look at require.cache for the whole tree: a stack can hold thousands of constructs.
  const { elements } = scan();
  for (const c of root.node.findAll()) {
    if (c === root) continue;
    const name = cdkOf(c, elements);
    if (name && !found.has(name)) found.set(name, c.node.path);
  }
  return found;
}
