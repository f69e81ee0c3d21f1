import type { AgentOptions } from "node:https";
import { CtsError } from "../errors/cts-error.ts";
import { readTlsFiles, type TlsFileProblem, type TlsFileSettings } from "../tls-files.ts";

/** TLS settings for Terraform Enterprise behind a private CA (CTS's driver `tls` block). */
export type TfcTlsOptions = TlsFileSettings;

/** node:https agent options for the settings; an unreadable file fails naming the setting. */
export function tlsAgentOptions(tls: TfcTlsOptions = {}): AgentOptions {
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new CtsError("TFC_TLS_FILE", "usage", "driver.terraformCloud.tls needs both cert and key for a client certificate, or neither.");
  }
  return {
    ...readTlsFiles({ caFile: tls.caCert, caPath: tls.caPath, cert: tls.cert, key: tls.key }, tlsFileError),
    ...(tls.serverName ? { servername: tls.serverName } : {}),
    rejectUnauthorized: tls.verify !== false,
  };
}

/** A file of the `tls` block that cannot be used, naming its setting. */
function tlsFileError(p: TlsFileProblem): never {
  if (p.role === "caPath") {
    if (p.code) throw new CtsError("TFC_TLS_FILE", "usage", `Cannot read driver.terraformCloud.tls.caPath '${p.file}' (${p.code}). Point it at a directory of PEM CA files.`, { cause: p.cause });
    throw new CtsError("TFC_TLS_FILE", "usage", `driver.terraformCloud.tls.caPath '${p.file}' holds no PEM certificate. Point it at a directory of CA files.`);
  }
  const field = { caFile: "caCert", cert: "cert", key: "key" }[p.role];
  throw new CtsError("TFC_TLS_FILE", "usage", `Cannot read driver.terraformCloud.tls.${field} '${p.file}' (${p.code ?? p.cause}). Make it a readable PEM file.`, {
    cause: p.cause,
    detail: { field: `driver.terraformCloud.tls.${field}`, file: p.file },
  });
}
