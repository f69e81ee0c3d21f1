import { services, type ServicesCondition } from "../../task/conditions.ts";
import { isObject } from "../../values/is-object.ts";
import { configError, type ReadBlock } from "../../config/hcl-schema.ts";
import type { HclValue } from "../../config/hcl.ts";

// CTS 0.5 renamed some task options and kept the old spellings working, with a warning at start
// (CTS-SOURCE-NOTES §1.5). cts reads them with the same meaning and warns the same way.

const at = (b: ReadBlock, key: string) => `${b.file}:${b.lines[key] ?? b.line}`;

/** The task's module: `module`, else the deprecated `source` (`module` wins when both are set, as in CTS). */
export function taskModule(t: ReadBlock, warn: string[]): HclValue | undefined {
  const { module, source } = t.attrs;
  if (source === undefined || source === "") return module;
  warn.push(`${at(t, "source")}: 'source' in a task block is deprecated since CTS 0.5.0: write module = "…" instead.`);
  if (module !== undefined && module !== "") {
    warn.push(`${at(t, "source")}: the task sets both 'source' and 'module'; 'module' (${String(module)}) is used.`);
    return module;
  }
  return source;
}

/** Warns for each deprecated `source_input` block (read as module_input). */
export function warnSourceInputs(t: ReadBlock, warn: string[]): void {
  for (const b of t.blocks.source_input ?? [])
    warn.push(`${b.file}:${b.line}: the 'source_input' block is deprecated since CTS 0.5.0: write module_input "${b.labels[0]}" { … } instead.`);
}

/** A condition's `use_as_module_input`, or its deprecated alias `source_includes_var` (with a warning). */
export function useAsModuleInput(c: ReadBlock, warn: string[]): boolean | undefined {
  const { use_as_module_input: use, source_includes_var: old } = c.attrs;
  if (old === undefined) return use as boolean | undefined;
  warn.push(`${at(c, "source_includes_var")}: 'source_includes_var' is deprecated since CTS 0.5.0: write use_as_module_input = ${String(old)} instead.`);
  return (use ?? old) as boolean;
}

/**
 * The deprecated task `services = [...]` list as one services query: each entry names a `service {}`
 * block by id (id defaults to its name) or is a service name. CTS queries each service with its own
 * block's settings: so does cts when the blocks differ in datacenter, namespace, filter or
 * cts_user_defined_meta (the query's `each`); when they agree it is one query with those settings.
 */
export function deprecatedServices(t: ReadBlock, serviceBlocks: ReadBlock[], warn: string[]): ServicesCondition | undefined {
  const list = t.attrs.services;
  if (list === undefined) return undefined;
  const fail = (msg: string): never => {
    throw configError(t.file, t.lines.services ?? t.line, msg);
  };
  if (!Array.isArray(list) || list.some((x) => typeof x !== "string" || x === "")) return fail("'services' must be a list of service names or ids, e.g. services = [\"web\", \"api\"].");
  warn.push(`${at(t, "services")}: the task 'services' list is deprecated since CTS 0.5.0: write condition "services" { names = [...] } (or module_input "services" when the task has another condition) instead.`);
  const byId = new Map<string, ReadBlock>();
  for (const b of serviceBlocks) {
    const name = b.attrs.name;
    if (typeof name !== "string" || name === "") throw configError(b.file, b.line, "a service block needs name = \"...\".");
    byId.set(String(b.attrs.id ?? name), b);
  }
  const settings = (list as string[]).map((entry) => {
    const b = byId.get(entry);
    const a = b?.attrs ?? {};
    const meta = a.cts_user_defined_meta;
    if (meta !== undefined && !isObject(meta)) throw configError(b!.file, b!.lines.cts_user_defined_meta ?? b!.line, "cts_user_defined_meta must be a map of strings.");
    return {
      name: b ? String(a.name) : entry,
      key: JSON.stringify([a.datacenter ?? "", a.namespace ?? "", a.filter ?? "", meta ?? {}]),
      a,
    };
  });
  const names = [...new Set(settings.map((s) => s.name))];
  // Service blocks that differ: each service is queried with its own block's settings, as CTS does.
  if (new Set(settings.map((s) => s.key)).size > 1)
    return services({
      names,
      each: settings.map(({ name, a }) => ({
        name,
        ...(a.datacenter !== undefined ? { datacenter: String(a.datacenter) } : {}),
        ...(a.namespace !== undefined ? { namespace: String(a.namespace) } : {}),
        ...(a.filter !== undefined ? { filter: String(a.filter) } : {}),
        ...(isObject(a.cts_user_defined_meta) ? { userMeta: a.cts_user_defined_meta as Record<string, string> } : {}),
      })),
    });
  const a = settings[0]?.a ?? {};
  return services({
    names,
    ...(a.datacenter !== undefined ? { datacenter: String(a.datacenter) } : {}),
    ...(a.namespace !== undefined ? { namespace: String(a.namespace) } : {}),
    ...(a.filter !== undefined ? { filter: String(a.filter) } : {}),
    ...(isObject(a.cts_user_defined_meta) ? { userMeta: a.cts_user_defined_meta as Record<string, string> } : {}),
  });
}
