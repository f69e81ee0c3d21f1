import { parseExpression, type FilterNode, type MatchNode } from "./filter-parser.ts";

/**
 * Consul's filter language (go-bexpr, as Consul 1.x evaluates it on `/v1/health/service`), for the
 * places cts must answer without Consul: `Testing.synthTask` and `cts synth --input`. A filter
 * that would mean something different here than in Consul must fail, never pass silently: every
 * selector and operator outside the table of filter-parser.ts throws FILTER_UNSUPPORTED naming it.
 *
 * Semantics kept from Consul (checked by test/integration/consul-filter.test.ts against an agent):
 * `Checks` are the node's checks and the service's (src/synth/snapshot.ts builds them as Consul
 * does: a passing `serfHealth` by default, maintenance as its critical check); a selector through
 * `Checks` holds when any check holds; a missing map key makes `==`, `in` and
 * `is not empty` false and every other operator true; `contains`/`in` on a string is a substring
 * test, on a list membership, on a map a key test; `Service.Port` compares as an integer.
 */

/** One health entry as the filter sees it (the fields cts can model). */
export interface FilterEntry {
  Node: { ID: string; Node: string; Address: string; Datacenter: string; TaggedAddresses: Record<string, string>; Meta: Record<string, string> };
  Service: { Kind: string; ID: string; Service: string; Tags: string[]; Address: string; Meta: Record<string, string>; Port: number };
  /** The node's checks (ServiceID "") and the service's, as `/v1/health/service` gives them. */
  Checks: Array<{ Node: string; CheckID: string; Name: string; Status: string; ServiceID: string; ServiceName: string }>;
}

/** A parsed filter: evaluate it on entries. */
export interface Filter {
  /** The expression as written. */
  readonly source: string;
  /** Whether Consul would return this entry. */
  matches(entry: FilterEntry): boolean;
}

/** Parses a filter expression; throws FILTER_UNSUPPORTED for syntax errors and selectors or operators cts cannot evaluate. */
export function parseFilter(source: string): Filter {
  const ast = parseExpression(source);
  return { source, matches: (entry) => evaluate(ast, entry) };
}

/** Keeps the entries a filter expression selects (no expression: all of them). */
export function applyFilter<T>(items: T[], filter: string | undefined, entryOf: (item: T) => FilterEntry): T[] {
  if (!filter) return items;
  const f = parseFilter(filter);
  return items.filter((i) => f.matches(entryOf(i)));
}

function evaluate(node: FilterNode, entry: FilterEntry): boolean {
  switch (node.type) {
    case "and":
      return evaluate(node.left, entry) && evaluate(node.right, entry);
    case "or":
      return evaluate(node.left, entry) || evaluate(node.right, entry);
    case "not":
      return !evaluate(node.operand, entry);
    case "match":
      if (node.path[0] === "Checks" && node.path.length > 1) {
        // As go-bexpr walks a slice: the match holds when it holds for any element.
        const field = node.path[1] as keyof FilterEntry["Checks"][number];
        return entry.Checks.some((check) => matchValue(node, check[field]));
      }
      return matchAt(node, entry);
  }
}

function matchAt(node: MatchNode, entry: FilterEntry): boolean {
  const [top, field, key] = node.path as [keyof FilterEntry, string, string | undefined];
  const holder = entry[top] as unknown as Record<string, unknown>;
  if (top === "Checks") return matchValue(node, entry.Checks);
  const value = holder[field];
  if (key !== undefined) {
    const map = value as Record<string, string>;
    if (!Object.hasOwn(map, key)) return !(node.op === "==" || node.op === "in" || node.op === "is not empty");
    return matchValue(node, map[key]);
  }
  return matchValue(node, value);
}

function matchValue(node: MatchNode, value: unknown): boolean {
  switch (node.op) {
    case "==":
      return equal(node, value);
    case "!=":
      return !equal(node, value);
    case "in":
      return contains(node.value!, value);
    case "not in":
      return !contains(node.value!, value);
    case "is empty":
      return size(value) === 0;
    case "is not empty":
      return size(value) !== 0;
    case "matches":
      return node.regexp!.test(String(value));
    case "not matches":
      return !node.regexp!.test(String(value));
  }
}

function equal(node: MatchNode, value: unknown): boolean {
  return node.int !== undefined ? value === node.int : value === node.value;
}

function contains(needle: string, value: unknown): boolean {
  if (typeof value === "string") return value.includes(needle);
  if (Array.isArray(value)) return value.includes(needle);
  return Object.hasOwn(value as object, needle);
}

function size(value: unknown): number {
  return Array.isArray(value) ? value.length : Object.keys(value as object).length;
}
