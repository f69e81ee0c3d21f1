import { readdirSync, realpathSync, statSync } from "node:fs";
import { readKept } from "../driver/safe-files.ts";
import { join, sep } from "node:path";

/** A provider plugin `init` installed for a task: its address in the lock file and its binary. */
export interface InstalledProvider {
  /** "registry.opentofu.org/hashicorp/local": the key Terraform matches TF_REATTACH_PROVIDERS against. */
  address: string;
  version: string;
  /** Real path of the executable (through the plugin cache's symlinks). */
  binary: string;
}

const PROVIDER_BLOCK = /^provider\s+"([^"]+)"\s*\{([\s\S]*?)^\}/gm;
const VERSION = /^\s*version\s*=\s*"([^"]+)"/m;
// Provider addresses are hostname/namespace/type; nothing that could climb out of .terraform.
const ADDRESS = /^[a-z0-9.-]+(:\d+)?\/[A-Za-z0-9_-]+\/[a-z0-9_-]+$/;
const VERSION_TEXT = /^[0-9A-Za-z.+-]+$/;

/** The provider addresses and versions a `.terraform.lock.hcl` pins. */
export function parseLockFile(text: string): Array<{ address: string; version: string }> {
  const out: Array<{ address: string; version: string }> = [];
  for (const m of text.matchAll(PROVIDER_BLOCK)) {
    const version = VERSION.exec(m[2]!)?.[1];
    if (version && ADDRESS.test(m[1]!) && VERSION_TEXT.test(version)) out.push({ address: m[1]!, version });
  }
  return out;
}

/** Terraform's platform name for this machine ("linux_amd64"). */
export function platform(): string {
  const arch = { x64: "amd64", arm64: "arm64", ia32: "386", arm: "arm" }[process.arch as string] ?? process.arch;
  return `${process.platform}_${arch}`;
}

/**
 * The provider binaries `init` installed in a task folder: for each provider of the lock file, the
 * `terraform-provider-<type>*` executable under `.terraform/providers/<address>/<version>/<platform>`,
 * exactly where Terraform itself looks, so the lock file's versions and hashes still hold. A
 * provider whose folder is missing or odd is left out (it launches the normal way). Read before
 * every warm command, so synchronously: a lock file and a folder listing, no thread-pool round trips.
 */
export async function installedProviders(taskDir: string): Promise<InstalledProvider[]> {
  let lock: string | undefined;
  try {
    // Never through a link (the driver refuses one before any command; this read is no exception).
    lock = readKept(join(taskDir, ".terraform.lock.hcl"));
  } catch {
    return [];
  }
  if (lock === undefined) return [];
  const found: InstalledProvider[] = [];
  for (const { address, version } of parseLockFile(lock)) {
    const type = address.split("/")[2]!;
    const dir = join(taskDir, ".terraform", "providers", ...address.split("/"), version, platform());
    try {
      const names = readdirSync(dir).filter((n) => n === `terraform-provider-${type}` || n.startsWith(`terraform-provider-${type}_`));
      if (names.length !== 1) continue;
      const binary = realpathSync.native(join(dir, names[0]!));
      const st = statSync(binary);
      if (!st.isFile() || (st.mode & 0o111) === 0 || binary.split(sep).includes("..")) continue;
      found.push({ address, version, binary });
    } catch {
      continue;
    }
  }
  return found;
}
