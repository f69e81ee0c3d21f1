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
