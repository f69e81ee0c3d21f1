import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { demoPaths, type DemoEnvironment } from "../../examples/demo-environment.ts";
import { startConsulAgent, type ConsulAgent } from "./consul-agent.ts";
import { startDaemon, type Daemon } from "./daemon.ts";
import { startNginx, type Nginx } from "./nginx.ts";
import { freePort } from "./ports.ts";
import { waitUntil } from "./processes.ts";
import type { DemoTools } from "./tools.ts";
import { startWebInstance, webRegistration, type WebInstance } from "./web-instances.ts";

/** The examples' config the daemon runs. */
export const EXAMPLES_CONFIG = fileURLToPath(new URL("../../examples/cts.config.ts", import.meta.url));

/** What the demo needs from the caller. */
export interface DemoOptions {
  tools: DemoTools;
  /** Absolute path of nginx (see ensureNginx). */
  nginx: string;
  /** Echo every daemon log line here (e.g. `--verbose`). */
  echoDaemon?: (line: string) => void;
}

/** The allow-list the firewall task wrote (allow-list.json). */
export interface AllowList {
  tag: string;
  allow: Array<{ service: string; id: string; address: string; port: number; protocol: string }>;
}

/** Thrown by a start step that was overtaken by stop() (Ctrl-C during start-up). */
export class DemoStopped extends Error {
  constructor() {
    super("the demo was stopped");
  }
}

/**
 * Everything the demo runs on this machine: a temp dir, a Consul dev agent, nginx, the `web`
 * instances and the cts daemon. `stop()` may be called at any time, also while starting, and
 * leaves nothing behind: processes stopped, services gone with the dev agent, temp dir removed.
 */
export class Demo {
  dir = "";
  env!: DemoEnvironment;
  consul?: ConsulAgent;
  nginx?: Nginx;
  daemon?: Daemon;
  /** `web` instances by id. */
  readonly web = new Map<string, WebInstance>();
  /** Tags of every service instance the demo registered, by id (what the firewall should see). */
  readonly registered = new Map<string, string[]>();
  private stopping?: Promise<void>;

  constructor(private readonly options: DemoOptions) {}

  /** Creates the temp dir, starts Consul and nginx, and registers nginx itself as `lb` (tagged public). */
  async start(): Promise<void> {
    this.dir = await mkdtemp(join(tmpdir(), "cts-demo-"));
    this.check();
    this.env = {
      dir: this.dir,
      tofu: this.options.tools.tofu,
      cliConfig: this.options.tools.cliConfig,
      nginx: this.options.nginx,
      apiPort: await freePort(),
      ...demoPaths(this.dir),
    };
    this.consul = await this.startedOrStop(startConsulAgent(this.options.tools.consul, join(this.dir, "consul")));
    this.nginx = await this.startedOrStop(
      startNginx({ binary: this.options.nginx, env: this.env, upstreamFile: join(this.env.upstreamDir, "upstream-web.conf"), upstream: "web" }),
    );
    await this.registerService({ ID: "lb", Name: "lb", Address: "127.0.0.1", Port: this.nginx.port, Tags: ["public", "nginx"] });
  }

  /** Starts `cts watch` on examples/cts.config.ts with this demo's environment. */
  startDaemon(): Daemon {
    this.check();
    const consul = this.need(this.consul, "consul");
    this.daemon = startDaemon({
      configFile: EXAMPLES_CONFIG,
      apiPort: this.env.apiPort,
      logFile: this.logFile,
      env: {
        CONSUL_HTTP_ADDR: consul.address,
        CTS_DEMO_DIR: this.dir,
        CTS_DEMO_API_PORT: String(this.env.apiPort),
        CTS_TOFU_BIN: this.env.tofu,
        CTS_TF_CLI_CONFIG: this.env.cliConfig ?? "",
        CTS_NGINX_BIN: this.env.nginx,
      },
      ...(this.options.echoDaemon ? { echo: this.options.echoDaemon } : {}),
    });
    return this.daemon;
  }

  /** The daemon's log file (inside the temp dir, so it goes when the demo stops). */
  get logFile(): string {
    return join(this.dir, "cts.log");
  }

  /** Starts a `web` instance and registers it in Consul with its HTTP health check. */
  async addWeb(id: string, tags: string[] = ["http"]): Promise<WebInstance> {
    this.check();
    const instance = await this.startedOrStop(startWebInstance(id));
    this.web.set(id, instance);
    await this.registerService(webRegistration(instance, "web", tags));
    return instance;
  }

  /** Registers any service instance through the agent and remembers its tags. */
  async registerService(registration: Record<string, unknown>): Promise<void> {
    await this.need(this.consul, "consul").register(registration);
    this.registered.set(String(registration.ID), [...((registration.Tags as string[] | undefined) ?? [])]);
  }

  /** Makes an instance's health check pass or fail (it keeps serving traffic either way). */
  setHealthy(id: string, healthy: boolean): void {
    this.need(this.web.get(id), `web instance ${id}`).setHealthy(healthy);
  }

  /** Ids of the `web` instances whose health endpoint passes: the pool nginx should have. */
  healthyWeb(): string[] {
    return [...this.web.values()].filter((w) => w.healthy).map((w) => w.id).sort();
  }

  /** Ids of the registered instances tagged `tag`: the allow-list the firewall should have. */
  taggedIds(tag = "public"): string[] {
    return [...this.registered].filter(([, tags]) => tags.includes(tag)).map(([id]) => id).sort();
  }

  /** Waits until Consul's passing `web` instances are exactly `ids` (its checks run every second). */
  async waitForConsul(ids: string[], timeoutMs = 30_000): Promise<void> {
    const consul = this.need(this.consul, "consul");
    const want = [...ids].sort().join(",");
    await waitUntil(`Consul to report passing web = [${want}]`, async () => (await consul.passing("web")).join(",") === want, timeoutMs, 100);
  }

  /** The firewall task's allow-list, or undefined before its first run. */
  async allowList(): Promise<AllowList | undefined> {
    try {
      return JSON.parse(await readFile(join(this.env.firewallDir, "allow-list.json"), "utf8")) as AllowList;
    } catch {
      return undefined;
    }
  }

  /** The nftables rules the firewall task wrote. */
  rulesFile(): Promise<string> {
    return readFile(join(this.env.firewallDir, "allow-list.nft"), "utf8");
  }

  /** Waits until the allow-list names exactly `ids`; returns it. */
  async waitForAllowList(ids: string[], timeoutMs = 60_000): Promise<AllowList> {
    const want = [...ids].sort().join(",");
    let last = "";
    try {
      return await waitUntil(
        `the allow-list to list exactly [${want}]`,
        async () => {
          const list = await this.allowList();
          last = list ? list.allow.map((a) => a.id).sort().join(",") : "(no file yet)";
          return last === want ? list : undefined;
        },
        timeoutMs,
        200,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}; last: ${last}`);
    }
  }

  /** Stops everything in dependency order (daemon, nginx, Consul, instances) and removes the temp dir. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const errors: unknown[] = [];
      const attempt = async (fn: (() => Promise<void>) | undefined) => {
        try {
          await fn?.();
        } catch (e) {
          errors.push(e);
        }
      };
      // The daemon first, so it does not run Terraform against an nginx that is going away.
      await attempt(this.daemon?.stop);
      await attempt(this.nginx?.stop);
      await attempt(this.consul?.stop);
      await Promise.all([...this.web.values()].map((w) => attempt(() => w.stop())));
      if (this.dir) await attempt(() => rm(this.dir, { recursive: true, force: true, maxRetries: 3 }));
      if (errors.length) throw new AggregateError(errors, `stopping the demo: ${errors.map((e) => (e as Error).message).join("; ")}`);
    })();
    return this.stopping;
  }

  /** Whether stop() was called. */
  get stopped(): boolean {
    return this.stopping !== undefined;
  }

  private check(): void {
    if (this.stopping) throw new DemoStopped();
  }

  private async startedOrStop<T extends { stop(): Promise<void> }>(starting: Promise<T>): Promise<T> {
    const started = await starting;
    // Ctrl-C arrived while it started: stop() has already run past it, so stop it here.
    if (this.stopping) {
      await started.stop();
      throw new DemoStopped();
    }
    return started;
  }

  private need<T>(value: T | undefined, what: string): T {
    if (value === undefined) throw new Error(`${what} is not running`);
    return value;
  }
}
