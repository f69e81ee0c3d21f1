import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** One `output` block a module declares: its name and whether it is `sensitive = true`. */
export interface ModuleOutput {
  name: string;
  sensitive: boolean;
}

/** Terraform's rule for an output's name (and so what may follow `module.<task>.`). */
const OUTPUT_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Whether `name` can be an output's name (and written into `module.<task>.<name>`). */
export function isOutputName(name: unknown): name is string {
  return typeof name === "string" && OUTPUT_NAME.test(name) && name.length <= 128;
}

/**
 * The `output` blocks of the local module in `dir` (its `.tf` and `.tf.json` files, as Terraform
 * reads them), sorted by name. Read synchronously when the root module is built: the files are few
 * and small, and a change to the module shows in the next run. A folder that cannot be read, or a
 * file that does not parse, gives what could be read: Terraform's `init` and `plan` report the
 * module's problems with their place, better than a guess here would. An `ephemeral = true` output
 * is left out: Terraform refuses it in a root output, and it is never kept in the state anyway.
 */
export function localModuleOutputs(dir: string): ModuleOutput[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => (f.endsWith(".tf") || f.endsWith(".tf.json")) && !f.startsWith("."));
  } catch {
    return [];
  }
  // Override files (`*_override.tf`) are read last, as Terraform merges them over the others.
  const isOverride = (f: string) => /(^|_)override\.tf(\.json)?$/.test(f);
  files.sort((a, b) => Number(isOverride(a)) - Number(isOverride(b)) || a.localeCompare(b));
  const found = new Map<string, { sensitive: boolean; ephemeral: boolean }>();
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(join(dir, f), "utf8");
    } catch {
      continue;
    }
    const blocks = f.endsWith(".json") ? jsonOutputs(text) : hclOutputs(text);
    for (const b of blocks) {
      if (!isOutputName(b.name)) continue;
      // An override block changes only what it states.
      const before = found.get(b.name);
      found.set(b.name, { sensitive: b.sensitive ?? before?.sensitive ?? false, ephemeral: b.ephemeral ?? before?.ephemeral ?? false });
    }
  }
  return [...found]
    .filter(([, o]) => !o.ephemeral)
    .map(([name, o]) => ({ name, sensitive: o.sensitive }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

type Declared = { name: string; sensitive?: boolean; ephemeral?: boolean };

/** `output` of a `.tf.json` file: `{ "output": { "<name>": { … } } }`, or a list of such objects. */
function jsonOutputs(text: string): Declared[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return [];
  }
  const output = (doc as { output?: unknown } | null)?.output;
  const groups = Array.isArray(output) ? output : [output];
  const found: Declared[] = [];
  for (const g of groups) {
    if (!g || typeof g !== "object") continue;
    for (const [name, body] of Object.entries(g as Record<string, unknown>)) {
      const b = (Array.isArray(body) ? body[0] : body) as { sensitive?: unknown; ephemeral?: unknown } | null;
      found.push({ name, ...(typeof b?.sensitive === "boolean" ? { sensitive: b.sensitive } : {}), ...(typeof b?.ephemeral === "boolean" ? { ephemeral: b.ephemeral } : {}) });
    }
  }
  return found;
}

/**
 * `output "<name>" { … sensitive = true … }` blocks of a native-syntax `.tf` file. Only the top
 * level and the top level of each output block are read; everything else (expressions, strings with
 * `${…}` templates, heredocs, comments, nested blocks) is skipped whole, so a brace or the word
 * `output` inside them is never taken for a block.
 */
export function hclOutputs(text: string): Declared[] {
  const s = new Scanner(text);
  const found: Declared[] = [];
  while (!s.done()) {
    const word = s.word();
    if (word === undefined) {
      s.skipItem();
      continue;
    }
    // `type label… {`: the labels are quoted strings or bare words.
    const labels: string[] = [];
    for (;;) {
      s.space(true);
      const label = s.peek() === '"' ? s.simpleString() : s.word();
      if (label === undefined) break;
      labels.push(label);
    }
    s.space(true);
    if (s.peek() !== "{") {
      s.skipLine(); // an attribute (`name = value`) at the top level
      continue;
    }
    if (word !== "output" || labels.length !== 1) {
      s.skipItem();
      continue;
    }
    s.pos++;
    found.push({ name: labels[0]!, ...s.outputBody() });
  }
  return found;
}

/** A cursor over HCL native syntax that knows what to skip. */
class Scanner {
  pos = 0;
  constructor(private readonly t: string) {}

  done(): boolean {
    this.space(false);
    return this.pos >= this.t.length;
  }
  peek(): string | undefined {
    return this.t[this.pos];
  }
  /** Skips blanks and comments; newlines too unless `inLine`. */
  space(inLine: boolean): void {
    const t = this.t;
    while (this.pos < t.length) {
      const c = t[this.pos]!;
      if (c === " " || c === "\t" || c === "\r" || (!inLine && c === "\n")) this.pos++;
      else if (c === "#" || (c === "/" && t[this.pos + 1] === "/")) this.toEol();
      else if (c === "/" && t[this.pos + 1] === "*") {
        const end = t.indexOf("*/", this.pos + 2);
        this.pos = end < 0 ? t.length : end + 2;
      } else break;
    }
  }
  /** A bare word (identifier), or undefined with the cursor unmoved. */
  word(): string | undefined {
    const m = /[A-Za-z_][A-Za-z0-9_-]*/y;
    m.lastIndex = this.pos;
    const hit = m.exec(this.t);
    if (!hit) return undefined;
    this.pos = m.lastIndex;
    return hit[0];
  }
  /** A quoted label without templates: its text (undefined when it holds `${`). */
  simpleString(): string | undefined {
    const start = this.pos;
    this.skipString();
    const raw = this.t.slice(start, this.pos);
    if (raw.includes("${") || raw.includes("%{")) return undefined;
    try {
      return JSON.parse(raw) as string;
    } catch {
      return undefined;
    }
  }
  toEol(): void {
    const end = this.t.indexOf("\n", this.pos);
    this.pos = end < 0 ? this.t.length : end;
  }
  /** Skips the rest of an attribute: up to the newline that ends it (outside brackets). */
  skipLine(): void {
    for (;;) {
      this.space(true);
      const c = this.peek();
      if (c === undefined || c === "\n" || c === "}") return;
      this.skipItem();
    }
  }
  /** Skips one thing: a bracketed group, a string, a heredoc or one character. */
  skipItem(): void {
    const t = this.t;
    const c = t[this.pos];
    if (c === '"') return this.skipString();
    if (c === "<" && t[this.pos + 1] === "<" && this.skipHeredoc()) return;
    if (c === "{" || c === "[" || c === "(") return this.skipGroup();
    this.pos++;
  }
  /** Skips `{…}`, `[…]` or `(…)` with what they hold. */
  skipGroup(): void {
    const close = { "{": "}", "[": "]", "(": ")" }[this.t[this.pos] as "{"];
    this.pos++;
    for (;;) {
      this.space(false);
      const c = this.peek();
      if (c === undefined) return;
      if (c === close) {
        this.pos++;
        return;
      }
      this.skipItem();
    }
  }
  /** Skips a quoted string, its `${…}` and `%{…}` templates included (they may hold strings). */
  skipString(): void {
    const t = this.t;
    this.pos++;
    while (this.pos < t.length) {
      const c = t[this.pos]!;
      if (c === "\\") this.pos += 2;
      else if (c === '"') {
        this.pos++;
        return;
      } else if ((c === "$" || c === "%") && t[this.pos + 1] === c && t[this.pos + 2] === "{") this.pos += 3; // `$${` is literal
      else if ((c === "$" || c === "%") && t[this.pos + 1] === "{") {
        this.pos++;
        this.skipGroup();
      } else if (c === "\n") return; // an unterminated string ends at its line
      else this.pos++;
    }
  }
  /** Skips `<<EOT` / `<<-EOT` … `EOT`; false (cursor unmoved) when `<<` starts no heredoc. */
  skipHeredoc(): boolean {
    const m = /<<-?([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\r?\n/y;
    m.lastIndex = this.pos;
    const hit = m.exec(this.t);
    if (!hit) return false;
    const end = new RegExp(`^[ \\t]*${hit[1]}[ \\t]*\\r?$`, "m");
    const rest = this.t.slice(m.lastIndex);
    const close = end.exec(rest);
    this.pos = close ? m.lastIndex + close.index + close[0].length : this.t.length;
    return true;
  }
  /** The body of an output block (after its `{`), up to its `}`: what it says of `sensitive` and `ephemeral`. */
  outputBody(): { sensitive?: boolean; ephemeral?: boolean } {
    const flags: { sensitive?: boolean; ephemeral?: boolean } = {};
    for (;;) {
      this.space(false);
      const c = this.peek();
      if (c === undefined) return flags;
      if (c === "}") {
        this.pos++;
        return flags;
      }
      const word = this.word();
      if (word === undefined) {
        this.skipItem();
        continue;
      }
      this.space(true);
      if (this.peek() === "=" && this.t[this.pos + 1] !== "=") {
        this.pos++;
        this.space(true);
        const value = this.word();
        if ((word === "sensitive" || word === "ephemeral") && (value === "true" || value === "false")) flags[word] = value === "true";
        this.skipLine();
      } else this.skipLine(); // a nested block (`precondition { … }`) or something unexpected
    }
  }
}

/** Problems with a module task's `outputs` and `sensitiveOutputs` (lists of output names). */
export function moduleOutputProblems(task: object): Array<{ field: string; message: string }> {
  const { module, outputs, sensitiveOutputs } = task as { module?: unknown; outputs?: unknown; sensitiveOutputs?: unknown };
  if (typeof module !== "string") return [];
  const problems: Array<{ field: string; message: string }> = [];
  for (const [field, list] of [["outputs", outputs], ["sensitiveOutputs", sensitiveOutputs]] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      problems.push({ field, message: `must be a list of the module's output names (got ${JSON.stringify(list)?.slice(0, 60)}).` });
      continue;
    }
    list.forEach((name, i) => {
      if (!isOutputName(name))
        problems.push({ field: `${field}[${i}]`, message: `${JSON.stringify(name)?.slice(0, 60)} is not an output name. Use the name of an \`output\` block of the module (letters, digits, '_' and '-').` });
    });
  }
  return problems;
}
