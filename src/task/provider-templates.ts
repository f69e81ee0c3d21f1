import { isObject } from "../values/is-object.ts";

/**
 * A value read at run time from Vault or Consul KV, never written anywhere: CTS's templates in
 * `terraform_provider` blocks (`{{ with secret "p" }}{{ .Data.data.k }}{{ end }}`, `{{ key "p" }}`)
 * and the TypeScript helper `vaultSecret()`. It is plain data (it crosses to the synthesis worker
 * and back); the runtime renders it before each run and re-runs the tasks using it when it changes.
 */
export interface TemplateValue {
  ctsTemplate: TemplatePart[];
}

/** Literal text, a field of a Vault secret, or a Consul key's value. */
export type TemplatePart =
  | string
  /** `field`: the path under the secret's `.Data` (`["data", "password"]` for KV v2); `key`: KV v1 or v2 by the answer's shape. */
  | { secret: string; field?: string[]; key?: string }
  | { consulKey: string };

/** One thing a template reads: a Vault path or a Consul key. */
export type TemplateDependency = { secret: string } | { consulKey: string };

/**
 * A field of a Vault secret, for a provider argument, a `task_env` value or a task's `secrets`:
 * `vaultSecret("secret/data/db", "password")` reads the KV v2 secret `db` of mount `secret` (its
 * `.Data.data.password`); on a KV v1 path (`kv/db`) it reads `.Data.password`. The value is read
 * when a run starts, kept fresh while cts runs (a changed value re-runs the task), and reaches
 * Terraform only in its environment.
 */
export function vaultSecret(path: string, key: string): TemplateValue {
  return { ctsTemplate: [{ secret: path, key }] };
}

/** A Consul KV key's value, as CTS's `{{ key "path" }}` (watched; a change re-runs the task). */
export function consulKey(path: string): TemplateValue {
  return { ctsTemplate: [{ consulKey: path }] };
}

export function isTemplateValue(v: unknown): v is TemplateValue {
  return isObject(v) && Array.isArray((v as { ctsTemplate?: unknown }).ctsTemplate) && Object.keys(v).length === 1;
}

/** A template dependency's identity (for maps and subscriptions). */
export function dependencyId(d: TemplateDependency): string {
  return "secret" in d ? `vault:${d.secret}` : `consul-key:${d.consulKey}`;
}

/** Every template value in a provider's settings, a task_env map or a task's secrets (bounded walk). */
export function templateDependencies(values: unknown, out = new Map<string, TemplateDependency>(), depth = 0): Map<string, TemplateDependency> {
  if (depth > 64) return out;
  if (isTemplateValue(values)) {
    for (const p of values.ctsTemplate) {
      if (typeof p === "string") continue;
      const d: TemplateDependency = "secret" in p ? { secret: p.secret } : { consulKey: p.consulKey };
      out.set(dependencyId(d), d);
    }
  } else if (Array.isArray(values)) for (const v of values) templateDependencies(v, out, depth + 1);
  else if (isObject(values)) for (const v of Object.values(values)) templateDependencies(v, out, depth + 1);
  return out;
}

/** What a renderer reads: a secret's `.Data`, a key's value (undefined: the key does not exist). */
export interface TemplateLookup {
  secret(path: string): Record<string, unknown>;
  consulKey(path: string): string | undefined;
}

/** Thrown when a template cannot be rendered with the data read (a field or key that is not there). */
export class TemplateRenderError extends Error {}

/** The text of a template value with the data of `lookup`. */
export function renderTemplate(v: TemplateValue, lookup: TemplateLookup): string {
  let out = "";
  for (const p of v.ctsTemplate) {
    if (typeof p === "string") out += p;
    else if ("consulKey" in p) {
      const value = lookup.consulKey(p.consulKey);
      if (value === undefined) throw new TemplateRenderError(`the Consul key '${p.consulKey}' does not exist`);
      out += value;
    } else out += fieldText(lookup.secret(p.secret), p);
  }
  return out;
}

function fieldText(data: Record<string, unknown>, p: { secret: string; field?: string[]; key?: string }): string {
  let at: unknown;
  let shown: string;
  if (p.key !== undefined) {
    // KV v2 answers { data: {…}, metadata: {…} }; KV v1 answers the fields themselves.
    const v2 = isObject(data.data) && isObject(data.metadata);
    at = v2 ? (data.data as Record<string, unknown>)[p.key] : data[p.key];
    shown = v2 ? `.Data.data.${p.key}` : `.Data.${p.key}`;
  } else {
    at = data;
    for (const f of p.field ?? []) at = isObject(at) ? (at as Record<string, unknown>)[f] : undefined;
    shown = `.Data${(p.field ?? []).map((f) => `.${f}`).join("")}`;
  }
  if (at === undefined || at === null) throw new TemplateRenderError(`the Vault secret '${p.secret}' has no ${shown}`);
  return typeof at === "string" ? at : JSON.stringify(at);
}

/** `value` with every template value rendered (other values as they are); `onRendered` sees each text. */
export function renderTemplates<T>(value: T, lookup: TemplateLookup, onRendered?: (text: string) => void, depth = 0): T {
  if (depth > 64) return value;
  if (isTemplateValue(value)) {
    const text = renderTemplate(value, lookup);
    onRendered?.(text);
    return text as T;
  }
  if (Array.isArray(value)) return value.map((v) => renderTemplates(v, lookup, onRendered, depth + 1)) as T;
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderTemplates(v, lookup, onRendered, depth + 1)])) as T;
  return value;
}

/** Where a template failed to parse; the caller adds the file and line. */
export class TemplateSyntaxError extends Error {}

const ACTION = /\{\{(-?)\s*([\s\S]*?)\s*(-?)\}\}/g;

/**
 * Parses CTS's template forms in one string of a `terraform_provider` block: `{{ env "X" }}`
 * (resolved now with `env`, as CTS does at start), `{{ key "path" }}`, and
 * `{{ with secret "path" }} … {{ .Data.… }} … {{ end }}`; `{{-` / `-}}` trim spaces as in Go.
 * Anything else is refused. A string without templates comes back as it is.
 */
export function parseProviderTemplate(text: string, env: (name: string) => string): string | TemplateValue {
  if (!text.includes("{{")) return text;
  const parts: TemplatePart[] = [];
  let literal = "";
  let last = 0;
  let inSecret: string | undefined;
  const flush = () => {
    if (literal) parts.push(literal);
    literal = "";
  };
  ACTION.lastIndex = 0;
  for (let m = ACTION.exec(text); m; m = ACTION.exec(text)) {
    let before = text.slice(last, m.index);
    if (m[1]) before = before.replace(/\s+$/, "");
    literal += before;
    last = m.index + m[0].length;
    if (m[3]) {
      const rest = text.slice(last);
      last += rest.length - rest.replace(/^\s+/, "").length;
    }
    const body = m[2]!;
    let q: RegExpExecArray | null;
    if ((q = /^env\s+"([^"]*)"$/.exec(body))) literal += env(q[1]!);
    else if ((q = /^key\s+"([^"]+)"$/.exec(body))) {
      flush();
      parts.push({ consulKey: q[1]! });
    } else if ((q = /^with\s+secret\s+"([^"]+)"$/.exec(body))) {
      if (inSecret !== undefined) throw new TemplateSyntaxError(`'{{ ${body} }}' inside another {{ with secret }}: close the first with {{ end }}`);
      inSecret = q[1]!;
    } else if (body === "end") {
      if (inSecret === undefined) throw new TemplateSyntaxError("'{{ end }}' without a {{ with secret \"…\" }} before it");
      inSecret = undefined;
    } else if ((q = /^\.Data((?:\.[A-Za-z_][A-Za-z0-9_]*)+)$/.exec(body))) {
      if (inSecret === undefined) throw new TemplateSyntaxError(`'{{ ${body} }}' outside {{ with secret "…" }} … {{ end }}`);
      flush();
      parts.push({ secret: inSecret, field: q[1]!.slice(1).split(".") });
    } else
      throw new TemplateSyntaxError(
        `'{{ ${body} }}' is not a template cts supports. Use {{ env "NAME" }}, {{ key "consul/key" }} or {{ with secret "path" }}{{ .Data.data.field }}{{ end }} (.Data.field for KV v1)`,
      );
  }
  if (inSecret !== undefined) throw new TemplateSyntaxError(`{{ with secret "${inSecret}" }} has no {{ end }}`);
  literal += text.slice(last);
  flush();
  if (parts.every((p) => typeof p === "string")) return parts.join("");
  return { ctsTemplate: parts };
}

/** What a task's runs read through templates: its providers' settings and task_env, and its secrets. */
export function taskTemplateDependencies(task: { secrets?: unknown; providers?: unknown }): Map<string, TemplateDependency> {
  const out = templateDependencies(task.secrets);
  const providers = task.providers;
  if (Array.isArray(providers)) for (const p of providers) templateDependencies([p?.config, p?.taskEnv], out);
  return out;
}
