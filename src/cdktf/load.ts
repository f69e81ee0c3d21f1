import type * as Cdktf from "cdktf";
import { createRequire } from "node:module";
import { hookLoadedCdktf } from "./cdktf-literals.ts";

// cdktf costs seconds of CPU to load; a daemon whose tasks are all module tasks never loads it.
let cdktfModule: typeof Cdktf | undefined;

/** cdktf, with the hooks that keep literal text literal (cdktf-literals.ts) installed before first use. */
export function cdktf(): typeof Cdktf {
  if (cdktfModule) return cdktfModule;
  cdktfModule = createRequire(import.meta.url)("cdktf") as typeof Cdktf;
  hookLoadedCdktf();
  return cdktfModule;
}
