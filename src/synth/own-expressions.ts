import { liveTemplates, ownExpressionKey, type OwnExpressions } from "../cdktf/literal-text.ts";

export type { OwnExpressions } from "../cdktf/literal-text.ts";

/**
 * Which `${…}`/`%{…}` of a synthesized JSON the task wrote itself (its cdktf references, `Fn`
 * calls, iterators), kept beside the JSON `Testing` returns, so that `assertNoInterpolation` can
 * tell them from catalog text Terraform would evaluate. Kept by the object (the parsed JSON, the
 * SynthResult) and, for the last few, by the JSON text.
 */
interface Store {
  byObject: WeakMap<object, OwnExpressions>;
  byText: Map<string, OwnExpressions>;
}
// On globalThis: a test runner or a config's tsx namespace may load a second copy of this module
// (Testing's and the assertions' must still meet).
const STORE = Symbol.for("cdktf-sync.own-expressions");
const { byObject, byText } = ((globalThis as Record<symbol, unknown>)[STORE] ??= { byObject: new WeakMap(), byText: new Map() } satisfies Store) as Store;
const TEXTS_KEPT = 16;

/** Remembers `own` as the task's expressions in `of` (an object, or the JSON text). */
export function keepOwnExpressions(of: object | string, own: OwnExpressions): void {
  if (typeof of !== "string") {
    byObject.set(of, own);
    return;
  }
  byText.delete(of);
  byText.set(of, own);
  if (byText.size > TEXTS_KEPT) byText.delete(byText.keys().next().value!);
}

/** The task's expressions in `of`, if it came from a synthesis that recorded them. */
export function ownExpressionsOf(of: object | string): OwnExpressions | undefined {
  return typeof of === "string" ? byText.get(of) : byObject.get(of);
}

/**
 * The expressions in every string of `json` outside the `skip` top-level blocks: for JSON cts
 * builds itself (a module task's root module), whose catalog data sits only in the skipped blocks.
 */
export function expressionsIn(json: Record<string, unknown>, skip: string[]): OwnExpressions {
  const own: OwnExpressions = {};
  const walk = (v: unknown, path: string[]): void => {
    if (typeof v === "string") {
      const live = liveTemplates(v);
      if (live.length) own[ownExpressionKey(path)] = live;
    } else if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...path, String(i)]));
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
  };
  for (const [k, v] of Object.entries(json)) if (!skip.includes(k)) walk(v, [k]);
  return own;
}
