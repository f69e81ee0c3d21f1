/**
 * What changed between two syntheses of one task, by Terraform address: the review view of
 * `cts diff`. Compares the JSON cts writes (main.tf.json), not a plan: it needs no state and no
 * provider, so it runs in CI without credentials.
 */

/** One block of the JSON that was added, removed or changed. */
export interface BlockChange {
  /** Terraform's address: `type.name` for a resource, `data.type.name`, `module.name`, `output.name`, `provider.name`, `terraform`. */
  address: string;
  action: "add" | "change" | "remove";
  /** For a change: the attribute paths that differ (`tags.env`, `ingress[0].port`), at most MAX_PATHS. */
  paths?: string[];
}

/** Changed attribute paths listed per block; more are counted as "…". */
export const MAX_PATHS = 20;

type Json = unknown;
type Blocks = Map<string, Json>;

/**
 * The blocks of a synthesized JSON by address. cdktf's `//` metadata (construct paths, stack
 * name) is left out: it moves when a construct is renamed without changing what Terraform does.
 */
export function blocksOf(json: string | undefined): Blocks {
  const out: Blocks = new Map();
  if (json === undefined) return out;
  const doc = JSON.parse(json) as Record<string, Json>;
  const typed = (prefix: string, group: Json) => {
    for (const [type, byName] of entries(group)) for (const [name, body] of entries(byName)) out.set(`${prefix}${type}.${name}`, strip(body));
  };
  for (const [key, value] of entries(doc)) {
    if (key === "//") continue;
    if (key === "resource") typed("", value);
    else if (key === "data") typed("data.", value);
    else if (key === "terraform") out.set("terraform", strip(value));
    else for (const [name, body] of entries(value)) out.set(`${key}.${name}`, strip(body));
  }
  return out;
}

/** The blocks added, removed and changed from `base` to `head` (either may be absent: a task added or removed). */
export function diffSynthesized(base: string | undefined, head: string | undefined): BlockChange[] {
  const before = blocksOf(base);
  const after = blocksOf(head);
  const changes: BlockChange[] = [];
  for (const address of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    if (!before.has(address)) changes.push({ address, action: "add" });
    else if (!after.has(address)) changes.push({ address, action: "remove" });
    else {
      const paths: string[] = [];
      changedPaths(before.get(address), after.get(address), "", paths);
      if (paths.length) changes.push({ address, action: "change", paths: paths.length > MAX_PATHS ? [...paths.slice(0, MAX_PATHS), `… ${paths.length - MAX_PATHS} more`] : paths });
    }
  }
  return changes;
}

function changedPaths(a: Json, b: Json, at: string, out: string[]): void {
  if (isObject(a) && isObject(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) changedPaths(a[k], b[k], at ? `${at}.${k}` : k, out);
  } else if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) changedPaths(a[i], b[i], `${at}[${i}]`, out);
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push(at || "(value)");
  }
}

function strip(v: Json): Json {
  if (Array.isArray(v)) return v.map(strip);
  if (!isObject(v)) return v;
  return Object.fromEntries(Object.entries(v).filter(([k]) => k !== "//").map(([k, x]) => [k, strip(x)]));
}

function entries(v: Json): Array<[string, Json]> {
  return isObject(v) ? Object.entries(v) : [];
}

function isObject(v: Json): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
