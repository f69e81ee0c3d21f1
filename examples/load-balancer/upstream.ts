import { isIP } from "node:net";
import { render, type ServiceInstance } from "cdktf-sync";

/** One `server` line of an nginx upstream block. */
export interface UpstreamServer {
  /** `host:port`, with IPv6 hosts in brackets. */
  hostPort: string;
  /** The instance id reduced to characters that cannot end the comment it is written in. */
  label: string;
}

/** An upstream block ready to write, and what was left out of it. */
export interface UpstreamConfig {
  content: string;
  servers: UpstreamServer[];
  /** Instances left out because their address or port could not be written safely. */
  skipped: number;
}

/** What the template needs besides the instances. */
export interface UpstreamNames {
  task: string;
  service: string;
  upstream: string;
}

/** The template, in the shared templates dir (`templates/nginx/`). */
export const UPSTREAM_TEMPLATE = "nginx/upstream.conf.hbs";

// RFC 1123 host names: labels of letters, digits and inner hyphens. Nothing that could end a
// directive (`;`, `}`, whitespace, newlines) gets through this or isIP().
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** `host:port` for an instance whose address and port are valid, else undefined. */
export function serverAddress(address: string, port: number): string | undefined {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  const family = isIP(address);
  if (family === 6) return `[${address}]:${port}`;
  if (family === 4 || HOSTNAME.test(address)) return `${address}:${port}`;
  return undefined;
}

/**
 * Renders the upstream block for the given instances. Catalog data is untrusted, and nginx config
 * is a language: an address like `1.2.3.4:80; } server { …` would inject directives. So addresses
 * must be IP literals or host names, ports real ports, and ids only label comments after being
 * reduced to safe characters. Servers are sorted and de-duplicated so equal pools give equal bytes
 * (and so no Terraform run).
 */
export function upstreamConfig(instances: ReadonlyArray<Readonly<ServiceInstance>>, names: UpstreamNames): UpstreamConfig {
  const byHostPort = new Map<string, UpstreamServer>();
  let skipped = 0;
  for (const s of [...instances].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const hostPort = serverAddress(s.address, s.port);
    if (!hostPort) {
      skipped++;
      continue;
    }
    if (!byHostPort.has(hostPort)) byHostPort.set(hostPort, { hostPort, label: s.id.replace(/[^A-Za-z0-9_.:@-]/g, "_").slice(0, 80) });
  }
  const servers = [...byHostPort.values()];
  const content = render({ file: UPSTREAM_TEMPLATE }, { ...names, servers, skipped });
  return { content, servers, skipped };
}

/** Quotes one argument for the POSIX shell that runs a local-exec command. */
export function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}
