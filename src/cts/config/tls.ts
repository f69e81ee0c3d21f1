import type { TlsFileSettings } from "../../tls-files.ts";
import type { HclValue } from "../../config/hcl.ts";

/**
 * A CTS `tls {}` block's file keys (`ca_cert`, `ca_path`, `cert`, `key`, `server_name`) as
 * {@link TlsFileSettings}; `verify` as the caller read it (each block checks its keys its own way).
 */
export function tlsFileSettings(attrs: Record<string, HclValue>, verify: boolean | undefined): TlsFileSettings {
  return {
    ...(attrs.ca_cert !== undefined ? { caCert: String(attrs.ca_cert) } : {}),
    ...(attrs.ca_path !== undefined ? { caPath: String(attrs.ca_path) } : {}),
    ...(attrs.cert !== undefined ? { cert: String(attrs.cert) } : {}),
    ...(attrs.key !== undefined ? { key: String(attrs.key) } : {}),
    ...(attrs.server_name !== undefined ? { serverName: String(attrs.server_name) } : {}),
    ...(verify === false ? { verify: false } : {}),
  };
}
