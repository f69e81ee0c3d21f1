/** The JSON Terraform reads from TF_REATTACH_PROVIDERS for one provider (as `-debug` prints it). */
export interface ReattachConfig {
  Protocol: string;
  ProtocolVersion: number;
  Pid: number;
  Test: boolean;
  Addr: { Network: string; String: string };
}

/** A provider plugin running in debug mode, serving one Terraform command at a time. */
export interface ProviderServer {
  readonly pid: number;
  readonly reattach: ReattachConfig;
  /** Resident memory in MB, undefined once it is gone. */
  rssMb(): number | undefined;
  /** True once the process exited (for whatever reason). */
  readonly exited: boolean;
  /** Called once when the process exits. */
  onExit(listener: () => void): void;
  /** Ends the process (SIGTERM, SIGKILL after a grace period); resolves when it is gone. */
  stop(): Promise<void>;
}

/** What one warm provider process is started for: the binary init installed, in a task's folder and env. */
export interface LaunchSpec {
  /** Real path of the provider binary `init` installed. */
  binary: string;
  /** Working dir the provider runs in (relative paths in resources resolve against it, as with a normal launch). */
  cwd: string;
  /** The environment Terraform would hand the provider. */
  env: Record<string, string>;
  /** Hash of `env`, part of the pool key: a process never serves a command with other credentials. */
  envHash: string;
  /** For logs. */
  task: string;
}

/** Starts provider processes; rejects when the binary cannot serve reattach. */
export interface ProviderLauncher {
  launch(spec: LaunchSpec): Promise<ProviderServer>;
}

/** Limits of the pool. */
export interface WarmLimits {
  /** Processes alive at once, busy and idle together. */
  maxProcesses: number;
  /** Terraform commands one process serves before it is replaced. */
  maxRunsPerProcess: number;
  /** An idle process is ended after this many ms. */
  idleTimeoutMs: number;
  /** A process above this resident size (MB) after a run is replaced. */
  maxRssMb: number;
}

/** Defaults of `driver.terraform.warmProviders`. */
export const DEFAULT_WARM_LIMITS: WarmLimits = { maxProcesses: 8, maxRunsPerProcess: 100, idleTimeoutMs: 5 * 60_000, maxRssMb: 512 };

/** A process checked out for one command; give it back exactly once. */
export interface Lease {
  readonly server: ProviderServer;
  /** "ok": back to the pool (or recycled); "broken": ended, and its binary is not warmed again. */
  release(outcome: "ok" | "broken"): void;
}

/** What the pool holds, for tests and the benchmark. */
export interface WarmProcessInfo {
  pid: number;
  binary: string;
  cwd: string;
  busy: boolean;
  runs: number;
  rssMb: number | undefined;
  reattach: ReattachConfig;
}

interface Entry {
  key: string;
  spec: LaunchSpec;
  server?: ProviderServer;
  busy: boolean;
  runs: number;
  lastUsed: number;
  idleTimer?: NodeJS.Timeout;
  stopping: boolean;
  /** End it when its command gives it back (task deleted, pool cooled while busy). */
  retire: boolean;
}

/** The pool key of a launch: a process serves only the binary, folder and environment it was started for. */
const keyOf = (s: LaunchSpec) => `${s.binary}\0${s.cwd}\0${s.envHash}`;

/** What the pool works with. */
export interface WarmPoolDeps {
  launcher: ProviderLauncher;
  limits: WarmLimits;
  /** The idle timeout was set by the user: `keepWarm` leaves it alone. */
  idleTimeoutSet?: boolean;
  log?: (line: string) => void;
  now?: () => number;
}

/**
 * A bounded pool of warm provider processes keyed by (binary, working dir, env). Checkout is
 * exclusive: one process serves one Terraform command at a time. A checkout that finds nothing
 * free and no room returns undefined, and the command launches its providers the normal way.
 */
export class WarmPool {
  private readonly entries = new Set<Entry>();
  /** Binaries not warmed any more, with the reason. */
  private readonly cold = new Map<string, string>();
  private readonly stops = new Set<Promise<void>>();
  private readonly launches = new Set<Promise<unknown>>();
  private readonly now: () => number;
  private closed = false;
  /** Idle processes are kept (no idle timeout): the daemon's tasks run sooner than a provider starts. */
  private kept = false;

  constructor(private readonly deps: WarmPoolDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** A free process for `spec` (launched when there is room), or undefined: the command then launches its own. */
  async checkout(spec: LaunchSpec): Promise<Lease | undefined> {
    if (this.closed || this.deps.limits.maxProcesses < 1 || this.cold.has(spec.binary)) return undefined;
    const key = keyOf(spec);
    for (const e of this.entries) {
      if (e.key !== key || e.busy || !e.server) continue;
      if (e.server.exited) {
        this.end(e);
        continue;
      }
      e.busy = true;
      clearTimeout(e.idleTimer);
      return this.lease(e);
    }
    if (!this.makeRoom()) return undefined;
    // Counted while it starts, so parallel checkouts cannot overshoot the bound.
    const e: Entry = { key, spec, busy: true, runs: 0, lastUsed: this.now(), stopping: false, retire: false };
    this.entries.add(e);
    let server: ProviderServer;
    const launching = this.deps.launcher.launch(spec);
    this.launches.add(launching);
    try {
      server = await launching;
    } catch (err) {
      this.entries.delete(e);
      this.markCold(spec.binary, err instanceof Error ? err.message : String(err));
      return undefined;
    } finally {
      this.launches.delete(launching);
    }
    e.server = server;
    server.onExit(() => {
      // An exit we did not ask for is a crash (or someone killed it): do not trust this binary warm again.
      if (!e.stopping) this.markCold(spec.binary, `process ${server.pid} exited unexpectedly`);
      this.entries.delete(e);
      clearTimeout(e.idleTimer);
    });
    if (this.closed || e.retire || server.exited) {
      this.end(e);
      return undefined;
    }
    return this.lease(e);
  }

  /** Stops warming `binary` (its runs launch it the normal way from now on), saying why once. */
  markCold(binary: string, why: string): void {
    if (this.cold.has(binary)) return;
    this.cold.set(binary, why);
    this.deps.log?.(`warm providers: not warming ${binary} any more (${why}); its runs launch it the normal way`);
  }

  /** Why a binary is not warmed, or undefined when it is. */
  coldReason(binary: string): string | undefined {
    return this.cold.get(binary);
  }

  /** Ends the idle processes working in `cwd` (a deleted task), or every idle one. Busy ones end when released. */
  cool(cwd?: string): Promise<void> {
    for (const e of this.entries) {
      if (cwd !== undefined && e.spec.cwd !== cwd) continue;
      if (e.busy) e.retire = true;
      else this.end(e);
    }
    return Promise.all([...this.stops]).then(() => undefined);
  }

  /** Ends every process and launches no more; resolves when they are gone. */
  async close(): Promise<void> {
    this.closed = true;
    for (const e of [...this.entries]) this.end(e);
    // A process still starting is ended as soon as its launch settles (checkout sees `closed`).
    while (this.launches.size || this.stops.size) await Promise.allSettled([...this.launches, ...this.stops]);
  }

  /** The processes alive now. */
  processes(): WarmProcessInfo[] {
    return [...this.entries]
      .filter((e) => e.server)
      .map((e) => ({ pid: e.server!.pid, binary: e.spec.binary, cwd: e.spec.cwd, busy: e.busy, runs: e.runs, rssMb: e.server!.rssMb(), reattach: e.server!.reattach }));
  }

  private end(e: Entry): void {
    clearTimeout(e.idleTimer);
    // Still starting: it is ended as soon as its launch settles.
    if (!e.server) return void (e.retire = true);
    if (e.stopping) return;
    e.stopping = true;
    this.entries.delete(e);
    const p = e.server.stop().finally(() => this.stops.delete(p));
    this.stops.add(p);
  }

  /**
   * Keeps idle processes until the pool closes (`true`), or ends them after the idle timeout again
   * (`false`), unless the user set the idle timeout: a change after a quiet spell then finds its
   * providers running, as back-to-back changes do (the daemon asks this when its synthesis worker
   * stays warm, runtime/warm-policy.ts). The number of processes stays bounded by `maxProcesses`.
   */
  keepWarm(on: boolean): void {
    if (this.deps.idleTimeoutSet) return;
    this.kept = on;
    for (const e of this.entries) if (!e.busy && e.server && !e.stopping) this.armIdle(e);
  }

  private park(e: Entry): void {
    e.busy = false;
    e.lastUsed = this.now();
    this.armIdle(e);
  }

  private armIdle(e: Entry): void {
    clearTimeout(e.idleTimer);
    e.idleTimer = undefined;
    if (this.kept) return;
    e.idleTimer = setTimeout(() => this.end(e), this.deps.limits.idleTimeoutMs);
    e.idleTimer.unref?.();
  }

  /** Makes room for one more process by ending the least recently used idle one; false when all are busy. */
  private makeRoom(): boolean {
    if (this.entries.size < this.deps.limits.maxProcesses) return true;
    let oldest: Entry | undefined;
    for (const e of this.entries) if (!e.busy && e.server && (!oldest || e.lastUsed < oldest.lastUsed)) oldest = e;
    if (!oldest) return false;
    this.end(oldest);
    return true;
  }

  private lease(e: Entry): Lease {
    let released = false;
    return {
      server: e.server!,
      release: (outcome) => {
        if (released) return;
        released = true;
        this.afterRun(e, outcome);
      },
    };
  }

  /** A process back from a command: ended (broken, retired, worn out, too big) or parked for the next. */
  private afterRun(e: Entry, outcome: "ok" | "broken"): void {
    const { limits, log } = this.deps;
    e.runs++;
    if (outcome === "broken") {
      this.markCold(e.spec.binary, "a run through it failed with a transport error");
      return this.end(e);
    }
    if (this.closed || e.retire || e.server!.exited) return this.end(e);
    const rss = e.server!.rssMb();
    if (e.runs >= limits.maxRunsPerProcess) {
      log?.(`warm providers: recycling pid ${e.server!.pid} after ${e.runs} runs`);
      return this.end(e);
    }
    if (rss !== undefined && rss > limits.maxRssMb) {
      log?.(`warm providers: recycling pid ${e.server!.pid}: ${rss} MB resident is above ${limits.maxRssMb} MB`);
      return this.end(e);
    }
    this.park(e);
  }
}

/** A warm pool (see `WarmPool`). */
export function createWarmPool(deps: WarmPoolDeps): WarmPool {
  return new WarmPool(deps);
}
