/** One object a Terraform state records: a resource instance's address and its id (when it has one). */
export interface StateObject {
  address: string;
  id?: string;
}

interface StateJson {
  resources?: Array<{ mode?: string; module?: string; type?: string; name?: string; instances?: Array<{ index_key?: string | number; attributes?: { id?: unknown } }> }>;
}

/**
 * The managed objects of a state (version 4 JSON: `terraform.tfstate`, `errored.tfstate`, what the
 * consul backend stores): `module.x.type.name[key]` and the id, data sources left out. Undefined
 * when the text is not such a state.
 */
export function stateObjects(text: string): StateObject[] | undefined {
  let state: StateJson;
  try {
    state = JSON.parse(text) as StateJson;
  } catch {
    return undefined;
  }
  if (!state || typeof state !== "object" || !Array.isArray(state.resources)) return undefined;
  const objects: StateObject[] = [];
  for (const r of state.resources) {
    if (r?.mode !== "managed" || typeof r.type !== "string" || typeof r.name !== "string") continue;
    const base = `${r.module ? `${r.module}.` : ""}${r.type}.${r.name}`;
    for (const i of Array.isArray(r.instances) ? r.instances : []) {
      const key = i?.index_key === undefined ? "" : typeof i.index_key === "number" ? `[${i.index_key}]` : `[${JSON.stringify(i.index_key)}]`;
      const id = i?.attributes?.id;
      objects.push({ address: base + key, ...(typeof id === "string" || typeof id === "number" ? { id: String(id) } : {}) });
    }
  }
  return objects;
}

/** The objects of `made` that `saved` does not hold (by address and id: a replaced object is outside too). */
export function outsideOf(made: readonly StateObject[], saved: readonly StateObject[]): StateObject[] {
  const held = new Set(saved.map((o) => `${o.address}\0${o.id ?? ""}`));
  return made.filter((o) => !held.has(`${o.address}\0${o.id ?? ""}`));
}

interface ShownModule {
  resources?: Array<{ address?: string; mode?: string; values?: { id?: unknown } }>;
  child_modules?: ShownModule[];
}

/** The managed objects of `tofu show -json`'s state (`values.root_module`, child modules included); undefined when it is not such JSON. */
export function shownObjects(text: string): StateObject[] | undefined {
  let shown: { values?: { root_module?: ShownModule } };
  try {
    shown = JSON.parse(text) as typeof shown;
  } catch {
    return undefined;
  }
  if (!shown || typeof shown !== "object") return undefined;
  const objects: StateObject[] = [];
  const walk = (m: ShownModule | undefined, depth: number) => {
    if (!m || depth > 32) return;
    for (const r of Array.isArray(m.resources) ? m.resources : []) {
      if (r?.mode !== "managed" || typeof r.address !== "string") continue;
      const id = r.values?.id;
      objects.push({ address: r.address, ...(typeof id === "string" || typeof id === "number" ? { id: String(id) } : {}) });
    }
    for (const c of Array.isArray(m.child_modules) ? m.child_modules : []) walk(c, depth + 1);
  };
  walk(shown.values?.root_module, 0);
  return objects;
}
