import type HandlebarsNamespace from "handlebars";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CtsError } from "../errors/cts-error.ts";

/** Shared templates shipped with cts (`templates/`). */
export const TEMPLATES_DIR = fileURLToPath(new URL("../../templates/", import.meta.url));

let hb: typeof HandlebarsNamespace | undefined;

/**
 * Handlebars with cts's helpers, loaded on the first render: every config imports this module
 * (through `cdktf-sync`), and loading handlebars took about 40 ms of a daemon's first sync that
 * most configs never render anything with.
 */
function handlebars(): typeof HandlebarsNamespace {
  if (hb) return hb;
  const created = (createRequire(import.meta.url)("handlebars") as typeof HandlebarsNamespace).create();
  created.registerHelper("json", (v: unknown) => JSON.stringify(v));
  created.registerHelper("join", (list: unknown, sep: unknown) => (Array.isArray(list) ? list.join(typeof sep === "string" ? sep : ",") : ""));
  created.registerHelper("eq", (a: unknown, b: unknown) => a === b);
  return (hb = created);
}

const compiled = new Map<string, HandlebarsTemplateDelegate>();

/**
 * Renders a handlebars template for file contents (no HTML escaping: the output is config text).
 * `template` is the template text, or `{ file }` naming a template in `templates/` or an absolute path.
 */
export function render(template: string | { file: string }, data: unknown): string {
  const key = typeof template === "string" ? `text:${template}` : `file:${template.file}`;
  let fn = compiled.get(key);
  if (!fn) {
    let text: string;
    if (typeof template === "string") text = template;
    else {
      const path = isAbsolute(template.file) ? template.file : resolve(TEMPLATES_DIR, template.file);
      try {
        text = readFileSync(path, "utf8");
      } catch (cause) {
        throw new CtsError("TEMPLATE_NOT_FOUND", "usage", `Template '${template.file}' not found at ${path}. Put it in templates/ or pass an absolute path.`, { cause });
      }
    }
    fn = handlebars().compile(text, { noEscape: true, strict: false });
    compiled.set(key, fn);
  }
  return fn(data);
}
