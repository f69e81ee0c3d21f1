import type { BenchContext, ResultTable } from "../../lib/types.ts";

/** Every size of the chaos run (flags: --flap-seconds=20; env: CHAOS_FLAP_SECONDS=20). */
export interface ChaosSizes {
  /** How long the flapping writer runs. */
  flapSeconds: number;
  /** Changes per second the writer aims for (the achieved rate is reported). */
  flapRate: number;
  /** Instance slots of the flapping service. */
  flapInstances: number;
  /** Writers in flight (each owns a slice of the slots, so the model stays exact). */
  flapWorkers: number;
  /** How long Consul stays down. */
  consulDownSeconds: number;
  /** kill -9 rounds. */
  killLoops: number;
  /** Length of the slow apply's local-exec sleep. */
  killSleepSeconds: number;
  /** Fresh tasks per `cts once` run. */
  freshTasks: number;
  freshConcurrency: number;
  freshRuns: number;
  /** Generated catalog payloads (fast-check) next to the fault probe's fixed ones. */
  hostileGenerated: number;
  /** Generated secrets next to the fixed one. */
  hostileSecrets: number;
  /** Seed of the generated payloads and secrets; 0: from the clock (the report prints it). */
  hostileSeed: number;
}

/** What a scenario module receives (the bench runner's context with chaos sizes). */
export type ChaosContext = Omit<BenchContext, "sizes"> & { sizes: ChaosSizes };

/** One row of the figures table; every cell is already a display string. */
export interface Figures {
  scenario: string;
  changes: string;
  runs: string;
  /** Failed attempts, including those a retry hid. */
  errors: string;
  orphans: string;
  rss: string;
  recovery: string;
  /** "✅ …", "❌ …" (a defect shown), or "failed: why" (the scenario itself could not finish). */
  verdict: string;
}

/** What a scenario hands back (child.ts adds name and durationMs). */
export interface ScenarioResult {
  title: string;
  method: string;
  figures: Figures;
  tables: ResultTable[];
  notes: string[];
  /** Raw numbers for chaos.json. */
  data: Record<string, unknown>;
}

/** A scenario module's `run` export. */
export type ScenarioFn = (ctx: ChaosContext) => Promise<ScenarioResult>;
