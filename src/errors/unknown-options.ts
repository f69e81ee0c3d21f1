import { readFileSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { CtsError } from "./cts-error.ts";
import { userFrames } from "./user-frames.ts";

// Configs and task files are loaded by tsx, which strips types without checking them: a misspelt
// option (`fitler` for `filter`) would be dropped silently, and a dropped filter selects more
// instances than the task meant to. Every option object is therefore checked at run time; this file
// turns the keys found unknown into the one error a user sees: which key, where in their code, and
// the key they probably meant.

/** An option key an object does not take. */
export interface UnknownOption {
  /** The keys leading to the object that holds it (`["guards"]`; `[]` for the options themselves). */
  path: readonly string[];
  /** The key as written. */
  key: string;
  /** The keys that object takes. */
  known: readonly string[];
}

/**
 * The known key a misspelt one most likely meant, or undefined when none is close: the same key up
 * to case, `_` and `-` (`passing_only` → `passingOnly`), else the nearest by edit distance
 * (a swap of two neighbours counts as one edit: `fitler` → `filter`) within 1 edit for keys of up
 * to 3 characters, 2 up to 7, 3 beyond.
 */
export function suggestKey(key: string, known: readonly string[]): string | undefined {
  const plain = (s: string) => s.toLowerCase().replace(/[_-]/g, "");
  const same = known.find((k) => plain(k) === plain(key) && plain(key) !== "");
  if (same !== undefined) return same;
  const a = key.toLowerCase();
  const limit = a.length <= 3 ? 1 : a.length <= 7 ? 2 : 3;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const k of known) {
    const d = editDistance(a, k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

/** Edit distance with insertions, deletions, substitutions and swaps of neighbours (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) rows.push([i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  return rows[a.length]![b.length]!;
}

/** Where the options were written: the user's call (a stack taken inside cts), or a file searched from its start. */
export type OptionSite = { stack: string } | { file: string };

/**
 * OPTION_UNKNOWN for the unknown keys of one option object: each line names the key with its path,
 * the file:line:column in the user's code (the key's own line when the file shows it below the
 * call, else the call), the key meant, and the keys the object takes. Undefined when none is unknown.
 */
export function unknownOptionsError(what: string, unknowns: readonly UnknownOption[], site: OptionSite, cwd = process.cwd()): CtsError | undefined {
  if (unknowns.length === 0) return undefined;
  const frames = "stack" in site ? userFrames(site.stack, cwd) : [];
  const call = frames[0] ? splitLocation(frames[0].location) : "file" in site ? { file: shown(site.file, cwd), line: 1, column: 1 } : undefined;
  const found = unknowns.map((u) => {
    const field = [...u.path, u.key].join(".");
    const suggestion = suggestKey(u.key, u.known);
    const key = call ? keyLocation(resolve(cwd, call.file), call.line, u.key) : undefined;
    const at = call ? `${call.file}:${key?.line ?? call.line}:${key?.column ?? call.column}` : undefined;
    const owner = u.path.length ? u.path.join(".") : what;
    const message =
      `${what}: '${field.slice(0, 80)}' is not an option${at ? ` (at ${at})` : ""}.` +
      `${suggestion !== undefined ? ` Did you mean '${[...u.path, suggestion].join(".")}'?` : ""}` +
      ` ${owner} takes ${u.known.length ? u.known.join(", ") : "no options"}.`;
    return { field, at, suggestion, message };
  });
  return new CtsError("OPTION_UNKNOWN", "usage", found.map((f) => f.message).join("\n"), {
    detail: {
      ...(found[0]?.at ? { at: found[0].at } : {}),
      ...(frames.length ? { userStack: frames.slice(0, 3).map((f) => (f.name ? `${f.name} (${f.location})` : f.location)) } : {}),
      options: found.map(({ field, at, suggestion }) => ({ field, ...(at ? { at } : {}), ...(suggestion !== undefined ? { suggestion } : {}) })),
    },
  });
}

/** A file as messages show it: relative to the working directory when inside it (as user frames are). */
function shown(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : file;
}

/** `file:line:column` → its parts (the file may itself hold colons). */
function splitLocation(location: string): { file: string; line: number; column: number } | undefined {
  const m = /^(.*):(\d+):(\d+)$/.exec(location);
  return m ? { file: m[1]!, line: Number(m[2]), column: Number(m[3]) } : undefined;
}

// How far below the call an option object's key is looked for (an object literal spread over lines).
const SEARCH_LINES = 200;

/**
 * The line and column of `key` written as an object key (`key:`, `"key":`) at or below `fromLine`
 * in a source file: the call's frame names the line where the call starts, the key may sit lines below.
 */
export function keyLocation(file: string, fromLine: number, key: string): { line: number; column: number } | undefined {
  if (!isAbsolute(file) || key === "") return undefined;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const re = new RegExp(`(^|[\\s{,(])(["'\`]?)${escaped}\\2\\s*:`);
  const lines = text.split("\n");
  for (let i = Math.max(0, fromLine - 1); i < Math.min(lines.length, fromLine - 1 + SEARCH_LINES); i++) {
    const m = re.exec(lines[i]!);
    if (m) return { line: i + 1, column: m.index + m[1]!.length + 1 };
  }
  return undefined;
}
