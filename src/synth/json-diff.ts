/**
 * What changed between two syntheses of one task, by Terraform address: the review view of
 * `cts diff`. Compares the JSON cts writes (main.tf.json), not a plan: it needs no state and no
 * provider, so it runs in CI without credentials. Each block is shown with its values: an added or
 * removed one with its attributes, a changed one as `path: old → new` (review-values.ts: secrets
 * redacted, long values shortened with a hash), nested blocks as paths (`ingress[0].cidr_blocks`).
 */
import { constructIdParts } from "../task/ids.ts";
import { quote } from "../values/quote.ts";
import { sensitiveName, shownValue } from "./review-values.ts";

/** One attribute of an added or removed block, its value as shown. */
export interface AttributeValue {
  path: string;
  value: string;
}

/** One attribute of a changed block: its value before and after, as shown (absent: not set on that side). */
export interface AttributeChange {
  path: string;
  before?: string;
  after?: string;
}

/** One block of the JSON that was added, removed or changed. */
export interface BlockChange {
  /** Terraform's address: `type.name` for a resource, `data.type.name`, `module.name`, `output.name`, `provider.name`, `terraform`. */
  address: string;
  /**
   * The block as the task named it, when that differs from the address's name: its construct path
   * under the task (cdktf's `//` metadata), `constructId` parts decoded (`web-1` for `web_2d_1`).
   */
  name?: string;
  action: "add" | "change" | "remove";
  /** For a change: the attribute paths that differ (`tags.env`, `ingress[0].port`), at most MAX_SHOWN. */
  paths?: string[];
  /** For a change: each differing attribute, before and after, at most MAX_SHOWN. */
  changes?: AttributeChange[];
  /** For an addition or removal: the block's attributes, at most MAX_SHOWN. */
  attributes?: AttributeValue[];
  /** How many attributes (or changes) were left out past MAX_SHOWN. */
  more?: number;
}

/** Attributes (or changes) listed per block; more are counted. */
export const MAX_SHOWN = 40;

type Json = unknown;
interface Block {
  body: Json;
  /** The construct path under the stack, as cdktf recorded it. */
  path?: string;
  /** The attribute whose value the block declares sensitive: a sensitive output's `value`, a sensitive variable's `default`. */
  sensitive?: string;
}
type Blocks = Map<string, Block>;

/**
 * The blocks of a synthesized JSON by address. cdktf's `//` metadata (construct paths, stack
 * name) is left out of the compared body: it moves when a construct is renamed without changing
 * what Terraform does; the construct path is kept as the block's name.
 */
export function blocksOf(json: string | undefined): Blocks {
  const out: Blocks = new Map();
  if (json === undefined) return out;
  const doc = JSON.parse(json) as Record<string, Json>;
  const add = (address: string, body: Json) => {
    const meta = isObject(body) && isObject(body["//"]) ? body["//"].metadata : undefined;
    const path = isObject(meta) && typeof meta.path === "string" ? meta.path : undefined;
    const declared = isObject(body) && body.sensitive === true;
    const sensitive = declared && address.startsWith("output.") ? "value" : declared && address.startsWith("variable.") ? "default" : undefined;
    out.set(address, { body: strip(body), ...(path ? { path } : {}), ...(sensitive ? { sensitive } : {}) });
  };
  const typed = (prefix: string, group: Json) => {
    for (const [type, byName] of entries(group)) for (const [name, body] of entries(byName)) add(`${prefix}${type}.${name}`, body);
  };
  for (const [key, value] of entries(doc)) {
    if (key === "//") continue;
    if (key === "resource") typed("", value);
    else if (key === "data") typed("data.", value);
    else if (key === "terraform") add("terraform", value);
    else for (const [name, body] of entries(value)) add(`${key}.${name}`, body);
  }
  return out;
}

/** The blocks added, removed and changed from `base` to `head` (either may be absent: a task added or removed). */
export function diffSynthesized(base: string | undefined, head: string | undefined): BlockChange[] {
  const before = blocksOf(base);
  const after = blocksOf(head);
  const changes: BlockChange[] = [];
  for (const address of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const a = before.get(address);
    const b = after.get(address);
    const name = nameOf(address, (b ?? a)!.path);
    const named = name ? { name } : {};
    if (!a || !b) {
      const block = (b ?? a)!;
      const values = leaves(block.body);
      const attributes = [...values.keys()].sort(byPath).map((path) => ({ path, value: shownValue(values.get(path), hidden(block, path)) }));
      changes.push({ address, ...named, action: a ? "remove" : "add", ...listed("attributes", attributes) });
      continue;
    }
    const was = leaves(a.body);
    const now = leaves(b.body);
    const diffs: AttributeChange[] = [];
    for (const path of [...new Set([...was.keys(), ...now.keys()])].sort(byPath)) {
      const x = was.get(path);
      const y = now.get(path);
      if (was.has(path) && now.has(path) && JSON.stringify(x) === JSON.stringify(y)) continue;
      // An empty map that gained entries (or lost its last) shows as its entries, not as itself.
      if ((!now.has(path) && isEmpty(x) && hasUnder(now, path)) || (!was.has(path) && isEmpty(y) && hasUnder(was, path))) continue;
      const hide = hidden(a, path) || hidden(b, path);
      diffs.push({ path, ...(was.has(path) ? { before: shownValue(x, hide) } : {}), ...(now.has(path) ? { after: shownValue(y, hide) } : {}) });
    }
    if (diffs.length) {
      const shown = listed("changes", diffs);
      changes.push({ address, ...named, action: "change", paths: shown.changes.map((c) => c.path), ...shown });
    }
  }
  return changes;
}

/** Whether a review hides the value at `path` of `block`: declared sensitive, or named like a credential. */
function hidden(block: Block, path: string): boolean {
  return (block.sensitive !== undefined && (path === block.sensitive || path.startsWith(`${block.sensitive}.`) || path.startsWith(`${block.sensitive}[`))) || sensitiveName(path);
}

function listed<K extends "attributes" | "changes", T>(key: K, items: T[]): { [P in K]: T[] } & { more?: number } {
  const out = { [key]: items.slice(0, MAX_SHOWN) } as { [P in K]: T[] } & { more?: number };
  if (items.length > MAX_SHOWN) out.more = items.length - MAX_SHOWN;
  return out;
}

/**
 * The block's name as its task wrote it: the construct path under the stack, each id's
 * `constructId` parts decoded. Undefined when that reads as the address's own name.
 */
export function nameOf(address: string, constructPath: string | undefined): string | undefined {
  if (!constructPath) return undefined;
  const under = constructPath.split("/").slice(1);
  if (under.length === 0) return undefined;
  const name = under.map((id) => constructIdParts(id)?.join("-") ?? id).join("/");
  return address.endsWith(`.${name}`) ? undefined : name;
}

/**
 * The attributes of a block by path: nested objects and lists of blocks as paths (`tags.env`,
 * `ingress[0].cidr_blocks`); a list of plain values is one value.
 */
function leaves(body: Json, at = "", out = new Map<string, Json>()): Map<string, Json> {
  if (isObject(body)) {
    const keys = Object.keys(body);
    if (keys.length === 0 && at) out.set(at, body);
    for (const k of keys) leaves(body[k], at ? `${at}${segment(k)}` : IDENTIFIER.test(k) ? k : `[${quote(k)}]`, out);
  } else if (Array.isArray(body) && body.some((x) => isObject(x) || Array.isArray(x))) {
    body.forEach((x, i) => leaves(x, `${at}[${i}]`, out));
  } else out.set(at || "(value)", body);
  return out;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** A key as a path segment: `.name`, or `["a.b"]` for a key that is not an identifier (catalog text in a map, quoted as a log line would be). */
function segment(k: string): string {
  return IDENTIFIER.test(k) ? `.${k}` : `[${quote(k)}]`;
}

function isEmpty(v: Json): boolean {
  return (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0);
}

function hasUnder(values: Map<string, Json>, path: string): boolean {
  for (const p of values.keys()) if (p.startsWith(`${path}.`) || p.startsWith(`${path}[`)) return true;
  return false;
}

/** Paths in reading order: `a[2]` before `a[10]`. */
function byPath(a: string, b: string): number {
  return a.localeCompare(b, "en", { numeric: true });
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
