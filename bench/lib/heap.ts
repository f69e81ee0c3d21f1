import { readFileSync } from "node:fs";
import type { ResultTable } from "./types.ts";

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/**
 * A V8 heap snapshot reduced to self size per kind of object (constructor name; strings, arrays
 * and code lumped together), largest first: where a process's JS memory goes.
 */
export function summarizeHeapSnapshot(file: string, top = 20): { totalBytes: number; table: ResultTable } {
  const snap = JSON.parse(readFileSync(file, "utf8")) as HeapSnapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const iType = fields.indexOf("type");
  const iName = fields.indexOf("name");
  const iSize = fields.indexOf("self_size");
  const agg = new Map<string, { count: number; bytes: number }>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + iType]!]!;
    const name = snap.strings[snap.nodes[i + iName]!] ?? "";
    const key =
      type === "string" || type === "concatenated string" || type === "sliced string"
        ? "(strings)"
        : type === "code"
          ? "(compiled code)"
          : type === "array"
            ? `(internal arrays: ${name || "elements"})`
            : type === "closure"
              ? "(closures)"
              : type === "hidden" || type === "object shape"
                ? "(V8 internals)"
                : `${name.slice(0, 50)}${type === "object" ? "" : ` (${type})`}`;
    const size = snap.nodes[i + iSize]!;
    const e = agg.get(key) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += size;
    agg.set(key, e);
    total += size;
  }
  const rows = [...agg.entries()]
    .sort((a, b) => b[1].bytes - a[1].bytes)
    .slice(0, top)
    .map(([k, v]) => [k, v.count.toLocaleString("en"), `${(v.bytes / 1024 / 1024).toFixed(1)} MB`, `${((v.bytes / total) * 100).toFixed(1)}%`]);
  return { totalBytes: total, table: { columns: ["Objects", "Count", "Self size", "%"], rows } };
}
