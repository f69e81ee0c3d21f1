import { fileURLToPath } from "node:url";
import { ModuleTask, services, type ServicesCondition } from "cdktf-sync";

/** The CTS-style module this task calls, unchanged (`modules/allow-list`). */
export const ALLOW_LIST_MODULE = fileURLToPath(new URL("../../modules/allow-list", import.meta.url));

/** Options of the firewall task. */
export interface PublicAllowListOptions {
  /** Task name (default "allow-list"); also the module block's name, as CTS names it. */
  name?: string;
  /** The tag that makes a service public (default "public"). */
  tag?: string;
  /** The only dir the module writes to (absolute). */
  outputDir: string;
}

/**
 * An inbound allow-list for every Consul service tagged `public`, built by a Terraform module that
 * runs unchanged under CTS. The same task in CTS's HCL:
 *
 * ```hcl
 * task {
 *   name   = "allow-list"
 *   module = "./modules/allow-list"
 *   condition "services" {
 *     regexp = ".*"
 *     filter = "\"public\" in Service.Tags"
 *   }
 *   variable_files = ["allow-list.tfvars"]   # output_dir = "…"
 * }
 * ```
 *
 * Consul filters by tag (so changes to other services never trigger the task) and the module
 * filters again (so it is also safe under a condition without the filter). Health does not
 * matter here on purpose (`passingOnly: false`): a flapping check should not open and close ports.
 */
export function publicAllowList(options: PublicAllowListOptions): ModuleTask<ServicesCondition> {
  const tag = options.tag ?? "public";
  return new ModuleTask({
    name: options.name ?? "allow-list",
    description: `nftables allow-list of the services tagged '${tag}' (CTS module modules/allow-list)`,
    module: ALLOW_LIST_MODULE,
    condition: services({ regexp: ".*", filter: `${JSON.stringify(tag)} in Service.Tags`, passingOnly: false }),
    variables: { output_dir: options.outputDir, tag },
  });
}
