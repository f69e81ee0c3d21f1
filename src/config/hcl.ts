import { createRequire } from "node:module";
import { Language, Parser, type Node } from "web-tree-sitter";
import { MAX_WALK_DEPTH } from "../values/data-depth.ts";
import { CtsError, type ErrorCode } from "../errors/cts-error.ts";

/** A literal HCL value (no expressions: task files hold data, not code). */
export type HclValue = string | number | boolean | null | HclValue[] | { [key: string]: HclValue };

/** A block: `type "label" … { body }`. */
export interface HclBlock {
  type: string;
  labels: string[];
  body: HclBody;
  line: number;
}

/** Attributes (in order) and blocks of one body. */
export interface HclBody {
  attributes: Map<string, { value: HclValue; line: number }>;
  blocks: HclBlock[];
}

// The grammar (tree-sitter-hcl, the one editors and GitHub use) is loaded once, on first use.
let parser: Promise<Parser> | undefined;
function hclParser(): Promise<Parser> {
  parser ??= (async () => {
    await Parser.init();
    const wasm = createRequire(import.meta.url).resolve("@tree-sitter-grammars/tree-sitter-hcl/tree-sitter-hcl.wasm");
    const p = new Parser();
    p.setLanguage(await Language.load(wasm));
    return p;
  })();
  return parser;
}

/**
 * Parses HCL (a CTS task file, a CTS config file, a .tfvars file) into attributes and labelled blocks with
 * their line numbers. Values must be literals (strings, numbers, booleans, null, lists, objects,
 * heredocs): references, functions, operators and `${…}` templates are refused with their place, and
 * so are values and blocks nested deeper than `maxDepth` levels (the readers below recurse).
 */
export async function parseHcl(text: string, file = "task file", code: ErrorCode = "TASK_FILE_INVALID", maxDepth = MAX_WALK_DEPTH): Promise<HclBody> {
  const tree = (await hclParser()).parse(text);
  if (!tree) throw new CtsError(code, "usage", `${file}: could not be parsed as HCL.`);
  try {
    const fail = (n: Node, msg: string): never => {
      // The messages speak of task files; the same rules hold for CTS config and .tfvars files.
      const text = code === "TASK_FILE_INVALID" ? msg : msg.replace("task files", "CTS config and .tfvars files");
      throw new CtsError(code, "usage", `${file}:${n.startPosition.row + 1}:${n.startPosition.column + 1}: ${text}`);
    };
    if (tree.rootNode.hasError) syntaxError(tree.rootNode, fail);
    const body = named(tree.rootNode).find((n) => n.type === "body");
    return body ? readBody(body, { fail, maxDepth }, 0) : { attributes: new Map(), blocks: [] };
  } finally {
    tree.delete();
  }
}

type Fail = (n: Node, msg: string) => never;
/** How a reader reports a problem, and how deep it may go. */
interface Reading {
  fail: Fail;
  maxDepth: number;
}

function checkDepth(n: Node, depth: number, r: Reading): void {
  if (depth > r.maxDepth) r.fail(n, `this nests deeper than ${r.maxDepth} levels of blocks, lists and objects. Flatten it.`);
}

const named = (n: Node): Node[] => n.namedChildren.filter((c): c is Node => c !== null && c.type !== "comment");

/** Reports the first ERROR or MISSING node, in document order (a loop: broken input may nest deep). */
function syntaxError(root: Node, fail: Fail): never {
  let bad = root;
  for (let n: Node | undefined = root; n && !n.isMissing && !n.isError; ) {
    // The first child on an erroneous path; a node with an error below it always has one.
    n = n.children.find((c): c is Node => c !== null && (c.hasError || c.isMissing || c.isError));
    if (n) bad = n;
  }
  if (bad.isMissing) {
    const what = bad.type;
    return fail(bad, what === "}" || what === "block_end" ? "a block is not closed: a '}' is missing." : `'${what}' is missing here.`);
  }
  const shown = bad.text.trim().split("\n")[0]!.slice(0, 30);
  if (shown.startsWith("<<")) return fail(bad, "this heredoc is not closed: its end marker must stand alone on a line.");
  return fail(bad, shown ? `unexpected '${shown}': this is not valid HCL here.` : "this is not valid HCL here.");
}

function readBody(body: Node, r: Reading, depth: number): HclBody {
  checkDepth(body, depth, r);
  const { fail } = r;
  const out: HclBody = { attributes: new Map(), blocks: [] };
  for (const n of named(body)) {
    const line = n.startPosition.row + 1;
    if (n.type === "attribute") {
      const [name, expr] = named(n);
      const key = name!.text;
      if (out.attributes.has(key)) fail(name!, `'${key}' is set twice.`);
      out.attributes.set(key, { value: readValue(expr!, r, depth), line });
    } else if (n.type === "block") {
      const parts = named(n);
      const labels = parts.slice(1).filter((p) => p.type === "string_lit" || p.type === "identifier").map((p) => (p.type === "identifier" ? p.text : readString(p, fail)));
      const inner = parts.find((p) => p.type === "body");
      out.blocks.push({ type: parts[0]!.text, labels, body: inner ? readBody(inner, r, depth + 1) : { attributes: new Map(), blocks: [] }, line });
    }
  }
  return out;
}

/** An attribute's value; `depth` counts the blocks, lists and objects around it. */
function readValue(expr: Node, r: Reading, depth: number): HclValue {
  const { fail } = r;
  const n = expr.type === "expression" ? named(expr)[0]! : expr;
  switch (n.type) {
    case "literal_value":
      return readLiteral(named(n)[0]!, fail);
    case "collection_value": {
      checkDepth(n, depth + 1, r);
      const c = named(n)[0]!;
      if (c.type === "tuple") return named(c).filter((e) => e.type === "expression").map((e) => readValue(e, r, depth + 1));
      const obj: { [key: string]: HclValue } = {};
      for (const elem of named(c).filter((e) => e.type === "object_elem")) {
        const key = objectKey(elem.childForFieldName("key")!, fail);
        obj[key] = readValue(elem.childForFieldName("val")!, r, depth + 1);
      }
      return obj;
    }
    case "operation": {
      // A negative number is a unary minus on a literal; every other operation is code.
      const u = named(n)[0]!;
      const operand = u.type === "unary_operation" && u.text.startsWith("-") ? named(u)[0] : undefined;
      const lit = operand?.type === "literal_value" ? named(operand)[0] : undefined;
      if (lit?.type === "numeric_lit") return -Number(lit.text);
      return fail(n, `'${n.text.slice(0, 40)}' is an expression; task files take literal values only.`);
    }
    case "template_expr":
      return readTemplate(named(n)[0]!, fail);
    case "variable_expr":
      return fail(n, `'${n.text}' is an expression; task files take literal values only (quote strings: "${n.text}").`);
    default:
      return fail(n, `'${n.text.slice(0, 40)}' is an expression; task files take literal values only.`);
  }
}

function readLiteral(n: Node, fail: Fail): HclValue {
  switch (n.type) {
    case "numeric_lit":
      return Number(n.text);
    case "bool_lit":
      return n.text === "true";
    case "null_lit":
      return null;
    case "string_lit":
      return readString(n, fail);
    default:
      return fail(n, `'${n.text.slice(0, 40)}' is not a literal value.`);
  }
}

/** An object key: a bare name or a quoted string. */
function objectKey(key: Node, fail: Fail): string {
  const n = key.type === "expression" ? named(key)[0]! : key;
  if (n.type === "variable_expr" && named(n).length === 1) return n.text;
  if (n.type === "literal_value" && named(n)[0]?.type === "string_lit") return readString(named(n)[0]!, fail);
  return fail(n, `'${n.text.slice(0, 40)}' cannot be an object key here; use a name or a quoted string.`);
}

/**
 * A quoted string without interpolation, its escapes decoded. Read from the text between the
 * quotes, not from the grammar's template_literal node: that node leaves out leading and trailing
 * spaces (`" x "` would silently become `x`).
 */
function readString(n: Node, fail: Fail): string {
  const text = n.text;
  return text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? unescape(text.slice(1, -1), n, fail) : "";
}

function readTemplate(t: Node, fail: Fail): string {
  const interp = named(t).find((c) => c.type === "template_interpolation" || c.type === "template_directive");
  if (interp) {
    const d = interp.text.startsWith("%") ? "%" : "$";
    return fail(interp, `'${d}{' starts a template, which task files do not support. Write '${d}${d}{' for a literal '${d}{'.`);
  }
  if (t.type === "quoted_template") return readString(t, fail);
  // A heredoc holds the lines between its markers, the last newline included; `<<-` strips the
  // indentation common to them, as HCL does.
  const text = t.text;
  const raw = text.slice(text.indexOf("\n") + 1, text.lastIndexOf("\n") + 1).replace(/\$\$\{/g, "${").replace(/%%\{/g, "%{");
  if (!text.startsWith("<<-")) return raw;
  const lines = raw.split("\n");
  const indents = lines.filter((l) => l.trim() !== "").map((l) => /^[ \t]*/.exec(l)![0].length);
  const cut = indents.length ? Math.min(...indents) : 0;
  return lines.map((l) => l.slice(cut)).join("\n");
}

const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", '"': '"', "\\": "\\" };

/** Decodes HCL's string escapes and the `$${` / `%%{` literal markers. */
function unescape(text: string, lit: Node, fail: Fail): string {
  return text.replace(/\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)|\$\$\{|%%\{/g, (m, e: string | undefined) => {
    if (m === "$${") return "${";
    if (m === "%%{") return "%{";
    if (e!.length > 1) return String.fromCodePoint(parseInt(e!.slice(1), 16));
    return ESCAPES[e!] ?? fail(lit, `unknown escape '\\${e}' in a string.`);
  });
}

/** A body as plain JSON: attributes as they are, blocks as `{type: {label: {...}}}` objects (for errors and tests). */
export function attributesOf(body: HclBody): Record<string, HclValue> {
  const out: Record<string, HclValue> = {};
  for (const [k, v] of body.attributes) out[k] = v.value;
  return out;
}
