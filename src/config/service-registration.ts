import type { ReadBlock } from "./hcl-schema.ts";
import { configError } from "./hcl-schema.ts";
import type { Problem } from "../errors/problems.ts";

/**
 * How this instance registers itself in Consul (CTS's `consul { service_registration { … } }`).
 * Defaults as CTS: on, service `consul-terraform-sync`, the node's address, no namespace, and an
 * HTTP check on `/v1/health` of the API.
 */
export interface ServiceRegistrationConfig {
  /** false: do not register (default true). */
  enabled?: boolean;
  /** The service name (default `consul-terraform-sync`). */
  serviceName?: string;
  /** The address advertised (default: the API's listen address, or the node's for a wildcard listener). */
  address?: string;
  /** Consul Enterprise namespace of the service (Consul CE refuses it; the daemon logs that and goes on). */
  namespace?: string;
  /** The HTTP health check on `/v1/health`: false turns it off; `address` (with http:// or https://) is where the agent reaches the API. */
  defaultCheck?: false | { address?: string };
}

/** `default_check.address` must be a URL with an http or https scheme, as CTS checks it. */
export function checkAddressProblem(address: string): string | undefined {
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return `'${address}' is not a URL. Write it with its scheme, e.g. "http://10.0.0.5:8558".`;
  }
  return url.protocol === "http:" || url.protocol === "https:" ? undefined : `'${address}' uses ${url.protocol}; the check needs http:// or https://.`;
}

/** CTS's `service_registration {}` block as our config (undefined when everything is the default). */
export function ctsServiceRegistration(reg: ReadBlock | undefined): ServiceRegistrationConfig | undefined {
  if (!reg) return undefined;
  const a = reg.attrs;
  const out: ServiceRegistrationConfig = {};
  if (a.enabled === false) return { enabled: false };
  if (a.service_name !== undefined) out.serviceName = String(a.service_name);
  if (a.address !== undefined && a.address !== "") out.address = String(a.address);
  if (a.namespace !== undefined && a.namespace !== "") out.namespace = String(a.namespace);
  const check = reg.blocks.default_check?.[0];
  if (check) {
    if (check.attrs.enabled === false) out.defaultCheck = false;
    else if (check.attrs.address !== undefined && check.attrs.address !== "") {
      const address = String(check.attrs.address);
      const problem = checkAddressProblem(address);
      if (problem) throw configError(check.file, check.lines.address ?? check.line, `service_registration.default_check.address ${problem}`);
      out.defaultCheck = { address };
    }
  }
  return Object.keys(out).length ? out : undefined;
}

/** Problems of a TypeScript config's `consul.serviceRegistration`. */
export function serviceRegistrationProblems(reg: ServiceRegistrationConfig | undefined, field = "consul.serviceRegistration"): Problem[] {
  if (reg === undefined) return [];
  const problems: Problem[] = [];
  for (const k of ["serviceName", "address", "namespace"] as const)
    if (reg[k] !== undefined && (typeof reg[k] !== "string" || reg[k] === "")) problems.push({ field: `${field}.${k}`, message: "must be a non-empty string." });
  if (reg.enabled !== undefined && typeof reg.enabled !== "boolean") problems.push({ field: `${field}.enabled`, message: "must be true or false." });
  const check = reg.defaultCheck;
  if (check !== undefined && check !== false) {
    const address = check.address;
    const problem = address === undefined ? undefined : typeof address === "string" ? checkAddressProblem(address) : "must be a string.";
    if (problem) problems.push({ field: `${field}.defaultCheck.address`, message: problem });
  }
  return problems;
}
