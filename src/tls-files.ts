import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * TLS settings given as files, as CTS's `tls {}` blocks for Terraform Cloud and Vault spell them:
 * the servers' CA (one PEM file, or a folder of them), a client certificate and key, the name to
 * verify, and whether to verify at all. One type for every client that takes them.
 */
export interface TlsFileSettings {
  /** A PEM file of the CA(s) that signed the server's certificate. */
  caCert?: string;
  /** A folder of PEM CA files (`caCert` wins when both are set). */
  caPath?: string;
  /** Client certificate and key (PEM files), for servers that demand one. */
  cert?: string;
  key?: string;
  /** The name to verify the certificate against (and to send as SNI), when it differs from the host. */
  serverName?: string;
  /** false: do not verify the server's certificate (test servers only). Default true. */
  verify?: boolean;
}

/** The files of one TLS setup, by what each is for (every client and server names them its own way). */
export interface TlsFiles {
  /** A PEM file of CA certificates. */
  caFile?: string | undefined;
  /** A folder of PEM CA files (CTS's `ca_path`); `caFile` wins when both are set. */
  caPath?: string | undefined;
  /** This side's certificate and key (PEM files). */
  cert?: string | undefined;
  key?: string | undefined;
}

/** A file of a TLS setup that cannot be used, for the caller's catalogued error naming its setting. */
export interface TlsFileProblem {
  /** Which of the files. */
  role: keyof TlsFiles;
  file: string;
  /** The file system's code (ENOENT, EACCES…), absent for a CA folder that holds no certificate. */
  code?: string;
  /** The code, or else what is wrong ("it holds no PEM certificate"). */
  why: string;
  cause: unknown;
}

/** The PEM contents node:tls takes (`ca`, `cert`, `key`), for the files that were set. */
export interface TlsPems {
  ca?: Buffer | Buffer[];
  cert?: Buffer;
  key?: Buffer;
}

/**
 * Reads the files of a TLS setup: the CA file, or else every certificate of the CA folder (the file
 * wins, as in Consul's and Go's clients), then the certificate and the key. The one reader of TLS
 * files in cts: a file it cannot use goes to `fail`, which throws the caller's catalogued error.
 */
export function readTlsFiles(files: TlsFiles, fail: (problem: TlsFileProblem) => never): TlsPems {
  const read = (role: keyof TlsFiles, file: string, how: (file: string) => Buffer | Buffer[]) => {
    try {
      return how(file);
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      return fail({ role, file, ...(code ? { code } : {}), why: code ?? (cause as Error).message, cause });
    }
  };
  const ca = files.caFile ? read("caFile", files.caFile, readFileSync) : files.caPath ? read("caPath", files.caPath, readCaDir) : undefined;
  const cert = files.cert ? (read("cert", files.cert, readFileSync) as Buffer) : undefined;
  const key = files.key ? (read("key", files.key, readFileSync) as Buffer) : undefined;
  return { ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
}

/**
 * The PEM certificates of a CA directory (CTS's `ca_path`): every file under `dir`, sub-directories
 * included, that holds a certificate; other files (keys, READMEs, hash links to nothing) are
 * skipped. Throws the file system's error when `dir` cannot be read, and an Error when it holds no
 * certificate.
 */
function readCaDir(dir: string): Buffer[] {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() || e.isSymbolicLink())
    .map((e) => join(e.parentPath, e.name))
    .sort();
  const pems = files.flatMap((f) => {
    try {
      const b = readFileSync(f);
      return b.includes("-----BEGIN CERTIFICATE-----") ? [b] : [];
    } catch {
      return []; // a dangling link or an unreadable file is not a CA file
    }
  });
  if (!pems.length) throw new Error("it holds no PEM certificate");
  return pems;
}
