import { createHash } from "node:crypto";
import { MAX_WALK_DEPTH, tooDeepAt } from "../values/data-depth.ts";

/** JSON with object keys sorted, so equal content always gives equal text. */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stable(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Terraform JSON allows a block to be an object or an array of objects; this flattens both. */
function blocks(value: unknown): Record<string, unknown>[] {
  if (Array.isArray(value)) return value.flatMap(blocks);
  return value && typeof value === "object" ? [value as Record<string, unknown>] : [];
}

/**
 * The parts of one Terraform JSON document that `init` depends on: the `terraform` block (backend,
 * required_providers, required_version), each module's source and version, and the provider names
 * that resources, data sources and provider blocks imply (a resource can pull in a provider that
 * required_providers never mentions).
 */
export function initInputs(doc: unknown): unknown {
  const root = blocks(doc)[0] ?? {};
  const modules: Record<string, unknown> = {};
  for (const block of blocks(root.module)) {
    for (const [name, body] of Object.entries(block)) {
      const b = blocks(body)[0] ?? {};
      modules[name] = { source: b.source, version: b.version };
    }
  }
  const providers = new Set<string>();
  for (const key of ["resource", "data"]) {
    for (const block of blocks(root[key])) {
      for (const [type, byName] of Object.entries(block)) {
        providers.add(type.split("_")[0]!);
        for (const inner of blocks(byName)) {
          for (const body of Object.values(inner)) {
            for (const b of blocks(body)) if (typeof b.provider === "string") providers.add(b.provider.split(".")[0]!);
          }
        }
      }
    }
  }
  for (const block of blocks(root.provider)) for (const name of Object.keys(block)) providers.add(name);
  return { terraform: root.terraform ?? null, modules, providers: [...providers].sort() };
}

/**
 * Hash of everything that needs a new `init` when it changes: the init inputs of main.tf.json and of
 * extra `*.tf.json` files, and the whole text of extra `*.tf` files (HCL we do not parse, so any
 * change there re-inits; being conservative costs one init, being wrong costs a failed run).
 */
export function initHash(mainJson: string, files: Record<string, string> = {}): string {
  const h = createHash("sha256");
  const part = (name: string, text: string) => {
    h.update(name);
    h.update("\0");
    h.update(text);
    h.update("\0");
  };
  part("main.tf.json", initText(mainJson));
  for (const name of Object.keys(files).sort()) {
    const content = files[name]!;
    if (name.endsWith(".tf.json")) part(name, initText(content));
    else if (name.endsWith(".tf")) part(name, content);
  }
  return h.digest("hex");
}

// Unparseable JSON still has to hash deterministically; tofu reports the syntax error itself.
function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { unparseable: text };
  }
}

/**
 * The init inputs of one JSON document as stable text. A document nested too deep for the walks
 * above counts whole, as a `.tf` file does: any change to it means a new init, never a stack overflow.
 */
function initText(text: string): string {
  const doc = parseOrText(text);
  return tooDeepAt(doc, MAX_WALK_DEPTH) === undefined ? stable(initInputs(doc)) : text;
}
