import { readdir, readFile, readlink } from "node:fs/promises";

/** The consul backend every fault test uses. */
export const BACKEND = { consul: { path: "consul-terraform-sync/terraform", gzip: true } };

/** main.tf.json writing `content` to `filename`, after a provisioner that sleeps `seconds` (0: none). */
export function slowFileConfig(filename: string, content: string, seconds = 0): string {
  const resource: Record<string, unknown> = {
    local_file: { out: { filename, content, ...(seconds ? { depends_on: ["terraform_data.slow"] } : {}) } },
  };
  if (seconds) {
    resource.terraform_data = { slow: { triggers_replace: [content], provisioner: [{ "local-exec": { command: `sleep ${seconds}` } }] } };
  }
  return JSON.stringify({
    terraform: { backend: BACKEND, required_providers: { local: { source: "hashicorp/local", version: ">= 2.0" } } },
    resource,
  });
}

/**
 * Processes whose cwd is inside `dir` or whose command line mentions it (tofu, providers, provisioner
 * shells). `exceptWarmOf`: leave out the warm provider servers (`… -debug`) that this live process
 * keeps on purpose (driver.terraform.warmProviders); they end when it stops.
 */
export async function processesIn(dir: string, opts: { exceptWarmOf?: number } = {}): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmd = (await readFile(`/proc/${pid}/cmdline`, "utf8")).replace(/\0/g, " ").trim();
      if (!cmd) continue; // a zombie
      const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => "");
      if (!(cwd.startsWith(dir) || cmd.includes(dir))) continue;
      if (opts.exceptWarmOf !== undefined && / -debug$/.test(cmd) && (await parentOf(pid)) === opts.exceptWarmOf) continue;
      found.push(`${pid} ${cmd}`);
    } catch {
      /* exited meanwhile, or not ours to read */
    }
  }
  return found;
}

/** The parent pid of a process (from /proc/PID/stat, after the command name in parentheses). */
async function parentOf(pid: string): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const ppid = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
  return ppid ? Number(ppid) : undefined;
}
