import type { ConsulReachability } from "../consul/reachability.ts";
import { hostname } from "node:os";
import type { Clock } from "../time/clock.ts";
import type { LoadedConfig } from "../config/load.ts";
import { createCatalogReader } from "../consul/reader.ts";
import { createWatcher } from "../watch/watcher.ts";
import type { CatalogReader } from "../consul/types.ts";
import type { Watcher } from "../watch/types.ts";
import { createLogger, type Logger } from "../log/logger.ts";
import { noMetrics, type Metrics } from "../metrics/metrics.ts";
import { createPrometheusMetrics } from "../metrics/prometheus.ts";
import { startTracing } from "../trace/start.ts";
import { installTracer } from "../trace/tracing.ts";
import { inProcessSynthesizer, workerSynthesizer, type Synthesizer } from "../synth/synthesizer.ts";
import { workingRoot } from "../synth/paths.ts";
import { startDaemonApi } from "./api.ts";
import { answersAt } from "./registration.ts";
import { ClusterMember, type ClusterStore } from "../ha/cluster-member.ts";
import { LeaderElection } from "../ha/leader-election.ts";
import { SharedAssignment } from "../ha/shared-assignment.ts";
import { HaKv } from "../ha/kv.ts";
import { StateWriter } from "../ha/writer.ts";
import { aliveKeyOf } from "../ha/shared-keys.ts";
import { haApiOptions } from "./ha-api.ts";
import { resolveHaSettings, type HaSettings } from "../ha/settings.ts";
import { FileTaskState } from "../state/file-state.ts";
import { KvTaskState, type KvAccess } from "../state/kv-state.ts";
import type { TaskState } from "../state/task-state.ts";
import { terraformStates, type TerraformStates } from "../state/terraform-states.ts";
import { DEFAULT_BACKEND } from "../synth/backend.ts";
import { consulClientFor } from "../config/consul-connection.ts";
import { driverFor } from "./driver-setup.ts";
import { Controller } from "../runtime/controller.ts";
import { Activity, EventStore } from "../runtime/events.ts";
import type { Runtime } from "../runtime/interfaces.ts";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "../runtime/retry.ts";
import { TaskRunner, type RunDriver, type RunTemplates } from "../runtime/run.ts";
import { skippedServices } from "../runtime/skipped-services.ts";
import { TaskInputReader } from "../runtime/task-input.ts";
import { WatchedData } from "../runtime/watched-data.ts";
import { ChainInputs } from "../runtime/chain-inputs.ts";
import { ChainRuns } from "../runtime/chains.ts";
import { TaskRegistry } from "../runtime/tasks.ts";
import type { ConsulApi, ConsulClient } from "../consul/client.ts";
import { vaultUseFor } from "../config/vault-settings.ts";
import { vaultConnectionFor, type VaultConnection } from "./vault-connection.ts";
import { consulTokenFromVault } from "../watch/consul-token.ts";
import { TemplateValues } from "../watch/template-values.ts";
import { createNotifier, type Notifier } from "../notify/notifier.ts";

export type { Runtime } from "../runtime/interfaces.ts";

// The composition root: the one place that knows every part of a running cts and wires them.
// Everything else receives what it needs through the small interfaces in interfaces.ts.

/** What a controller is built from. */
export interface ControllerDeps {
  loaded: LoadedConfig;
  reader: CatalogReader;
  driver: RunDriver;
  synthesizer: Synthesizer;
  log: Logger;
  /** Present in daemon mode. */
  watcher?: Watcher;
  /** Turns every buffer period off (`--no-buffer`, tests). */
  bufferOff?: boolean;
  /** Retries after a failed apply (default 2, as CTS); delays double from retryDelayMs. */
  retries?: number;
  retryDelayMs?: number;
  /** How long a locked Terraform state is waited for (default 5 min). */
  lockWaitMs?: number;
  /** Events kept per task (default 5). */
  eventsKept?: number;
  /** Where runs, phases, changes and buffer waits are measured (default: nowhere). */
  metrics?: Metrics;
  /** Values of provider templates and Vault secrets. */
  templates?: RunTemplates;
  /** The clock of buffer periods and retry waits (default: the real one; unit tests pass a fake). */
  clock?: Clock;
  /** Whether Consul answers (watch mode): statuses turn stale while it does not. */
  consul?: ConsulReachability;
  /** What outlives a run (src/state/): a folder per task, or Consul KV in a cluster (default: memory). */
  state?: TaskState;
  /** Where each task's Terraform state is, looked at without Terraform (the no-op skip checks it is still there). */
  states?: TerraformStates;
}

/**
 * The store of template values (Vault secrets, Consul keys) on the process's one Vault connection:
 * read on a run's first use; in the daemon kept fresh, a change re-running the tasks that use it.
 */
function templateValuesFor(loaded: LoadedConfig, consul: ConsulApi, watch: boolean, log: Logger, vault: VaultConnection | undefined): TemplateValues {
  const use = vaultUseFor(loaded.config);
  return new TemplateValues({ ...(vault ? { vault: { client: vault.client, session: vault.session } } : {}), consul, watch, defaultLeaseMs: use?.defaultLeaseMs ?? 5 * 60_000, log });
}

/**
 * Builds the runtime's parts: the registry, and the runner that makes each attempt (input →
 * synthesize → Terraform); the controller builds the triggers and the runs that connect them.
 */
export function createController(deps: ControllerDeps): Controller {
  const { loaded, log } = deps;
  const metrics = deps.metrics ?? noMetrics;
  const policy: RetryPolicy = {
    ...DEFAULT_RETRY_POLICY,
    ...(deps.retries !== undefined ? { retries: deps.retries } : {}),
    ...(deps.retryDelayMs !== undefined ? { delayMs: deps.retryDelayMs } : {}),
    ...(deps.lockWaitMs !== undefined ? { lockWaitMs: deps.lockWaitMs } : {}),
  };
  // One record of skipped services for watched and one-off reads: a task is warned once per name.
  const skipped = skippedServices(log, metrics);
  // The watched tasks' subscriptions: opened by the triggers, read by each run's input.
  const watched = new WatchedData();
  const tasks = new TaskRegistry(loaded);
  // Task chains: what waits for, follows or is skipped after an upstream run, and the data a chain runs on.
  const chains = new ChainRuns(() => tasks.all().map((e) => ({ name: e.name, after: e.task.after })));
  const runner = new TaskRunner({
    loaded,
    driver: deps.driver,
    synthesizer: deps.synthesizer,
    inputs: new ChainInputs(new TaskInputReader(deps.reader, skipped, watched), chains, (name) => tasks.find(name)),
    log,
    metrics,
    ...(deps.templates ? { templates: deps.templates } : {}),
    ...(deps.state ? { state: deps.state } : {}),
    ...(deps.states ? { states: deps.states } : {}),
  });
  const controller = new Controller({
    tasks,
    chains,
    runner,
    events: new EventStore(deps.eventsKept),
    activity: new Activity(),
    runs: { policy, concurrency: loaded.config.concurrency ?? 4, ...(deps.clock ? { clock: deps.clock } : {}) },
    triggers: {
      ...(deps.watcher ? { watcher: deps.watcher } : {}),
      globalBuffer: loaded.config.bufferPeriod,
      ...(deps.bufferOff ? { bufferOff: true } : {}),
      globalDrift: loaded.config.driftCheck,
      skipped,
      watched,
      ...(deps.templates ? { templates: deps.templates } : {}),
      ...(deps.clock ? { clock: deps.clock } : {}),
    },
    log,
    metrics,
    ...(deps.consul ? { consul: deps.consul } : {}),
  });
  // The status gauges read the runtime when scraped, so they never disagree with the API.
  metrics.observe({
    tasks: () =>
      controller.taskNames().flatMap((name) => {
        const view = controller.view(name);
        const last = controller.events.list(name)[0]?.outcome;
        return view ? [{ task: name, enabled: view.enabled, status: view.status, held: view.held !== undefined, ...(last ? { lastOutcome: last } : {}) }] : [];
      }),
    has: (name) => controller.view(name) !== undefined,
    ...(deps.consul ? { consulReachable: () => deps.consul!.reachable } : {}),
    queue: () => controller.queueDepth(),
  });
  return controller;
}

/** How the runtime is put together for one command. */
export interface RuntimeOptions {
  /** "watch" synthesizes in a recycled worker and watches; "once"/"inspect" read once, in process. */
  mode: "watch" | "once" | "inspect";
  bufferOff?: boolean;
  log?: Logger;
  /** Overrides for tests (short blocking waits). */
  watchTiming?: { waitMs?: number };
  /** Retries after a failed apply (default 2) and the first delay (default 1 s). */
  retries?: number;
  retryDelayMs?: number;
  /** How long a locked Terraform state is waited for (default 5 min). */
  lockWaitMs?: number;
  /** Default: Prometheus metrics in their own registry for "watch", none for one-shot commands. */
  metrics?: Metrics;
  /** The synthesizer (default: a worker synthesizer for "watch", in process otherwise). */
  synthesizer?: Synthesizer;
  /** The task state, made on the process's Consul client (default: a folder per task under the working dir). */
  taskState?: (consul: ConsulClient) => TaskState;
}

/** The composition root: real Consul client, watcher, Terraform driver and synthesizer. */
export function createRuntime(loaded: LoadedConfig, opts: RuntimeOptions): Runtime {
  const { config } = loaded;
  const log = opts.log ?? createLogger();
  const metrics = opts.metrics ?? (opts.mode === "watch" ? createPrometheusMetrics() : noMetrics);
  // The process's one Consul client: the watch, the reads, high availability, shared mode, the
  // self-registration and the API's health probe all use it. It follows the token file.
  // A token from Vault (CTS #825) is read on the first call and followed in watch mode.
  // One Vault client and token session for the Consul token and the task templates.
  const vault = vaultConnectionFor(config, { watch: opts.mode === "watch", log: log.child("vault") });
  const tokenSource = consulTokenFromVault(config, { watch: opts.mode === "watch", log: log.child("vault"), ...(vault ? { vault } : {}) });
  const consul = consulClientFor(config, { metrics, log, ...(tokenSource ? { tokenSource } : {}) });
  // Terraform reads the token from its environment at every command; this object is that env,
  // kept current by the client.
  const terraformEnv = consul.terraformEnv;
  const tf = config.driver?.terraform ?? {};
  const root = workingRoot(loaded.dir, tf.workingDir);
  const tfLog = log.child(config.driver?.terraformCloud ? "tfc" : "terraform");
  const driver = driverFor(loaded, { root, env: terraformEnv, log: tfLog, metrics, lockRetryMs: opts.lockWaitMs ?? DEFAULT_RETRY_POLICY.lockWaitMs });
  // A restarted Consul (its index went backwards) may have come back empty: every task's state is looked at.
  let restarted: (() => void) | undefined;
  const watcher =
    opts.mode === "watch"
      ? createWatcher(consul, {
          ...(opts.watchTiming ? { timing: opts.watchTiming } : {}),
          warn: (m) => log.child("watch").warn(m),
          metrics,
          onConsulRestart: () => restarted?.(),
        })
      : undefined;
  const templates = templateValuesFor(loaded, consul, opts.mode === "watch", log.child("vault"), vault);
  const synthesizer =
    opts.synthesizer ?? (opts.mode === "watch" ? workerSynthesizer() : inProcessSynthesizer((name) => config.tasks.find((t) => t.name === name)));
  const controller = createController({
    loaded,
    reader: createCatalogReader(consul),
    driver,
    synthesizer,
    log: log.child("ctrl"),
    ...(watcher ? { watcher } : {}),
    ...(opts.bufferOff ? { bufferOff: true } : {}),
    ...(opts.retries !== undefined ? { retries: opts.retries } : {}),
    ...(opts.retryDelayMs !== undefined ? { retryDelayMs: opts.retryDelayMs } : {}),
    ...(opts.lockWaitMs !== undefined ? { lockWaitMs: opts.lockWaitMs } : {}),
    ...(watcher ? { consul: consul.reachability } : {}),
    metrics,
    templates,
    // The local driver's backend (Terraform Cloud keeps states out of reach): looked at before a skip.
    ...(config.driver?.terraformCloud
      ? {}
      : {
          states: terraformStates(tf.backend ?? DEFAULT_BACKEND, {
            kv: async (key) => (await consul.kv({ path: key })).data[0]?.Value ?? null,
            taskDir: (task) => driver.taskDir(task),
          }),
        }),
    // A folder per task under the working dir; the files older versions kept in the task's own folder are taken over once.
    state: opts.taskState?.(consul) ?? new FileTaskState(root, (task) => driver.taskDir(task), (err) => log.child("ctrl").warn(`${err.task ? `task '${err.task}': ` : ""}${err.message}`, { ...(err.task ? { task: err.task } : {}), code: err.code })),
  });
  restarted = () => void controller.checkStates("Consul restarted");
  // Consul lost or back (unreachable, or no leader): every view ends the read it holds and reads
  // again, so the first answer after a quorum loss is not waiting on a read held across it.
  const stopRereads = watcher ? consul.reachability.onChange(() => watcher.rereadAll()) : undefined;
  // A rotated token (token file, Vault): reads waiting with the old one are sent again with the new
  // one, before the old token is deleted and they fail with "ACL not found".
  const stopTokenRereads = watcher ? consul.onTokenChange(() => watcher.rereadAll()) : undefined;
  return {
    controller,
    metrics,
    consul,
    driver,
    log,
    id: config.id ?? `cts-${hostname()}`,
    async close(closeOpts = {}) {
      await controller.stop(closeOpts.graceMs);
      stopRereads?.();
      stopTokenRereads?.();
      watcher?.close();
      templates.close();
      consul.close();
      vault?.close();
      // Warm provider processes end with the runtime (stop, SIGTERM, `once` finishing).
      await driver.close();
    },
  };
}

/**
 * The cluster's KV and its one state writer, on the process's Consul client: fenced with the
 * leader lock (high availability) or, by default, this member's liveness lock (shared mode).
 */
function clusterStore(consul: ConsulClient, settings: HaSettings, log: Logger): ClusterStore {
  const kv = new HaKv(consul, settings.namespace);
  return { kv, writer: new StateWriter(kv, settings.mode === "shared" ? aliveKeyOf(settings) : settings.lockKey, log) };
}

/** How long cancelled runs may take to end when the daemon stops while Consul is unreachable. */
export const OFFLINE_RUN_GRACE_MS = 1_000;

/** Where the daemon's API listens and what high availability is asked (`cts watch` flags). */
export interface DaemonOptions {
  bufferOff?: boolean;
  log: Logger;
  apiAddress?: string;
  apiPort?: string;
  resetStorage?: boolean;
  /** The synthesizer whose worker loaded the config (src/synth/daemon-config.ts). */
  synthesizer?: Synthesizer;
}

/** A running daemon: the runtime, its API, and high availability when configured. */
export interface Daemon {
  runtime: Runtime;
  /** The webhooks of `notifications`, when configured. */
  notifier?: Notifier;
  ha?: ClusterMember;
  apiUrl: string;
  /** Leader first steps down and releases the lock (a follower takes over at once), then the API, then the runtime. */
  stop(): Promise<void>;
}

/**
 * `cts watch`: the runtime, the CTS-compatible API with its self-registration in Consul, and — with
 * highAvailability in the config — the election; without it, the runtime starts watching at once.
 */
export async function startDaemon(loaded: LoadedConfig, opts: DaemonOptions): Promise<Daemon> {
  const { log } = opts;
  // Traces, when the OTEL_* environment asks for them: OpenTelemetry's SDK is loaded only then (src/trace/).
  const tracer = await startTracing({ attributes: { "cts.driver": loaded.config.driver?.terraformCloud ? "terraform-cloud" : "terraform" }, notice: (line) => log.warn(line) });
  installTracer(tracer);
  const stopTracing = async () => {
    if (!tracer) return;
    installTracer(undefined);
    await tracer.shutdown();
  };
  const settings = loaded.config.highAvailability ? resolveHaSettings(loaded.config) : undefined;
  // In a cluster the task state lives in Consul KV; the member (made below, once the runtime is)
  // says which writes it may make and fences them with its lock.
  let store: ClusterStore | undefined;
  let member: KvAccess | undefined;
  const taskState = settings
    ? (consul: ConsulClient): TaskState => {
        store = clusterStore(consul, settings, log.child("ha"));
        return new KvTaskState(store.writer, settings.statePrefix, { fence: (task, what) => (member ? member.fence(task, what) : null), tasksChanged: () => member?.tasksChanged?.() });
      }
    : undefined;
  const runtime = createRuntime(loaded, {
    mode: "watch",
    ...(opts.bufferOff ? { bufferOff: true } : {}),
    log,
    ...(opts.synthesizer ? { synthesizer: opts.synthesizer } : {}),
    ...(taskState ? { taskState } : {}),
  });
  // Webhooks (notifications): told of each recorded task event and of leadership; they never delay a run.
  const notifier = createNotifier(loaded.config.notifications, { instance: runtime.id, metrics: runtime.metrics, log: log.child("notify") });
  const stopNotifying = notifier ? runtime.controller.events.onAdd((event, before) => notifier.taskEvent(event, before)) : undefined;
  const closeRuntime = async () => {
    await runtime.close();
    stopNotifying?.();
    notifier?.close();
    await stopTracing();
  };
  // With high availability only the leader watches and runs tasks; the rest wait for the lock.
  // Shared mode: every healthy member runs a share of the tasks (docs/clustering.md "Shared mode").
  const shared = settings?.mode === "shared";
  const ha = !settings
    ? undefined
    : new ClusterMember(
        runtime,
        loaded,
        store!,
        shared ? (parts) => new SharedAssignment(parts) : (parts) => new LeaderElection(parts, { resetStorage: opts.resetStorage === true, metrics: runtime.metrics, ...(notifier ? { onLeadership: (l, why) => notifier.leadership(l, why) } : {}) }),
        { answersAt: (url) => answersAt(url) },
      );
  member = ha;
  if (shared && opts.resetStorage) log.warn("--reset-storage is not supported in shared mode (delete the KV prefix with consul kv delete -recurse instead)");
  if (!ha && opts.resetStorage) log.warn("--reset-storage does nothing without highAvailability in the config");
  const api = await startDaemonApi(runtime, loaded.config.api, {
    ...(opts.apiAddress !== undefined ? { address: opts.apiAddress } : {}),
    ...(opts.apiPort !== undefined ? { port: opts.apiPort } : {}),
    ...(loaded.config.consul?.serviceRegistration ? { registration: loaded.config.consul.serviceRegistration } : {}),
    ...(ha ? haApiOptions(ha) : {}),
    driver: loaded.config.driver?.terraformCloud ? "terraformCloud" : "terraform",
  }).catch(async (err: unknown) => {
    // Refused to start (another live instance with this id, a port in use): nothing stays behind.
    await closeRuntime();
    throw err;
  });
  ha?.setLocalAddress(api.url);
  notifier?.setLink(api.url);
  if (ha)
    await ha.start().catch(async (err: unknown) => {
      // Refused to join (another live instance with this id): nothing stays behind.
      await api.stop().catch(() => undefined);
      await closeRuntime();
      throw err;
    });
  else await runtime.controller.watch();
  return {
    runtime,
    ...(notifier ? { notifier } : {}),
    ...(ha ? { ha } : {}),
    apiUrl: api.url,
    async stop() {
      const started = performance.now();
      // Consul unreachable (a call failed to reach it and none answered since): no step of the stop
      // calls it or waits for it. The client refuses every later call at once and fails the calls
      // in flight now (watch reads, renewals, KV writes); each step that needs Consul is skipped.
      const reach = runtime.consul.reachability;
      const offline = reach !== undefined && !reach.reachable;
      const inFlight = runtime.controller.taskNames().filter((n) => runtime.controller.view(n)?.running).length;
      if (offline) {
        log.warn(`stopping while Consul is unreachable (since ${reach.lostSince ?? "?"}): no call to Consul is made or waited for`);
        runtime.consul.stopCalling("cts is stopping and Consul is unreachable");
      }
      const skipped: string[] = [];
      // Runs in flight are cancelled (Terraform gets SIGINT); with Consul gone (the state backend
      // too, by default) they are given a short grace, then the process exits: its exit hook and
      // the reaper end what still runs, and the next start cleans the working dir.
      const graceMs = offline ? OFFLINE_RUN_GRACE_MS : undefined;
      const graceEnds = performance.now() + (graceMs ?? 0);
      skipped.push(...((await ha?.stop({ consulUnreachable: offline, ...(graceMs !== undefined ? { graceMs } : {}) }).catch((e) => void log.warn(`stopping high availability: ${String(e)}`))) ?? []));
      await api.stop(skipped).catch((e) => log.warn(`stopping the API: ${String(e)}`));
      // One grace for the whole stop: what high availability's pause used is not given again.
      await runtime.close(graceMs !== undefined ? { graceMs: Math.max(0, Math.round(graceEnds - performance.now())) } : {});
      stopNotifying?.();
      notifier?.close();
      await stopTracing();
      const ms = Math.round(performance.now() - started);
      if (offline)
        log.warn(
          `stopped in ${ms} ms without Consul: skipped ${skipped.length ? skipped.join("; ") : "no step"}; ${runtime.consul.refusedCalls()} Consul call(s) refused at once, none waited for; ${inFlight} run(s) in flight cancelled`,
          { stop_ms: ms, skipped: skipped.length, runs_cancelled: inFlight },
        );
      else log.debug(`stopped in ${ms} ms`, { stop_ms: ms });
    },
  };
}
