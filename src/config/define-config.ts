import { unknownOptionsError } from "../errors/unknown-options.ts";
import { refuseUnknownOptions, unknownOptions } from "../task/strict-options.ts";
import { ctsConfig } from "./option-schemas.ts";
import type { CtsConfig } from "./types.ts";

/**
 * Declares the configuration in `cts.config.ts` (typed identity). A key it does not take, at any
 * depth (`consul.tls.caFil`), is refused with OPTION_UNKNOWN naming the line: tsx loads the config
 * without a type-check.
 */
export function defineConfig(config: CtsConfig): CtsConfig {
  refuseUnknownOptions(ctsConfig, config, "defineConfig()");
  return config;
}

/**
 * OPTION_UNKNOWN for a config whose default export was written without defineConfig (or changed
 * after it), naming the line of each unknown key in `file`; undefined when every key is known.
 */
export function configOptionsError(config: unknown, file: string): Error | undefined {
  if (!config || typeof config !== "object") return undefined;
  return unknownOptionsError("the config's default export", unknownOptions(ctsConfig, config), { file });
}
