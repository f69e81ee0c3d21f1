import type { CtsConfig } from "../config/types.ts";
import type { SkippedServiceListener, Source, SourceData } from "../consul/types.ts";
import { consulClientFor } from "../config/consul-connection.ts";
import { createLogger } from "../log/logger.ts";
import { consulTokenFromVault } from "../watch/consul-token.ts";
import { createCatalogReader } from "../consul/reader.ts";
import { skippedServiceMessage } from "../runtime/skipped-services.ts";

/**
 * A one-shot reader of Consul data built from the config (for `cts synth` and the cdktf app): services
 * Consul cannot serve are left out and told to `onSkipped`.
 */
export function createConsulReader(config: CtsConfig): (source: Source, onSkipped?: SkippedServiceListener) => Promise<SourceData> {
  const tokenSource = consulTokenFromVault(config, { watch: false, log: createLogger().child("vault") });
  const reader = createCatalogReader(consulClientFor(config, tokenSource ? { tokenSource } : {}));
  return (source, onSkipped) => reader.read(source, undefined, onSkipped);
}

/** A SkippedServiceListener for one task of a one-shot command: writes the warning once per name. */
export function warnSkipped(task: string, write: (line: string) => void): SkippedServiceListener {
  const told = new Set<string>();
  return (service) => {
    if (told.has(service)) return;
    told.add(service);
    write(`warning: ${skippedServiceMessage(task, service)}`);
  };
}
