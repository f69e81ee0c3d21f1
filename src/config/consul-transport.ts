import { parseDuration } from "../time/duration.ts";
import { configError, type ReadBlock } from "./hcl-schema.ts";
import type { ConsulTransportOptions } from "../consul/connection.ts";

/**
 * Limits of the HTTP connections to Consul, in Node's terms (CTS's `consul { transport { … } }`):
 * the options of the one socket pool, each CTS key mapped onto one of them below.
 */
export type ConsulTransportConfig = ConsulTransportOptions;

/** CTS's transport keys and the Node knob each becomes (undefined: Node has none). */
const KNOBS: Record<string, { to?: keyof ConsulTransportConfig; kind: "duration" | "count" | "bool"; why?: string }> = {
  dial_keep_alive: { to: "keepAliveMsecs", kind: "duration" },
  dial_timeout: { to: "connectTimeoutMs", kind: "duration" },
  disable_keep_alives: { to: "keepAlive", kind: "bool" },
  idle_conn_timeout: { to: "freeSocketTimeoutMs", kind: "duration" },
  max_idle_conns: { kind: "count", why: "Node's HTTP agent limits idle sockets per host only (max_idle_conns_per_host), not across all hosts; cts talks to one Consul address, so max_idle_conns_per_host is the limit that applies" },
  max_idle_conns_per_host: { to: "maxFreeSockets", kind: "count" },
  tls_handshake_timeout: { to: "tlsHandshakeTimeoutMs", kind: "duration" },
};

/** The transport keys CTS accepts. */
export const CTS_TRANSPORT_KEYS = Object.keys(KNOBS);

/**
 * Maps CTS's `transport {}` block onto {@link ConsulTransportConfig}, with a warning (file:line)
 * for each key Node has no knob for. A value CTS would refuse (not a duration, a negative count)
 * is refused with its place.
 */
export function ctsConsulTransport(block: ReadBlock | undefined): { transport?: ConsulTransportConfig; warnings: string[] } {
  const warnings: string[] = [];
  if (!block) return { warnings };
  const out: ConsulTransportConfig = {};
  for (const [key, value] of Object.entries(block.attrs)) {
    const knob = KNOBS[key]!;
    const line = block.lines[key] ?? block.line;
    const fail = (fix: string): never => {
      throw configError(block.file, line, `consul.transport.${key} ${fix}`);
    };
    let v: number | boolean;
    if (knob.kind === "bool") v = typeof value === "boolean" ? value : fail("must be true or false.");
    else if (knob.kind === "count") v = typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : fail(`must be a whole number >= 0 (got ${JSON.stringify(value)}).`);
    else {
      const ms = typeof value === "string" ? parseDuration(value) : undefined;
      v = ms !== undefined ? ms : fail(`'${String(value)}' is not a duration. Write it as Go does, e.g. "10s" or "1m30s".`);
    }
    if (!knob.to) {
      warnings.push(`${block.file}:${line}: 'consul.transport.${key}' has no effect: ${knob.why}.`);
      continue;
    }
    (out as Record<string, number | boolean>)[knob.to] = key === "disable_keep_alives" ? !v : v;
  }
  return { ...(Object.keys(out).length ? { transport: out } : {}), warnings };
}

/** Problems of a TypeScript config's `consul.transport`. */
export function consulTransportProblems(t: ConsulTransportConfig | undefined, field = "consul.transport"): Array<{ field: string; message: string }> {
  if (t === undefined) return [];
  const problems: Array<{ field: string; message: string }> = [];
  const known = new Set(Object.values(KNOBS).flatMap((k) => (k.to ? [k.to] : [])));
  for (const [k, v] of Object.entries(t)) {
    if (!known.has(k as keyof ConsulTransportConfig)) problems.push({ field: `${field}.${k}`, message: `is not a setting. Use ${[...known].join(", ")}.` });
    else if (k === "keepAlive" ? typeof v !== "boolean" : typeof v !== "number" || !Number.isFinite(v) || v < 0)
      problems.push({ field: `${field}.${k}`, message: k === "keepAlive" ? "must be true or false." : `must be a number >= 0 (${k === "maxFreeSockets" ? "sockets" : "milliseconds"}).` });
  }
  return problems;
}
