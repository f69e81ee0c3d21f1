/**
 * cdktf (and cdktn, which keeps the same global) registers every token a synthesis makes in one
 * process-global map (`globalThis.__cdktfTokenMap`) that it never clears: about 1 MB per synthesis
 * of 200 referencing resources, forever. A synthesis is synchronous and its stack is thrown away
 * once its JSON is written, so the tokens it registered are garbage afterwards. `withTokenScope`
 * removes them: the worker's heap stays at its baseline instead of growing with every change.
 * Tokens registered before (a config that made tokens while it loaded) are kept.
 */
interface TokenMapLike {
  stringTokenMap?: Map<string, unknown>;
  numberTokenMap?: Map<number, unknown>;
}

const GLOBAL_KEY = "__cdktfTokenMap";

function tokenMap(): TokenMapLike | undefined {
  return (globalThis as Record<string, unknown>)[GLOBAL_KEY] as TokenMapLike | undefined;
}

/** Deletes the entries added to `map` after its first `keep` (a Map iterates in insertion order). */
function trimTo<K>(map: Map<K, unknown> | undefined, keep: number): void {
  if (!map || map.size <= keep) return;
  let i = 0;
  const added: K[] = [];
  for (const key of map.keys()) if (i++ >= keep) added.push(key);
  for (const key of added) map.delete(key);
}

/** How many tokens the global map holds now (0 before cdktf made one). */
export function tokenCount(): number {
  const map = tokenMap();
  return (map?.stringTokenMap?.size ?? 0) + (map?.numberTokenMap?.size ?? 0);
}

/** Runs one synchronous synthesis and forgets the tokens it registered, whether it succeeds or throws. */
export function withTokenScope<R>(synthesis: () => R): R {
  const before = tokenMap();
  const strings = before?.stringTokenMap?.size ?? 0;
  const numbers = before?.numberTokenMap?.size ?? 0;
  try {
    return synthesis();
  } finally {
    // The map may have been created by this very synthesis (the first one): then it keeps nothing.
    const after = tokenMap();
    trimTo(after?.stringTokenMap, after === before ? strings : 0);
    trimTo(after?.numberTokenMap, after === before ? numbers : 0);
  }
}
