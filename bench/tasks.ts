/**
 * Task classes the benchmarks run. Config files generated under bench/results/tmp import this
 * module by absolute path, so the worker synthesizer loads exactly these classes.
 */
import { createHash } from "node:crypto";
import { file, provider } from "@cdktf/provider-local";
import { Task, constructId, type CatalogServicesCondition, type ServicesCondition, type TaskInput, type TaskScope, type BufferPeriodOption } from "../src/index.ts";

/** Options every bench task takes. */
export interface BenchTaskOptions<C> {
  name: string;
  condition: C;
  /** File (MemberFile, CatalogFile) or folder (PerInstanceFiles, ChainedFiles) to write. */
  path: string;
  bufferPeriod?: BufferPeriodOption | false;
  /**
   * Write a one-line digest (counts and a sha256 of the full text) instead of the text. The task
   * still builds the text from every instance; Terraform gets a short string. OpenTofu's plan and
   * apply grow steeply with the size of one string attribute (a 124 KB file takes ~17 s, 1.3 MB
   * over 2 minutes on 2 cores), which would measure Terraform rather than cts.
   */
  digest?: boolean;
}

function digestOf(text: string, items: number, what: string): string {
  return `${items} ${what}, ${text.length} bytes, sha256 ${createHash("sha256").update(text).digest("hex")}\n`;
}

/**
 * One local_file listing every instance, one line each: the shape of a CTS load-balancer member
 * list. Synthesis cost grows with the text, not with the number of resources.
 */
export class MemberFile extends Task<ServicesCondition> {
  private readonly path: string;
  private readonly digest: boolean;
  constructor(opts: BenchTaskOptions<ServicesCondition>) {
    super({ name: opts.name, condition: opts.condition, ...(opts.bufferPeriod !== undefined ? { bufferPeriod: opts.bufferPeriod } : {}) });
    this.path = opts.path;
    this.digest = opts.digest === true;
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    let content = "";
    for (const s of input.services) content += `${s.name} ${s.id} ${s.address}:${s.port} ${s.status}\n`;
    if (this.digest) content = digestOf(content, input.services.length, "instances");
    new file.File(scope, "members", { filename: this.path, content });
  }
}

/** One local_file per instance: synthesis cost grows with the number of resources. */
export class PerInstanceFiles extends Task<ServicesCondition> {
  private readonly dir: string;
  constructor(opts: BenchTaskOptions<ServicesCondition>) {
    super({ name: opts.name, condition: opts.condition, ...(opts.bufferPeriod !== undefined ? { bufferPeriod: opts.bufferPeriod } : {}) });
    this.dir = opts.path;
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    for (const s of input.services) {
      const id = constructId(s.name, s.id);
      new file.File(scope, id, {
        filename: `${this.dir}/${id}.txt`,
        content: `${s.address}:${s.port} ${s.tags.join(",")} ${s.meta.version ?? ""}\n`,
      });
    }
  }
}

/**
 * One local_file per instance, each referencing the previous file's id: every reference is a
 * cdktf token, and cdktf keeps every token in a process-global map forever. This is the task
 * the memory benchmark synthesizes thousands of times.
 */
export class ChainedFiles extends Task<ServicesCondition> {
  private readonly dir: string;
  constructor(opts: BenchTaskOptions<ServicesCondition>) {
    super({ name: opts.name, condition: opts.condition, ...(opts.bufferPeriod !== undefined ? { bufferPeriod: opts.bufferPeriod } : {}) });
    this.dir = opts.path;
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    let prev: file.File | undefined;
    for (const s of input.services) {
      const id = constructId(s.name, s.id);
      prev = new file.File(scope, id, {
        filename: `${this.dir}/${id}.txt`,
        content: prev ? `${s.address}:${s.port} after ${prev.id} in ${prev.filename}` : `${s.address}:${s.port}`,
      });
    }
  }
}

/** One local_file listing the catalog's service names and tags (a catalog-services task). */
export class CatalogFile extends Task<CatalogServicesCondition> {
  private readonly path: string;
  private readonly digest: boolean;
  constructor(opts: BenchTaskOptions<CatalogServicesCondition>) {
    super({ name: opts.name, condition: opts.condition, ...(opts.bufferPeriod !== undefined ? { bufferPeriod: opts.bufferPeriod } : {}) });
    this.path = opts.path;
    this.digest = opts.digest === true;
  }
  synthesize(scope: TaskScope, input: TaskInput<CatalogServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    let content = "";
    const entries = Object.entries(input.catalogServices);
    for (const [name, tags] of entries) content += `${name} ${tags.join(",")}\n`;
    if (this.digest) content = digestOf(content, entries.length, "services");
    new file.File(scope, "catalog", { filename: this.path, content });
  }
}
