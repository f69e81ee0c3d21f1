import Handlebars from "handlebars";
import { readFileSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CtsError } from "../errors/cts-error.ts";

/** Shared templates shipped with cts (`templates/`). */
export const TEMPLATES_DIR = fileURLToPath(new URL("../../templates/", import.meta.url));

const hb = Handlebars.create();
hb.registerHelper("json", (v: unknown) => JSON.stringify(v));
hb.registerHelper("join", (list: unknown, sep: unknown) => (Array.isArray(list) ? list.join(typeof sep === "string" ? sep : ",") : ""));
hb.registerHelper("eq", (a: unknown, b: unknown) => a === b);

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
    fn = hb.compile(text, { noEscape: true, strict: false });
    compiled.set(key, fn);
  }
  return fn(data);
}
