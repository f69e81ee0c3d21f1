import type * as Cdktf from "cdktf";
import { createRequire } from "node:module";
import { defaultCdk, loadedCdk, type CdkName } from "./cdk-library.ts";
import { activeCdk, hookLoadedCdks } from "./cdktf-literals.ts";
import { deferCdktfZipLibrary } from "./lazy-zip-library.ts";

// cdktf costs seconds of CPU to load; a daemon whose tasks are all module tasks never loads it.
const modules = new Map<CdkName, typeof Cdktf>();

/**
 * A CDK library (cdktf or cdktn: one API, so one type), with the hooks that keep literal text
 * literal (cdktf-literals.ts) installed before first use. The copy the task code loaded comes
 * first (its classes are the ones its constructs extend); else it resolves from cts's install.
 */
export function cdk(name: CdkName): typeof Cdktf {
  const loaded = modules.get(name);
  if (loaded) return loaded;
  deferCdktfZipLibrary();
  const module = (loadedCdk(name) ?? createRequire(import.meta.url)(name)) as typeof Cdktf;
  modules.set(name, module);
  hookLoadedCdks(name);
  return module;
}

/** cdktf, hooked (see `cdk`). */
export function cdktf(): typeof Cdktf {
  return cdk("cdktf");
}

/** The library of the synthesis running now; outside one, the library task code loaded (see defaultCdk). */
export function currentCdk(): typeof Cdktf {
  return cdk(activeCdk() ?? defaultCdk());
}
