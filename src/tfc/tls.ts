import { readdirSync, readFileSync } from "node:fs";
import type { AgentOptions } from "node:https";
import { join } from "node:path";
import { CtsError } from "../errors.ts";

/** TLS settings for Terraform Enterprise behind a private CA (CTS's driver `tls` block). */
export interface TfcTlsOptions {
  /** A PEM file of the CA(s) that signed the server's certificate. */
  caCert?: string;
  /** A directory of PEM CA files (caCert wins when both are set). */
  caPath?: string;
  /** Client certificate and key (PEM files), for servers that demand one. */
  cert?: string;
  key?: string;
  /** The name to verify the certificate against (and to send as SNI), when it differs from the hostname. */
  serverName?: string;
  /** false: do not verify the server's certificate (test servers only). Default true. */
  verify?: boolean;
}

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
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (cause) {
    throw new CtsError("TFC_TLS_FILE", "usage", `Cannot read driver.terraformCloud.tls.caPath '${dir}' (${(cause as NodeJS.ErrnoException).code ?? cause}). Point it at a directory of PEM CA files.`, { cause });
  }
  const pems = names.map((n) => join(dir, n)).flatMap((f) => {
    try {
      const b = readFileSync(f);
      return b.includes("-----BEGIN CERTIFICATE-----") ? [b] : [];
    } catch {
      return []; // sub-directories and unreadable entries are not CA files
    }
  });
  if (!pems.length) throw new CtsError("TFC_TLS_FILE", "usage", `driver.terraformCloud.tls.caPath '${dir}' holds no PEM certificate. Point it at a directory of CA files.`);
  return pems;
}
