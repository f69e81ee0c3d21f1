import { createHash } from "node:crypto";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { installedProviders, type InstalledProvider } from "./installed-providers.ts";
import type { Lease, ReattachConfig, WarmPool, WarmProcessInfo } from "./warm-pool.ts";

/** Warm providers checked out for one Terraform command. */
export interface WarmCheckout {
  /** TF_REATTACH_PROVIDERS for the command. */
  env: Record<string, string>;
  /** Pids of the provider processes serving it. */
  pids: number[];
  /** True when `err` (the command's failure) came from a warm provider, not from the configuration. */
  isWarmFailure(err: unknown): boolean;
  /** Gives the processes back; `broken` ends them and stops warming their binaries. */
  release(broken: boolean): void;
}

// What Terraform says when it cannot reach or lost a reattached provider (connection refused, a
// gone socket, a provider that died mid-RPC), as opposed to errors the provider itself reports.
const TRANSPORT = [
  /reattachment process not found/i,
  /failed to instantiate provider/i,
  /plugin did not respond/i,
  /rpc error: code = (Unavailable|Canceled|Internal) desc = (connection|transport|error reading|grpc)/i,
  /transport is closing/i,
  /error reading from server/i,
  /connection refused/i,
  /connection reset by peer/i,
  /broken pipe/i,
  /plugin exited/i,
];

/** True when a command's error text reads like a lost connection to a provider plugin. */
export function isTransportFailure(text: string): boolean {
  return TRANSPORT.some((re) => re.test(text));
}

const hashEnv = (env: Record<string, string>) =>
  createHash("sha256")
    .update(JSON.stringify(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))
    .digest("hex");

/**
 * Points plan/apply/destroy at warm provider processes: finds the binaries `init` installed for
 * the task, checks one process per binary out of the pool, and builds TF_REATTACH_PROVIDERS keyed
 * by the lock file's addresses (registry.opentofu.org/... for tofu, registry.terraform.io/... for
 * terraform). Providers the pool cannot serve are simply left out: Terraform launches them itself.
 */
export function createWarmProviders(pool: WarmPool, find: (dir: string) => Promise<InstalledProvider[]> = installedProviders) {
  return {
    async checkout(task: string, dir: string, env: Record<string, string>): Promise<WarmCheckout | undefined> {
      // Someone who set TF_REATTACH_PROVIDERS (debugging a provider) keeps their own.
      if (env.TF_REATTACH_PROVIDERS) return undefined;
      const providers = await find(dir);
      if (providers.length === 0) return undefined;
      const envHash = hashEnv(env);
      const leases: Lease[] = [];
      const reattach: Record<string, ReattachConfig> = {};
      try {
        for (const p of providers) {
          const lease = await pool.checkout({ binary: p.binary, cwd: dir, env, envHash, task });
          if (!lease) continue;
          leases.push(lease);
          reattach[p.address] = lease.server.reattach;
        }
      } catch (err) {
        for (const l of leases) l.release("ok");
        throw err;
      }
      if (leases.length === 0) return undefined;
      return {
        env: { TF_REATTACH_PROVIDERS: JSON.stringify(reattach) },
        pids: leases.map((l) => l.server.pid),
        isWarmFailure(err: unknown): boolean {
          if (!(err instanceof CtsError) || err.code !== "TERRAFORM_FAILED") return false;
          if (leases.some((l) => l.server.exited)) return true;
          return isTransportFailure(`${messageOf(err)}\n${String(err.detail.errors ?? "")}`);
        },
        release(broken: boolean): void {
          for (const l of leases) l.release(broken || l.server.exited ? "broken" : "ok");
        },
      };
    },
  };
}

/** Where the providers of a run's main command come from: warm processes of a pool, or Terraform's own launch. */
export interface ProviderSource {
  /**
   * Runs `command`, pointed at warm providers when there are (their env comes as `extraEnv`); when
   * a warm provider fails it (crashed, unreachable), runs it once more with a normal launch.
   * `env` is the command's environment (part of which processes fit it).
   */
  run<T>(task: string, dir: string, env: () => Record<string, string>, command: (extraEnv?: Record<string, string>) => Promise<T>): Promise<T>;
  /** The warm processes alive now. */
  processes(): WarmProcessInfo[];
  /** Ends the idle processes working in `dir` (a deleted task), or every idle one; busy ones end when their command does. */
  cool(dir?: string): Promise<void>;
  /** Keeps idle processes instead of ending them after the idle timeout (see WarmPool.keepWarm). */
  keepWarm(on: boolean): void;
  /** Ends every process; later commands launch their providers the normal way. */
  close(): Promise<void>;
}

/** Warm providers off: Terraform launches every provider itself. */
export const launchedProviders: ProviderSource = {
  run: (_task, _dir, _env, command) => command(),
  processes: () => [],
  cool: async () => {},
  keepWarm: () => {},
  close: async () => {},
};

/** Providers from a pool of warm processes (warm-pool.ts), checked out per command. */
export class PooledProviders implements ProviderSource {
  private closed = false;
  private readonly checkouts: ReturnType<typeof createWarmProviders>;

  constructor(
    private readonly pool: WarmPool,
    private readonly o: {
      /** Runs the checkout under the plugin cache's shared lock (it reads the binaries init installed). */
      shared: <T>(job: () => Promise<T>) => Promise<T>;
      /** The driver's log, per task. */
      log?: (task: string, line: string) => void;
      find?: (dir: string) => Promise<InstalledProvider[]>;
    },
  ) {
    this.checkouts = createWarmProviders(pool, o.find);
  }

  async run<T>(task: string, dir: string, env: () => Record<string, string>, command: (extraEnv?: Record<string, string>) => Promise<T>): Promise<T> {
    const checkout = this.closed ? undefined : await this.o.shared(() => this.checkouts.checkout(task, dir, env()));
    if (!checkout) return command();
    let broken = false;
    try {
      return await command(checkout.env);
    } catch (err) {
      broken = checkout.isWarmFailure(err);
      if (!broken) throw err;
      this.o.log?.(task, `a warm provider process failed this run (${messageOf(err)}); running it once more with providers launched the normal way`);
    } finally {
      checkout.release(broken);
    }
    return command();
  }

  processes(): WarmProcessInfo[] {
    return this.pool.processes();
  }

  cool(dir?: string): Promise<void> {
    return this.pool.cool(dir);
  }

  keepWarm(on: boolean): void {
    this.pool.keepWarm(on);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pool.close();
  }
}
