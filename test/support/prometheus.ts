import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** One sample as Prometheus's parser read it (values as text: NaN and ±Inf are valid). */
export interface MetricSample {
  labels: Record<string, string>;
  value?: string;
  count?: number;
  sum?: string;
  buckets?: Record<string, number>;
}

/** One metric family: # HELP, # TYPE and its samples. */
export interface MetricFamily {
  name: string;
  help: string;
  type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
  metrics: MetricSample[];
}

const SOURCE = fileURLToPath(new URL("./promparse/", import.meta.url));
let binary: string | undefined;

/**
 * Prometheus's own text-format parser (github.com/prometheus/common/expfmt, what a Prometheus
 * server scrapes with), built once from test/support/promparse with Go, as scripts/tools.sh builds
 * Consul and OpenTofu. The npm parsers we tried (parse-prometheus-text-format, exposition) drop the
 * labels of labelled histograms, so they cannot check what cts serves.
 */
function parserBinary(): string {
  if (binary) return binary;
  const hash = createHash("sha256");
  for (const f of ["main.go", "go.mod", "go.sum"]) hash.update(readFileSync(join(SOURCE, f)));
  const dir = process.env.CTS_TOOLS_DIR || join(homedir(), ".cache", "cts-tools");
  const bin = join(dir, `promparse-${hash.digest("hex").slice(0, 12)}`);
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    execFileSync("go", ["build", "-trimpath", "-o", tmp, "."], { cwd: SOURCE, stdio: ["ignore", "inherit", "inherit"] });
    renameSync(tmp, bin);
  }
  binary = bin;
  return bin;
}

/** Parses Prometheus text format with Prometheus's parser; throws on anything a Prometheus scrape would refuse. */
export function parseMetrics(text: string): MetricFamily[] {
  return JSON.parse(execFileSync(parserBinary(), { input: text, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] })) as MetricFamily[];
}

/** The sum over samples of `name` whose labels include `labels`: counter/gauge values, histogram counts. 0 when absent. */
export function sampleValue(families: MetricFamily[], name: string, labels: Record<string, string> = {}): number {
  const family = families.find((f) => f.name === name);
  let total = 0;
  for (const m of family?.metrics ?? []) {
    if (!Object.entries(labels).every(([k, v]) => m.labels[k] === v)) continue;
    total += m.count ?? Number(m.value);
  }
  return total;
}
