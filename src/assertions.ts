import { AssertionError } from "node:assert";
import { liveTemplates, ownExpressionKey, type OwnExpressions } from "./cdktf/literal-text.ts";
import { ownExpressionsOf } from "./synth/own-expressions.ts";

/**
 * Assertions on synthesized Terraform JSON for task tests. They throw node's AssertionError, which
 * node:test, vitest and jest all report as a failure, so they depend on no test framework. A
 * failure lists the nearest resources with what differs, as a reviewer would want to see it.
 */

/** Synthesized JSON: the object `Testing.synthTask` returns, or its text (or `Testing.synthTaskResult`'s result). */
export type SynthesizedJson = Record<string, any> | string;

/** Expected properties: a deep subset of a resource's body; a RegExp matches a string value. */
export type ExpectedProperties = Record<string, unknown>;

/** A resource found in the JSON. */
export interface FoundResource {
  /** `type.name`, as Terraform addresses it. */
  address: string;
  /** The resource's body. */
  body: Record<string, any>;
}

/** How many nearest resources a failure shows. */
const NEAREST = 3;

function parsed(json: SynthesizedJson): Record<string, any> {
  if (isSynthResult(json)) return JSON.parse(json.json);
  return typeof json === "string" ? JSON.parse(json) : json;
}

/** A `SynthResult` (`Testing.synthTaskResult`): its `json` is the document. */
function isSynthResult(json: SynthesizedJson): json is { json: string; hash: string } {
  return typeof json === "object" && json !== null && typeof json.json === "string" && typeof json.hash === "string" && json.resource === undefined;
}

/** Resources (or, for `data.<type>`, data sources) of one type. */
function resourcesOf(json: Record<string, any>, type: string): FoundResource[] {
  const [block, name] = type.startsWith("data.") ? ["data", type.slice(5)] : ["resource", type];
  const byName = (json[block]?.[name] ?? {}) as Record<string, Record<string, any>>;
  return Object.entries(byName).map(([n, body]) => ({ address: `${type}.${n}`, body }));
}

function typesIn(json: Record<string, any>): string[] {
  const out: string[] = [];
  for (const [t, byName] of Object.entries((json.resource ?? {}) as Record<string, object>)) out.push(`${t} (${Object.keys(byName).length})`);
  for (const [t, byName] of Object.entries((json.data ?? {}) as Record<string, object>)) out.push(`data.${t} (${Object.keys(byName).length})`);
  return out;
}

/** The differences between expected properties and a value, one line each ("a.b: expected …, got …"). */
export function propertyDiff(expected: unknown, actual: unknown, path = ""): string[] {
  const at = path || "(value)";
  if (expected instanceof RegExp) return typeof actual === "string" && expected.test(actual) ? [] : [`${at}: expected to match ${expected}, got ${show(actual)}`];
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${at}: expected a list, got ${show(actual)}`];
    if (actual.length !== expected.length) return [`${at}: expected ${expected.length} items, got ${actual.length}: ${show(actual)}`];
    return expected.flatMap((e, i) => propertyDiff(e, actual[i], `${path}[${i}]`));
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return [`${at}: expected an object, got ${show(actual)}`];
    return Object.entries(expected).flatMap(([k, e]) =>
      Object.hasOwn(actual, k) ? propertyDiff(e, (actual as Record<string, unknown>)[k], path ? `${path}.${k}` : k) : [`${path ? `${path}.${k}` : k}: missing (expected ${show(e)})`],
    );
  }
  return Object.is(expected, actual) ? [] : [`${at}: expected ${show(expected)}, got ${show(actual)}`];
}

function show(v: unknown): string {
  const text = v === undefined ? "undefined" : JSON.stringify(v);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

function nearest(candidates: FoundResource[], expected: ExpectedProperties): string {
  const ranked = candidates
    .map((r) => ({ r, diff: propertyDiff(expected, r.body) }))
    .sort((a, b) => a.diff.length - b.diff.length || (a.r.address < b.r.address ? -1 : 1))
    .slice(0, NEAREST);
  const more = candidates.length > NEAREST ? `\n  … and ${candidates.length - NEAREST} more` : "";
  return ranked.map(({ r, diff }) => `  ${r.address}:\n${diff.map((d) => `    ${d}`).join("\n")}`).join("\n") + more;
}

/**
 * Throws the failure. The operator is node's "fail" (as `assert.fail`): jest then prints the message
 * as it is, and node:test and vitest show `actual` beside `expected` as a diff.
 */
function fail(message: string, actual?: unknown, expected?: unknown, fn?: Function): never {
  throw new AssertionError({ message, actual, expected, operator: "fail", ...(fn ? { stackStartFn: fn } : {}) });
}

function nearestBody(candidates: FoundResource[], expected: ExpectedProperties): Record<string, any> {
  return [...candidates].sort((a, b) => propertyDiff(expected, a.body).length - propertyDiff(expected, b.body).length)[0]!.body;
}

/**
 * Every `${…}`/`%{…}` Terraform would evaluate in the strings (and keys) under `path` that the
 * synthesis did not record as the task's own expression (`own`; without a record, every one).
 */
function foreignTemplates(value: unknown, path: string[], own: OwnExpressions | undefined, out: string[]): void {
  const check = (text: string, at: string[], key: boolean) => {
    const live = liveTemplates(text);
    if (!live.length) return;
    const allowed = [...(own?.[ownExpressionKey(at, key)] ?? [])];
    const foreign = live.filter((t) => {
      const i = allowed.indexOf(t);
      if (i === -1) return true;
      allowed.splice(i, 1);
      return false;
    });
    if (foreign.length) out.push(`${displayPath(at)}${key ? " (a key)" : ""}: ${show(text)} evaluates ${foreign.map((t) => (t.length > 60 ? `${t.slice(0, 57)}...` : t)).join(", ")}`);
  };
  if (typeof value === "string") check(value, path, false);
  else if (Array.isArray(value)) value.forEach((v, i) => foreignTemplates(v, [...path, String(i)], own, out));
  else if (value && typeof value === "object")
    for (const [k, v] of Object.entries(value)) {
      if (k === "//") continue;
      check(k, [...path, k], true);
      foreignTemplates(v, [...path, k], own, out);
    }
}

/** A JSON path as a reviewer reads it: `type.name.attr[0]` for a resource, `data.type.name…`, `output.name…`. */
function displayPath(path: string[]): string {
  const [top, ...rest] = path;
  const parts = top === "resource" ? rest : [top!, ...rest];
  return parts.map((p, i) => (/^\d+$/.test(p) && i > 0 ? `[${p}]` : `${i > 0 ? "." : ""}${p}`)).join("");
}

/** The assertions `Testing` offers (each returns what it found, for further checks). */
export const assertions = {
  /** Asserts a resource of `type` (`data.<type>` for a data source) whose body has `properties`; returns it. */
  assertHasResource(json: SynthesizedJson, type: string, properties: ExpectedProperties = {}): FoundResource {
    const doc = parsed(json);
    const candidates = resourcesOf(doc, type);
    const hit = candidates.find((r) => propertyDiff(properties, r.body).length === 0);
    if (hit) return hit;
    if (candidates.length === 0) {
      const types = typesIn(doc);
      fail(`Expected a resource of type ${type}, but there is none. Resource types present: ${types.length ? types.join(", ") : "none"}.`, types, type, assertions.assertHasResource);
    }
    fail(`Expected a resource of type ${type} with ${show(properties)}; the nearest of ${candidates.length}:\n${nearest(candidates, properties)}`, nearestBody(candidates, properties), properties, assertions.assertHasResource);
  },

  /** Asserts no resource of `type` has `properties` (no properties: no resource of the type at all). */
  assertNoResource(json: SynthesizedJson, type: string, properties: ExpectedProperties = {}): void {
    const hits = resourcesOf(parsed(json), type).filter((r) => propertyDiff(properties, r.body).length === 0);
    if (hits.length) fail(`Expected no resource of type ${type} with ${show(properties)}, found ${hits.map((h) => h.address).join(", ")}.`, hits.map((h) => h.body), undefined, assertions.assertNoResource);
  },

  /** Asserts exactly `count` resources of `type` (with `properties`, when given); returns them. */
  assertResourceCount(json: SynthesizedJson, type: string, count: number, properties: ExpectedProperties = {}): FoundResource[] {
    const doc = parsed(json);
    const all = resourcesOf(doc, type);
    const hits = all.filter((r) => propertyDiff(properties, r.body).length === 0);
    if (hits.length !== count) {
      const which = Object.keys(properties).length ? ` with ${show(properties)}` : "";
      const list = hits.length ? `: ${hits.map((h) => h.address).join(", ")}` : "";
      const near = hits.length < count && all.length > hits.length ? `\nThe nearest others:\n${nearest(all.filter((r) => !hits.includes(r)), properties)}` : "";
      fail(`Expected ${count} resource(s) of type ${type}${which}, found ${hits.length}${list}.${near}`, hits.length, count, assertions.assertResourceCount);
    }
    return hits;
  },

  /** Asserts a provider block for `name` (e.g. "local") with `properties`; returns its body. */
  assertProviderConfigured(json: SynthesizedJson, name: string, properties: ExpectedProperties = {}): Record<string, any> {
    const doc = parsed(json);
    const raw = doc.provider?.[name];
    const blocks: Record<string, any>[] = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    const hit = blocks.find((b) => propertyDiff(properties, b).length === 0);
    if (hit) return hit;
    const required = Object.keys(doc.terraform?.required_providers ?? {});
    if (blocks.length === 0)
      fail(`Expected provider "${name}" to be configured, but it is not. Providers configured: ${Object.keys(doc.provider ?? {}).join(", ") || "none"}; required: ${required.join(", ") || "none"}.`, Object.keys(doc.provider ?? {}), name, assertions.assertProviderConfigured);
    const shown = blocks.map((b, i) => ({ address: `provider.${name}${blocks.length > 1 ? `[${i}]` : ""}`, body: b }));
    fail(`Expected provider "${name}" with ${show(properties)}:\n${nearest(shown, properties)}`, blocks, properties, assertions.assertProviderConfigured);
  },

  /**
   * Asserts that Terraform evaluates nothing in the JSON but the task's own expressions: every
   * `${…}`/`%{…}` must be one the task wrote through cdktf (a reference such as `sg.id`, an `Fn`
   * call, an iterator), as the synthesis recorded it; catalog text (and any text the task typed)
   * must be literal (`$${`/`%%{`). Checks the resources of `type` (`data.<type>` for data sources),
   * optionally one resource `name`, or, without `type`, the whole JSON. JSON that did not come from
   * `Testing.synthTask`/`synthTaskResult` has no such record: then every expression is reported.
   */
  assertNoInterpolation(json: SynthesizedJson, type?: string, name?: string): void {
    const own = typeof json === "object" || typeof json === "string" ? ownExpressionsOf(json) : undefined;
    const doc = parsed(json);
    const found: string[] = [];
    if (type === undefined) foreignTemplates(doc, [], own, found);
    else {
      const [block, t] = type.startsWith("data.") ? ["data", type.slice(5)] : ["resource", type];
      for (const [n, body] of Object.entries((doc[block]?.[t] ?? {}) as Record<string, unknown>)) if (name === undefined || n === name) foreignTemplates(body, [block, t, n], own, found);
    }
    if (found.length) {
      const why = own ? "not an expression the task wrote (catalog or typed text that was not escaped)" : "this JSON carries no record of the task's own expressions (pass what Testing.synthTask returns), so each counts";
      fail(`Expected no Terraform interpolation but the task's own expressions, but Terraform would evaluate (${why}):\n${found.map((f) => `  ${f}`).join("\n")}`, found, [], assertions.assertNoInterpolation);
    }
  },
};
