import type { CtsConfig } from "../config/types.ts";
import type { Source, SourceData } from "../consul/types.ts";

/** A one-shot reader of Consul data built from the config (filled in when the Consul client lands). */
export function createConsulReader(_config: CtsConfig): (source: Source) => Promise<SourceData> {
  throw new Error("not yet wired");
}
