import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tools } from "../../test/support/tools.ts";

/** Absolute path of the public API (generated configs live outside the package). */
export const PUBLIC_API = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
/** Absolute path of the bench task classes. */
export const BENCH_TASKS = fileURLToPath(new URL("../tasks.ts", import.meta.url));

/** What a generated bench config holds. */
export interface BenchConfigOptions {
  /** Folder of the config; the working dir is `<dir>/sync-tasks`. */
  dir: string;
  consulAddress: string;
  /** TypeScript expressions, e.g. `new MemberFile({ name: "a", path: "/tmp/a", condition: services({ names: ["web"] }) })`. */
  tasks: string[];
  /** Consul KV path of the Terraform state (one per run keeps runs independent). */
  backendPath?: string;
  /** A whole backend block instead, e.g. `{ local: { path: "/tmp/x.tfstate" } }`. */
  backend?: Record<string, Record<string, unknown>>;
  /** Extra top-level fields as TypeScript text, e.g. `concurrency: 8,`. */
  extra?: string;
}

/**
 * Writes a cts.config.ts that uses the real OpenTofu and the offline provider mirror, turns the
 * buffer period off (benchmarks measure the pipeline, not the quiet time) and imports the bench
 * task classes.
 */
export async function writeBenchConfig(opts: BenchConfigOptions): Promise<string> {
  const t = tools();
  const file = join(opts.dir, "cts.config.ts");
  const backend = opts.backend
    ? `backend: ${JSON.stringify(opts.backend)},`
    : opts.backendPath
      ? `backend: { consul: { path: ${JSON.stringify(opts.backendPath)}, gzip: true } },`
      : "";
  await writeFile(
    file,
    `import { defineConfig, services, catalogServices, ModuleTask } from ${JSON.stringify(PUBLIC_API)};
import { MemberFile, PerInstanceFiles, ChainedFiles, CatalogFile } from ${JSON.stringify(BENCH_TASKS)};
void services; void catalogServices; void ModuleTask; void MemberFile; void PerInstanceFiles; void ChainedFiles; void CatalogFile;
export default defineConfig({
  consul: { address: ${JSON.stringify(opts.consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(opts.dir, "sync-tasks"))}, ${backend} } },
  bufferPeriod: false,
  ${opts.extra ?? ""}
  tasks: [
    ${opts.tasks.join(",\n    ")}
  ],
});
`,
  );
  return file;
}

/** `JSON.stringify` for splicing values into generated TypeScript. */
export const lit = (v: unknown) => JSON.stringify(v);
