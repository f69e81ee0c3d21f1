import { readFileSync } from "node:fs";
import type { AgentOptions } from "node:https";
import { CtsError } from "../errors.ts";
import { readCaDir } from "../ca-dir.ts";
import type { TlsFileSettings } from "../tls-files.ts";

/** TLS settings for Terraform Enterprise behind a private CA (CTS's driver `tls` block). */
export type TfcTlsOptions = TlsFileSettings;

/** node:https agent options for the settings; an unreadable file fails naming the setting. */
export function tlsAgentOptions(tls: TfcTlsOptions = {}): AgentOptions {
  const ca = tls.caCert ? [read(tls.caCert, "caCert")] : tls.caPath ? readCaPath(tls.caPath) : undefined;
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new CtsError("TFC_TLS_FILE", "usage", "driver.terraformCloud.tls needs both cert and key for a client certificate, or neither.");
  }
  return {
    ...(ca ? { ca } : {}),
    ...(tls.cert ? { cert: read(tls.cert, "cert") } : {}),
    ...(tls.key ? { key: read(tls.key, "key") } : {}),
    ...(tls.serverName ? { servername: tls.serverName } : {}),
    rejectUnauthorized: tls.verify !== false,
  };
}

function read(file: string, field: string): Buffer {
  try {
    return readFileSync(file);
  } catch (cause) {
    throw new CtsError("TFC_TLS_FILE", "usage", `Cannot read driver.terraformCloud.tls.${field} '${file}' (${(cause as NodeJS.ErrnoException).code ?? cause}). Make it a readable PEM file.`, {
      cause,
      detail: { field: `driver.terraformCloud.tls.${field}`, file },
    });
  }
}

function readCaPath(dir: string): Buffer[] {
  try {
    return readCaDir(dir);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code) throw new CtsError("TFC_TLS_FILE", "usage", `Cannot read driver.terraformCloud.tls.caPath '${dir}' (${code}). Point it at a directory of PEM CA files.`, { cause });
    throw new CtsError("TFC_TLS_FILE", "usage", `driver.terraformCloud.tls.caPath '${dir}' holds no PEM certificate. Point it at a directory of CA files.`);
  }
}
