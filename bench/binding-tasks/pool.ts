/**
 * The task the bindings benchmark runs, in builds that differ only in their imports (one file
 * each, so a config loads exactly one): one file listing every instance (local_file), as a CTS
 * load-balancer member list. The AWS builds also import `@cdktf/provider-aws` — at its root, as
 * teams write it, or deep — and touch one class of it (the security-group rule a real task would
 * open) without adding AWS resources: the offline provider mirror has no AWS provider, and the
 * benchmark measures what the import costs cts, not AWS. They import `cdktf-sync` by its name, as a
 * user's project does: the daemon as installed resolves it to dist/, like an installed package.
 */
import { Task, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";

// The generated configs live outside the package and cannot resolve its name: they take these from here.
export { defineConfig, services } from "cdktf-sync";

/** Options of every build of the pool task. */
export interface PoolOptions {
  name: string;
  condition: ServicesCondition;
  path: string;
}

/** The member list a pool task writes: one line per instance. */
export function members(input: TaskInput<ServicesCondition>): string {
  return input.services.map((s) => `${s.address}:${s.port} # ${s.id} ${s.meta.version ?? ""}\n`).join("");
}

/** A pool task's base: its name, condition and file. */
export abstract class PoolTask extends Task<ServicesCondition> {
  constructor(protected readonly opts: PoolOptions) {
    super({ name: opts.name, condition: opts.condition });
  }
  abstract override synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void;
}
