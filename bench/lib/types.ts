/** One table of a benchmark's results, rendered to markdown as is. */
export interface ResultTable {
  title?: string;
  columns: string[];
  rows: Array<Array<string | number>>;
  /** Lines printed under the table. */
  notes?: string[];
}

/** A target from the issue, and whether this run met it. */
export interface TargetCheck {
  /** Short id, e.g. "trigger.p50". */
  id: string;
  /** What is measured. */
  what: string;
  /** The target as written in the issue. */
  target: string;
  /** What this run measured. */
  actual: string;
  /** null when the run could not tell (e.g. a size was skipped). */
  met: boolean | null;
  /** For a miss: why, in one or two sentences (the profile is attached separately). */
  why?: string;
}

/** What a benchmark hands back to the runner. */
export interface BenchResult {
  name: string;
  title: string;
  /** One paragraph: what is measured and how. */
  method: string;
  tables: ResultTable[];
  targets: TargetCheck[];
  notes: string[];
  /** Raw numbers for the JSON file. */
  data: Record<string, unknown>;
  durationMs: number;
  /** 1-minute load average when the benchmark started (set by the runner). */
  loadAvgStart?: number;
  /** Set by the runner when the child failed. */
  error?: string;
  /** Top functions of a CPU profile, attached by the runner for missed targets. */
  profile?: ProfileSummary;
  /** Monotonic µs (the clock of --cpu-prof) of ctx.window.begin()/end(), when called. */
  profileWindowUs?: [number, number];
}

/** A `--cpu-prof` profile reduced to the functions that took the most time. */
export interface ProfileSummary {
  /** What was profiled (which benchmark, which size). */
  what: string;
  totalMs: number;
  /** Self time per function, largest first. */
  top: Array<{ fn: string; where: string; selfMs: number; selfPct: number }>;
  /** Self time per package/area (cdktf, constructs, node:internal, src/…, GC, idle). */
  byArea: Array<{ area: string; selfMs: number; selfPct: number }>;
}

/** Everything a benchmark module receives. */
export interface BenchContext {
  /** Sizes and counts, already resolved from defaults, --quick, flags and env. */
  sizes: Sizes;
  quick: boolean;
  /** A fresh folder for this benchmark (under bench/results/tmp, removed afterwards unless --keep). */
  tmp: string;
  /** Progress output (stderr). */
  log(message: string): void;
  /** Registers cleanup that runs even when the benchmark throws or is interrupted. */
  onCleanup(fn: () => Promise<void> | void): void;
  /**
   * Marks the part worth profiling (set-up such as module loading and registering instances
   * stays out of the CPU profile summary). Only the first begin and the last end count.
   */
  window: { begin(): void; end(): void };
}

/** Every configurable size. Flags: --trigger-sizes=1,100; env: BENCH_TRIGGER_SIZES=1,100. */
export interface Sizes {
  triggerSizes: number[];
  triggerSamples: number;
  e2eSamples: number;
  e2eInitSamples: number;
  synthSizes: number[];
  synthTimeBudgetMs: number;
  throughputTasks: number;
  throughputServices: number;
  throughputConcurrency: number[];
  scaleServices: number;
  scaleInstances: number;
  scaleIdleSeconds: number;
  syntheses: number;
  synthesesInProcess: number;
  loadTasks: number;
  loadIdleSeconds: number;
  loadChurnSeconds: number;
  loadChurnPerSecond: number;
  /** lean: measured changes per task kind (per-event daemon CPU). */
  leanChanges: number;
  /** lean: applied runs (3 tasks) before the RSS is read. */
  leanRuns: number;
  /** lean: restarts timed for the first sync. */
  leanStarts: number;
  /** bindings: back-to-back changes timed per daemon. */
  bindingChanges: number;
  /** bindings: seconds without a change before the "after a quiet spell" change (≥ 600 for the target). */
  bindingQuietSeconds: number;
  /** bindings: quiet spells, one change per daemon after each (the daemon going first rotating); the median counts. */
  bindingQuietSpells: number;
  /** bindings: first syncs timed per daemon, each a fresh daemon in a fresh working dir (the last one stays); the median counts. */
  bindingStarts: number;
  /** bindings: `cts synth` runs per import style. */
  bindingSynths: number;
  /** tfc: single changes timed against the TFE-API test server. */
  tfcSamples: number;
  /** tfc: tasks changing at once. */
  tfcTasks: number;
}

/** A benchmark module's export. */
export type BenchFn = (ctx: BenchContext) => Promise<Omit<BenchResult, "durationMs" | "name">>;
