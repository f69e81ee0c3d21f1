import { readFile, readdir, stat } from "node:fs/promises";
import { extname, join, resolve } from "node:path";
import { CtsError, messageOf } from "../../errors/cts-error.ts";
import { MAX_WALK_DEPTH, tooDeepAt } from "../../values/data-depth.ts";
import { parseHcl, type HclBody, type HclValue } from "../../config/hcl.ts";
import { hcl1Strings } from "../../config/hcl1-strings.ts";
import { CTS_SCHEMA, configError, readBlock, type BlockSchema, type ReadBlock } from "../../config/hcl-schema.ts";


/**
 * The files of `-config-file` and `-config-dir` flags, in CTS's order: each flag in the order given,
 * a directory's `.hcl` and `.json` files sorted by name, without recursing.
 */
export async function ctsConfigFiles(paths: string[], cwd = process.cwd()): Promise<string[]> {
  const files: string[] = [];
  for (const p of paths) {
    const abs = resolve(cwd, p);
    let s;
    try {
      s = await stat(abs);
    } catch {
      throw new CtsError("CONFIG_NOT_FOUND", "usage", `Config path '${p}' does not exist. Pass -config-file <file.hcl> or -config-dir <dir>.`);
    }
    if (s.isDirectory()) {
      const names = (await readdir(abs)).filter((n) => [".hcl", ".json"].includes(extname(n).toLowerCase())).sort();
      for (const n of names) if ((await stat(join(abs, n))).isFile()) files.push(join(abs, n));
    } else files.push(abs);
  }
  return files;
}

/** Reads and checks every file, skipping empty ones; throws when none has content (as CTS). */
export async function readCtsFiles(files: string[]): Promise<ReadBlock[]> {
  const roots: ReadBlock[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      throw new CtsError("CONFIG_NOT_FOUND", "usage", `Cannot read config file '${file}': ${messageOf(err)}.`);
    }
    if (text.trim() === "") continue;
    const body = extname(file).toLowerCase() === ".json" ? jsonBody(text, file) : await parseHcl(unquoteHcl1Names(hcl1Strings(text, file)), file, "CONFIG_INVALID");
    roots.push(readBlock(body, CTS_SCHEMA, file, 1, [], ""));
  }
  if (roots.length === 0) throw new CtsError("CONFIG_NOT_FOUND", "usage", `No configuration: ${files.length ? `${files.join(", ")} ${files.length > 1 ? "are" : "is"} empty` : "no .hcl or .json file found"}. Pass -config-file <file.hcl>.`);
  return roots;
}

/**
 * CTS reads HCL 1, which allows quoted attribute names in blocks (CTS's own docs write
 * `task_env { "AWS_ACCESS_KEY_ID" = "…" }`); HCL 2 does not. A quoted name that is an identifier,
 * followed by `=`, at the start of a line or right after a `{`, gets the quotes removed (line
 * numbers stay; heredoc bodies are left alone). In an object literal the unquoted key means the same.
 */
export function unquoteHcl1Names(text: string): string {
  let heredocEnd: string | undefined;
  return text
    .split("\n")
    .map((line) => {
      if (heredocEnd !== undefined) {
        if (line.trim() === heredocEnd) heredocEnd = undefined;
        return line;
      }
      const h = /<<-?([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(line);
      if (h) heredocEnd = h[1];
      // At the start of a line, or first in a one-line block (`task_env { "X" = "y" }`): a quote
      // inside a string is escaped (\"), so a `{ "` here is never inside one.
      return oneLineBlock(line.replace(/^(\s*)"([A-Za-z_][A-Za-z0-9_-]*)"(\s*=)/, "$1$2$3").replace(/(\{\s*)"([A-Za-z_][A-Za-z0-9_-]*)"(\s*=)/g, "$1$2$3"));
    })
    .join("\n");
}

/**
 * HCL 1 takes several items on one line, comma-separated, in a block (`task_env { A = "1", B = "2" }`);
 * an HCL 2 one-line block takes one. Such a line (a block without labels) is read in the attribute
 * form CTS also accepts, `task_env = { A = "1", B = "2" }`, which means the same.
 */
function oneLineBlock(line: string): string {
  const m = /^(\s*)([A-Za-z_][A-Za-z0-9_-]*)(\s*)\{(.*)\}(\s*)$/.exec(line);
  if (!m || !m[4]!.includes("=") || !hasTopLevelComma(m[4]!)) return line;
  return `${m[1]}${m[2]}${m[3]}= {${m[4]}}${m[5]}`;
}

/** Whether `text` holds a comma outside strings, brackets and braces. */
function hasTopLevelComma(text: string): boolean {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === "[" || c === "{" || c === "(") depth++;
    else if (c === "]" || c === "}" || c === ")") depth--;
    else if (c === "," && depth === 0) return true;
  }
  return false;
}

/** A JSON config as an HCL body of attributes (blocks are read from their attribute form), each with its key's line. */
function jsonBody(text: string, file: string): HclBody {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CtsError("CONFIG_INVALID", "usage", `${file}: not valid JSON: ${messageOf(err)}.`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw configError(file, 1, "a JSON config must be an object.");
  // The config readers recurse over values, as they do over HCL (whose reader has the same bound).
  const deep = tooDeepAt(doc, MAX_WALK_DEPTH);
  if (deep !== undefined) throw configError(file, 1, `'${deep}' nests deeper than ${MAX_WALK_DEPTH} levels of objects and lists. Flatten it.`);
  const lines = text.split("\n");
  const lineOf = (key: string) => Math.max(1, lines.findIndex((l) => l.includes(JSON.stringify(key))) + 1);
  return { attributes: new Map(Object.entries(doc as Record<string, HclValue>).map(([k, v]) => [k, { value: v, line: lineOf(k) }])), blocks: [] };
}

/**
 * CTS's merge of several files: later values win, single blocks merge key by key, and repeatable
 * blocks (tasks, providers) are appended. Labelled single blocks (`driver "terraform"`) merge by label.
 */
export function mergeCtsFiles(roots: ReadBlock[]): ReadBlock {
  return roots.slice(1).reduce((a, b) => merge(a, b, CTS_SCHEMA), roots[0]!);
}

function merge(a: ReadBlock, b: ReadBlock, schema: BlockSchema): ReadBlock {
  const out: ReadBlock = { ...a, attrs: { ...a.attrs, ...b.attrs }, lines: { ...a.lines, ...b.lines }, blocks: { ...a.blocks } };
  for (const [name, list] of Object.entries(b.blocks)) {
    const sub = schema.blocks?.[name] ?? {};
    const prev = out.blocks[name] ?? [];
    if (name === "task" || name === "terraform_provider" || name === "service") out.blocks[name] = [...prev, ...list];
    else if (sub.labels) {
      const merged = [...prev];
      for (const blk of list) {
        const i = merged.findIndex((p) => p.labels.join(".") === blk.labels.join("."));
        if (i >= 0) merged[i] = merge(merged[i]!, blk, sub);
        else merged.push(blk);
      }
      out.blocks[name] = merged;
    } else out.blocks[name] = prev.length ? [merge(prev[0]!, list[0]!, sub)] : list;
  }
  return out;
}
