import { existsSync, readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import type { Source } from "../consul/types.ts";
import { HEALTH_SELECTORS } from "../consul/filter-parser.ts";
import { CtsError } from "../errors/cts-error.ts";
import { quote } from "../values/quote.ts";

// Consul refuses a filter it cannot parse or whose selector does not exist (`Service.Tag` for
// `Service.Tags`) with a 400 (some versions a 500) saying "Failed to create boolean expression
// evaluator". That is not a Consul problem: it is the task's configuration, and the user needs the
// task, the filter, where they wrote it, and how to fix it (not "fix the Consul connection").

/** The filters a source sends to Consul (a services query's own, its entries', a nodes query's). */
function filtersOf(source: Source): string[] {
  const q = (source as { query?: { filter?: unknown; each?: Array<{ filter?: unknown }> } }).query;
  return [q?.filter, ...(q?.each ?? []).map((e) => e.filter)].filter((f): f is string => typeof f === "string" && f !== "");
}

/** True for Consul's answer to a filter it refuses (not a bad datacenter, namespace or service name). */
function isFilterRefusal(err: unknown): err is CtsError {
  if (!(err instanceof CtsError) || err.code !== "CONSUL_BAD_REQUEST" || err.detail.refusedName === true) return false;
  const reply = typeof err.detail.reply === "string" ? err.detail.reply : "";
  const url = typeof err.detail.url === "string" ? err.detail.url : "";
  return /boolean expression|filter|selector/i.test(reply) || (reply === "" && /[?&]filter=/.test(url));
}

/**
 * Where the user wrote `filter`: the first file (the config, then the local files it imports, a few
 * levels deep) whose text holds it as written or as a quoted string spells it, as `file:line:column`
 * relative to `cwd`. Undefined when none does (a filter built at run time, a task from the API).
 */
export function filterSite(filter: string, files: readonly string[], cwd = process.cwd()): string | undefined {
  const spellings = [...new Set([filter, JSON.stringify(filter).slice(1, -1), filter.replace(/\\/g, "\\\\").replace(/'/g, "\\'")])];
  const seen = new Set<string>();
  let level = files.map((f) => resolve(cwd, f));
  for (let depth = 0; depth < 4 && level.length && seen.size < 60; depth++) {
    const next: string[] = [];
    for (const file of level) {
      if (seen.has(file)) continue;
      seen.add(file);
      let text: string;
      try {
        text = readFileSync(file, "utf8");
      } catch {
        continue;
      }
      for (const s of spellings) {
        const at = text.indexOf(s);
        if (at < 0) continue;
        const before = text.slice(0, at).split("\n");
        const shown = relative(cwd, file);
        return `${shown && !shown.startsWith("..") ? shown : file}:${before.length}:${before[before.length - 1]!.length + 1}`;
      }
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
        const spec = resolve(dirname(file), m[1]!);
        const found = [spec, spec.replace(/\.js$/, ".ts"), `${spec}.ts`, `${spec}/index.ts`].find((p) => !p.includes("/node_modules/") && existsSync(p) && !p.endsWith("/"));
        if (found) next.push(found);
      }
    }
    level = next;
  }
  return undefined;
}

/**
 * A task's read that Consul refused for its filter, as the task configuration error it is
 * (TASK_FILTER_INVALID): the task, the filter, where the user wrote it (searched from `files`, the
 * config's), Consul's reason and the fix. Any other error is returned as it is.
 */
export function taskFilterError(task: string, source: Source, err: unknown, files: readonly string[] = [], cwd = process.cwd()): unknown {
  if (!isFilterRefusal(err)) return err;
  const filters = filtersOf(source);
  if (filters.length === 0) return err;
  const url = typeof err.detail.url === "string" ? err.detail.url : "";
  const filter = filters.find((f) => url.includes(encodeURIComponent(f)) || url.includes(new URLSearchParams({ f }).toString().slice(2))) ?? filters[0]!;
  const site = filterSite(filter, files, cwd);
  const reply = typeof err.detail.reply === "string" ? err.detail.reply.trim().replace(/\.$/, "") : `HTTP ${String(err.detail.status)}`;
  // A selector Consul does not know, on service instances: the one cts knows it most likely meant.
  const selector = /Selector "([^"]+)" is not valid/.exec(reply)?.[1];
  const meant = selector && source.kind === "services" ? nearest(selector, HEALTH_SELECTORS) : undefined;
  const hint = meant ? ` Did you mean ${meant}?` : "";
  return new CtsError(
    "TASK_FILTER_INVALID",
    "usage",
    `Consul refuses the filter ${quote(filter)} of the task's ${source.kind} query${site ? ` (at ${site})` : ""}: ${reply}.${hint} Fix the filter in the task's options (Consul's filter language: https://developer.hashicorp.com/consul/api-docs/features/filtering); \`cts synth --input\` and Testing check a filter offline.`,
    { task, cause: err, detail: { ...err.detail, filter, ...(site ? { site } : {}) } },
  );
}

/** The known selector closest to `selector` (at most 2 edits away, case aside), or undefined. */
function nearest(selector: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const k of known) {
    const d = distance(selector.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/** Levenshtein distance. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}
