import type { Metrics } from "../metrics/metrics.ts";
import type { WarmProcessInfo } from "./warm-pool.ts";
import type { StateLockWait } from "./lock-wait.ts";
import type { Driver, SavedPlans } from "../driver/types.ts";

// The driver contract (operations, options, results) lives in src/driver/types.ts, shared with
// any other driver; it is re-exported here for the local driver's own files and its callers.
export type { ChangeSummary, Driver, ResourceChange, RunOptions, RunResult, SavedPlan, SavedPlans, TaskWorkspace, TerraformDriver } from "../driver/types.ts";

/** Time limits (ms) of the short commands; one that does not exit in time is killed and retried once. */
export interface CommandTimeouts {
  /** `version` (default 30 s). */
  version?: number;
  /** `workspace select/new` (default 60 s, plus the lock timeout for `new`). */
  workspace?: number;
  /** `validate` (default 60 s). */
  validate?: number;
  /** `init` (default 5 min). */
  init?: number;
  /** `show` of a saved plan (default 5 min). */
  show?: number;
  /**
   * plan, apply and destroy have no time limit of their own (driver.terraform.timeout bounds them),
   * but one that prints nothing for this long is stuck (default 5 min; with -json, Terraform
   * reports progress every 10 s while a resource or provisioner works).
   */
  silence?: number;
}

/** Limits of the warm provider pool (`driver.terraform.warmProviders`). */
export interface WarmProviderOptions {
  /** Provider processes alive at once (default 8). */
  maxProcesses?: number;
  /** Terraform commands one process serves before it is replaced (default 100). */
  maxRunsPerProcess?: number;
  /** An idle process ends after this many ms (default 5 min). */
  idleTimeoutMs?: number;
  /** A process above this resident size after a run is replaced (default 512 MB). */
  maxRssMb?: number;
}

/** How a driver's Terraform child processes are run. */
export interface TerraformDriverOptions {
  /** "tofu", "terraform" or a path to either binary. */
  binary: string;
  /** Root folder: each task works in `<workingDir>/<task>`. */
  workingDir: string;
  /**
   * Tasks that work elsewhere than `<workingDir>/<task>` (a task's own `workingDir`): name →
   * absolute folder. Checked by the config (no two tasks share one).
   */
  taskDirs?: Record<string, string>;
  /** CLI config file (TF_CLI_CONFIG_FILE): provider installation, mirrors, credentials. */
  cliConfigFile?: string;
  /** Plugin cache shared by every task (TF_PLUGIN_CACHE_DIR); created when missing. */
  pluginCacheDir?: string;
  /** Base environment for every command (CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN, TLS…); never written to disk. */
  env?: Record<string, string>;
  /** The state backend's credentials (backend settings kept out of main.tf.json), over `env` and the task's env. */
  backendEnv?: Record<string, string>;
  /** Default time limit of one operation (init + workspace + command), in ms (default 30 min). */
  defaultTimeoutMs?: number;
  /** Time between SIGINT and SIGKILL when cancelling, in ms (default 10 s). */
  killGraceMs?: number;
  /**
   * How long a command waits for a state lock held by someone else (`-lock-timeout`), in ms
   * (default 90 s: a crashed run's Consul lock session expires within about 35 s).
   */
  lockTimeoutMs?: number;
  /** Limits of the short commands (version, workspace, validate, init, show); plan/apply keep `defaultTimeoutMs`. */
  commandTimeouts?: CommandTimeouts;
  /** Receives the driver's own notices (start-up clean-up, a reaper that failed); default: `log` with task "driver". */
  notice?: (line: string) => void;
  /**
   * Receives the one line a task's working dir change is worth to an operator (CTS's files taken
   * over, a re-init because the binary changed); default: `log`.
   */
  taskNotice?: (task: string, line: string) => void;
  /** Receives every human-readable line Terraform prints, per task (the caller adds the prefix). */
  log?: (task: string, line: string) => void;
  /**
   * Called once when a command starts waiting for a state lock someone else holds (the holder's Lock
   * Info, how long the driver waits): the one line an operator needs to see. Default: a `log` line.
   */
  onStateLockWait?: (wait: StateLockWait) => void;
  /**
   * Scrubs known secret values from a text. Applied to every output line before it reaches
   * `log`/`onOutput`, and to the messages, details and plan text of what the driver returns/throws.
   */
  redact?: (text: string) => string;
  /**
   * Fresh task folders with identical init inputs (providers, backend, environment) share one
   * `init`: the others get a copy of its lock file, backend settings and provider links. Default on.
   */
  shareInit?: boolean;
  /** The warm provider pool's limits, or false to let Terraform launch providers on every run (default on). */
  warmProviders?: false | WarmProviderOptions;
  /** Read the Terraform and warm provider binaries through every 30 s while quiet spells are kept fast (page-warmer.ts; default on). */
  warmPages?: boolean;
  /** Receives what warm provider processes print (their warnings and errors), per task, for the log's debug level. */
  debugLog?: (task: string, line: string) => void;
  /** Where running processes and the init/plan/apply/destroy phases are measured. */
  metrics?: Metrics;
}

/** The driver `createTerraformDriver` returns: the contract plus what only a local driver can tell. */
export interface LocalTerraformDriver extends Driver {
  planToApply: SavedPlans["planToApply"];
  applyPlan: SavedPlans["applyPlan"];
  discardPlan: SavedPlans["discardPlan"];
  /** How many commands hung (did not exit within their limit) and were killed, since start. */
  hungCommands(): number;
  /** The warm provider processes alive now (tests, benchmark). */
  warmProcesses(): WarmProcessInfo[];
  /** Ends the idle warm providers of one task (deleted) or of all tasks (leadership lost); busy ones end when their command does. */
  coolDown(task?: string): Promise<void>;
  /** Ends every warm provider process; later runs launch providers the normal way. */
  close(): Promise<void>;
  /** Absolute working dir of a task (its own, or `<workingDir>/<task>`); throws TASK_NAME_INVALID for bad names. */
  taskDir(task: string): string;
}
