import { file, provider } from "@cdktf/provider-local";
import { DataResource } from "cdktf";
import { createHash } from "node:crypto";
import { isAbsolute, join } from "node:path";
import { CtsError, Task, services, type BufferPeriodOption, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";
import { shellQuote, upstreamConfig } from "./upstream.ts";

/** How the task reaches the nginx it reloads. */
export interface NginxInstance {
  /** Absolute path of the nginx binary. */
  binary: string;
  /** nginx's prefix dir (`-p`). */
  prefix: string;
  /** nginx's main config (`-c`); it must `include` the upstream file. */
  conf: string;
  /** Error log for the reload command (`-e`), so it never touches /var/log. */
  errorLog?: string;
}

/** Options of the load-balancer task. */
export interface NginxUpstreamPoolOptions {
  /** Task name (default "web-lb"). */
  name?: string;
  /** The Consul service whose passing instances form the pool (default "web"). */
  service?: string;
  /** nginx upstream name (default: the service name). */
  upstream?: string;
  /** The only dir the task writes to (absolute); the file is `<dir>/upstream-<upstream>.conf`. */
  dir: string;
  nginx: NginxInstance;
  bufferPeriod?: BufferPeriodOption | false;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Keeps an nginx upstream pool equal to the passing instances of a Consul service: renders the
 * upstream block with handlebars, writes it with `local_file`, and reloads nginx through a
 * `terraform_data` whose trigger is the content's hash, so nginx reloads exactly when the pool
 * changed (and only after the file is written).
 */
export class NginxUpstreamPool extends Task<ServicesCondition> {
  /** The file the task keeps (include it from nginx.conf). */
  readonly upstreamFile: string;
  private readonly service: string;
  private readonly upstream: string;
  private readonly nginx: NginxInstance;

  constructor(options: NginxUpstreamPoolOptions) {
    const service = options.service ?? "web";
    const name = options.name ?? "web-lb";
    super({
      name,
      description: `nginx upstream '${options.upstream ?? service}' = the passing instances of '${service}', reloaded on change`,
      condition: services({ names: [service] }),
      ...(options.bufferPeriod !== undefined ? { bufferPeriod: options.bufferPeriod } : {}),
    });
    this.service = service;
    this.upstream = options.upstream ?? service;
    // These end up in a file name, nginx config and a shell command: fail at config load, not at apply.
    if (!NAME.test(this.upstream))
      throw new CtsError("TASK_OPTION_INVALID", "usage", `upstream '${this.upstream}' must be 1-64 letters, digits, '_' or '-' (it names the upstream block and its file).`, { task: name });
    for (const [field, path] of [["dir", options.dir], ["nginx.binary", options.nginx.binary], ["nginx.prefix", options.nginx.prefix], ["nginx.conf", options.nginx.conf]] as const)
      if (!isAbsolute(path))
        throw new CtsError("TASK_OPTION_INVALID", "usage", `${field} '${path}' must be an absolute path (Terraform runs in the task's working dir, so a relative path would point there).`, { task: name });
    this.upstreamFile = join(options.dir, `upstream-${this.upstream}.conf`);
    this.nginx = options.nginx;
  }

  /** The command the reload runs: test the config, then signal the running master to reload. */
  reloadCommand(): string {
    const { binary, prefix, conf, errorLog } = this.nginx;
    const args = ["-p", prefix, "-c", conf, ...(errorLog ? ["-e", errorLog] : [])].map(shellQuote).join(" ");
    return `${shellQuote(binary)} -t -q ${args} && ${shellQuote(binary)} ${args} -s reload`;
  }

  override synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    const { content } = upstreamConfig(input.services, { task: this.name, service: this.service, upstream: this.upstream });
    const pool = new file.File(scope, "upstream", {
      // A fixed path from the task's options: catalog data never chooses where we write.
      filename: this.upstreamFile,
      content,
      filePermission: "0640",
      directoryPermission: "0750",
    });
    new DataResource(scope, "reload", {
      // Replaced (so its provisioner runs) exactly when the file's content changes.
      triggersReplace: { upstream_sha256: createHash("sha256").update(content).digest("hex") },
      dependsOn: [pool],
      provisioners: [{ type: "local-exec", command: this.reloadCommand() }],
    });
  }
}
