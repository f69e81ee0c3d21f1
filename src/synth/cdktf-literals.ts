import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import type * as Cdktf from "cdktf";
import { LiteralTable } from "./literal-text.ts";

/**
 * Hooks into cdktf 0.21's token resolution (pinned exactly in package.json; a unit test guards
 * each hook) so that literal text is marked where cdktf writes it (see literal-text.ts):
 *
 * - every string cdktf resolves is split into literal text and tokens, and its literal text
 *   (including a `${` typed into it, which cdktf would pass through as live) becomes a placeholder;
 * - the string a cdktf expression (`TFExpression`: references, `Fn.*`, iterators, operators)
 *   renders is the only text resolved as trusted; its arguments are resolved as literal text;
 * - `escapeString` (how cdktf quotes a literal into an expression) and map keys inside expressions
 *   mark their text instead of pasting it;
 * - token keys carry a per-process nonce and an unknown key is literal text, so a catalog string
 *   shaped like `${TfToken[TOKEN.1]}` (or a list or map token) is never taken for a token;
 * - Fn arguments with a `"` are accepted (cdktf refuses them; the writer escapes them), and list
 *   arguments are not pre-quoted;
 * - cdktf's warning that prints a string with `${` in Fn arguments to the console is off (it
 *   would print catalog data).
 * Outside `withLiteralTable` cdktf behaves as shipped.
 */
let active: LiteralTable | undefined;
let trustDepth = 0;
let installed = false;

/** Marks literal text during `fn` (a synthesis) with a new table, which it returns with fn's result. */
export function withLiteralTable<R>(fn: (table: LiteralTable) => R): R {
  const previous = active;
  const savedDepth = trustDepth;
  active = new LiteralTable();
  trustDepth = 0;
  try {
    return fn(active);
  } finally {
    active = previous;
    trustDepth = savedDepth;
  }
}

const VERBATIM = Symbol.for("cdktf-sync.verbatim");

/** A value cdktf writes as it is, without resolving it (plain JSON that is already Terraform text). */
export function verbatim(cdktf: typeof Cdktf, value: unknown): unknown {
  const resolvable = { [VERBATIM]: true, creationStack: [] as string[], resolve: () => value, toString: () => "<verbatim>" };
  return typeof value === "string" ? cdktf.Token.asString(resolvable) : cdktf.Token.asAny(resolvable);
}

interface Fragment {
  type: "literal" | "token" | "escape" | "intrinsic";
  lit?: string;
  kind?: "open" | "close";
  token?: unknown;
  value?: unknown;
}

/** Installs the hooks into the cdktf copy `require` loads (once per thread). */
export function installLiteralHooks(req: NodeJS.Require): void {
  if (installed) return;
  installed = true;
  const lib = dirname(req.resolve("cdktf"));
  const load = (path: string) => req(join(lib, path));
  const encoding = load("tokens/private/encoding.js");
  const resolvable = load("tokens/resolvable.js");
  const fragmentsModule = load("tokens/string-fragments.js");
  const expressions = load("tfExpression.js");
  const tokenMapModule = load("tokens/private/token-map.js");
  const tokens = load("tokens/token.js");
  const helpers = load("functions/helpers.js");
  // TFExpression is not exported; every cdktf expression (rawString's RawString too) extends it.
  const TFExpression = Object.getPrototypeOf(Object.getPrototypeOf(expressions.rawString(""))).constructor;
  if (typeof TFExpression !== "function" || typeof TFExpression.prototype.escapeString !== "function")
    throw new Error("cdktf's TFExpression was not found: the literal-text hooks need cdktf 0.21");

  // Token keys: a nonce the catalog cannot guess; a key that is not ours is text, not a lookup.
  const map = tokenMapModule.TokenMap.instance();
  // Keys registered before the hooks (a config that made tokens while it loaded) stay valid.
  const earlier = new Set<string>(map.stringTokenMap.keys());
  const nonce = randomBytes(9).toString("base64url").replace(/[^A-Za-z0-9]/g, "x");
  const ownKey = (key: string) => key.includes(`.${nonce}.`) || earlier.has(key);
  /** Whether `s` holds a marker of one of our tokens (what cdktf's `test()` should have meant). */
  const hasOwnToken = (s: string, re: RegExp) => {
    const scan = new RegExp(re.source, "g");
    for (let m = scan.exec(s); m; m = scan.exec(s)) if (ownKey(m[1] ?? "")) return true;
    return false;
  };
  const registerStringKey = map.registerStringKey;
  map.registerStringKey = function (token: unknown, displayHint?: string) {
    return registerStringKey.call(this, token, `${displayHint || "TOKEN"}.${nonce}`);
  };
  const lookupToken = map.lookupToken;
  map.lookupToken = function (key: string) {
    if (!ownKey(key)) return undefined;
    return lookupToken.call(this, key);
  };

  // Every string resolve() meets is split (resolve.js is the only caller passing the escape flags);
  // elsewhere a string "is a token" only when it holds one of ours, not text shaped like one.
  const TokenString = encoding.TokenString;
  const forString = TokenString.forString;
  TokenString.forString = function (s: string, ...flags: boolean[]) {
    if (!active) return forString.call(this, s, ...flags);
    if (flags.length === 0) return ownTokensOnly(forString.call(this, s), s);
    const ts = forString.call(this, s, flags[0], false);
    if (s.length > 0) ts.test = () => true;
    return ts;
  };
  const forListToken = TokenString.forListToken;
  TokenString.forListToken = function (s: string) {
    const ts = forListToken.call(this, s);
    return active ? ownTokensOnly(ts, s) : ts;
  };
  const forMapToken = TokenString.forMapToken;
  TokenString.forMapToken = function (s: string) {
    const ts = forMapToken.call(this, s);
    return active ? ownTokensOnly(ts, s) : ts;
  };
  function ownTokensOnly(ts: { re: RegExp; test(): boolean }, s: string) {
    if (typeof s === "string") ts.test = () => hasOwnToken(s, ts.re);
    return ts;
  }

  const resolver = resolvable.DefaultTokenResolver.prototype;
  const resolveString = resolver.resolveString;
  resolver.resolveString = function (fragments: { fragments: Fragment[] }, context: unknown) {
    if (!active || trustDepth > 0) return resolveString.call(this, fragments, context);
    const marked = new fragmentsModule.TokenizedStringFragments();
    for (const f of fragments.fragments) {
      if (f.type === "literal") marked.fragments.push({ type: "literal", lit: active.mark(f.lit ?? "") });
      else if (f.type === "escape") marked.fragments.push({ type: "literal", lit: active.mark(f.kind === "open" ? "${" : "}") });
      else marked.fragments.push(f);
    }
    return resolveString.call(this, marked, context);
  };

  const resolveToken = resolver.resolveToken;
  resolver.resolveToken = function (t: any, context: any, postProcessor: any) {
    if (t?.[VERBATIM]) return t.resolve();
    if (!active) return resolveToken.call(this, t, context, postProcessor);
    const saved = trustDepth;
    trustDepth = 0;
    try {
      if (!(t instanceof TFExpression)) return resolveToken.call(this, t, context, postProcessor);
      const table = active;
      let resolved = t.resolve(context);
      if (typeof resolved !== "string") return postProcessor.postProcess(context.resolve(resolved), context);
      trustDepth = 1;
      resolved = context.resolve(resolved);
      trustDepth = 0;
      resolved = postProcessor.postProcess(resolved, context);
      // cdktf resolves strings again later: behind a placeholder, this text stays cdktf's.
      return typeof resolved === "string" ? table.trusted(resolved) : resolved;
    } finally {
      trustDepth = saved;
    }
  };

  const escapeString = TFExpression.prototype.escapeString;
  TFExpression.prototype.escapeString = function (str: string) {
    return active ? active.mark(str) : escapeString.call(this, str);
  };

  const resolveExpressionPart = TFExpression.prototype.resolveExpressionPart;
  TFExpression.prototype.resolveExpressionPart = function (context: any, arg: any) {
    if (!active || arg === null || typeof arg !== "object" || Array.isArray(arg) || tokens.Tokenization.isResolvable(arg))
      return resolveExpressionPart.call(this, context, arg);
    const resolvedArg = context.resolve(arg);
    if (resolvedArg === null || typeof resolvedArg !== "object" || Array.isArray(resolvedArg)) return resolveExpressionPart.call(this, context, arg);
    const table = active;
    const entries = Object.keys(arg)
      .filter((key) => arg[key] !== undefined)
      .map((key) => `"${table.mark(key)}" = ${this.resolveArg(context, arg[key])}`);
    return `{${entries.join(", ")}}`;
  };

  // cdktf refuses a `"` in an Fn string argument (it would paste it into the expression); the
  // writer escapes it, so a catalog value with a quote is a value, not a failed task.
  const stringValue = helpers.stringValue;
  helpers.stringValue = function (value: unknown) {
    return active && typeof value === "string" ? { value } : stringValue(value);
  };

  // cdktf puts quotes around each string of a list argument when Fn is called, so `"` in it ended
  // the literal. Strings stay unquoted here; resolveArg quotes and the writer escapes them.
  const listOf = helpers.listOf;
  helpers.listOf = function (type: unknown) {
    const validate = listOf(type);
    return (value: unknown) => {
      const checked = validate(value);
      if (!active || !Array.isArray(value) || !Array.isArray(checked.value)) return checked;
      const items = value.filter((item) => item !== undefined && item !== null);
      return { value: checked.value.map((v: unknown, i: number) => (typeof items[i] === "string" && v === `"${items[i]}"` ? items[i] : v)) };
    };
  };
  // variadic() calls listOf through its own module binding, not the export.
  helpers.variadic = function (type: unknown) {
    return (value: unknown) => ({ value: helpers.listOf(type)(value).value, variadic: true });
  };

}
