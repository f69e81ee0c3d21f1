import { attributesOf, parseHcl } from "../../config/hcl.ts";
import { MAX_DATA_DEPTH } from "../../values/data-depth.ts";
import { messageOf } from "../../errors/cts-error.ts";
import { knownSecrets } from "../../secrets/redactor.ts";
import { ApiError } from "../../api/http-error.ts";
import { isObject } from "../../values/is-object.ts";

/**
 * Task `variables` in both forms clients send. CTS's API types them as a map of strings, each an
 * HCL expression (its Go client writes them with cty's JSON encoder: `"\"/tmp/x.txt\""`, `"5"`,
 * `"[\"a\"]"`); our own clients send plain JSON values. The rule for a value, in order:
 *
 * 1. Not a string (number, bool, list, object): a plain JSON value, used as it is.
 * 2. A string starting with `"`, `[`, `{` or `<<`: CTS's encoding. It must be ONE literal HCL value
 *    (the repo's tree-sitter HCL parser decides); otherwise 400, never a guess.
 * 3. `true` / `false`: the boolean. `null`: refused (leave the variable out).
 * 4. An HCL number: the number, but only when it is written the way the number prints (`5`,
 *    `-2`, `1.5`); `0755`, `1.50`, `1e3` would silently become other text, so they are refused
 *    with both spellings to choose from.
 * 5. Anything else (`/tmp/x`, `us-east-1`, `hello world`): the plain string as sent. CTS would
 *    refuse these (they are not HCL values); nothing else could have been meant.
 *
 * The only plain strings read differently from their text are quoted or bracketed ones; a client
 * that means the literal text `"x"` sends `"\"\\\"x\\\"\""`, as a CTS client would.
 */
export async function decodeVariables(vars: unknown, at: string): Promise<unknown> {
  if (!isObject(vars)) return vars; // the schema reports the wrong type
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, value] of Object.entries(vars)) {
    try {
      out[name] = typeof value === "string" ? await decodeOne(value, `${at}.${name}`) : value;
    } catch (err) {
      problems.push(messageOf(err));
    }
  }
  if (problems.length) throw new ApiError(400, `invalid task: ${problems.join(" ")}`);
  return out;
}

const HCL_NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;
const ENCODED = /^\s*("|\[|\{|<<)/;

async function decodeOne(text: string, where: string): Promise<unknown> {
  if (ENCODED.test(text)) return parseLiteral(text, where);
  if (text === "true" || text === "false") return text === "true";
  if (text === "null") throw new Error(`${where} is null. Give a value or leave the variable out.`);
  if (HCL_NUMBER.test(text)) {
    const n = Number(text);
    if (String(n) === text) return n;
    throw new Error(
      `${where} '${text.slice(0, 40)}' is ambiguous: in CTS's encoding it is the number ${String(n)}, which would not keep the text as written. Send "\\"${text.slice(0, 40)}\\"" for the text, or the JSON number ${String(n)}.`,
    );
  }
  return text;
}

/** One literal HCL value (no references, functions or templates); nothing else may follow it. */
async function parseLiteral(text: string, where: string): Promise<unknown> {
  let value: unknown;
  try {
    const body = await parseHcl(`v = ${text}\n`, where, "TASK_FILE_INVALID", MAX_DATA_DEPTH);
    if (body.blocks.length || body.attributes.size !== 1) throw new Error("more than one value");
    value = attributesOf(body).v;
  } catch (err) {
    const why = messageOf(err).replace(/^[^:]*:\d+:\d+: /, "");
    throw new Error(
      `${where} looks HCL-encoded (CTS's form: it starts with ${JSON.stringify(text.trimStart().slice(0, 2))}) but is not one literal HCL value: ${why.replace(/task files/g, "variables")} Send a quoted HCL string like "\\"text\\"", or a plain JSON value.`,
    );
  }
  if (value === null) throw new Error(`${where} is null. Give a value or leave the variable out.`);
  return value;
}

/**
 * Variables in CTS's answer shape: each value as the HCL (JSON-syntax) text CTS's client reads back,
 * so a GET answer can be sent back unchanged. `${` and `%{` become `\u0024{` and `\u0025{`, which
 * every HCL reader takes literally (`$${` is ambiguous after another `$`).
 */
export function encodeVariables(vars: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  // Redacted before encoding: escaping (a quote, a backslash in a secret) would hide a known
  // secret from the redaction the API applies to whole answers.
  for (const [k, v] of Object.entries(knownSecrets.redactDeep(vars ?? {}))) out[k] = encodeValue(v);
  return out;
}

/** One value as HCL text (JSON syntax, with HCL's escapes only). */
export function encodeValue(v: unknown): string {
  return (JSON.stringify(v) ?? "null")
    .replace(/\\([\\bf])/g, (m, c: string) => (c === "\\" ? m : c === "b" ? "\\u0008" : "\\u000c"))
    .replace(/\$\{/g, "\\u0024{")
    .replace(/%\{/g, "\\u0025{");
}
