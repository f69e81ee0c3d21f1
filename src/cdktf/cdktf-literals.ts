import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import type * as Cdktf from "cdktf";
import { CtsError } from "../errors/cts-error.ts";
import { CDK_PACKAGES, type CdkName } from "./cdk-library.ts";
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
 * - Fn arguments with a `"` are accepted (cdktf refuses them; the writer escapes them), and list
 *   arguments are not pre-quoted;
 * - token keys carry a per-process nonce and an unknown key is literal text, so a catalog string
 *   shaped like `${TfToken[TOKEN.1]}` (or a list or map token) is never taken for a token;
 * - cdktf's warning that prints a string with `${` in Fn arguments to the console is off (it
 *   would print catalog data).
 * Outside `withLiteralTable` cdktf behaves as shipped.
 *
 * cdktn (CDK Terrain, cdktf's maintained fork) ships the same five files with the same functions
 * (its `tfExpression.js` adds null and resolved-collection arguments, which the hooks leave to it):
 * each library's copies are hooked alike, and a synthesis checks the library it runs on is hooked.
 * A resolver meeting the other library's expression refuses (TASK_CDK_MIXED): its rendering
 * would be taken for text, and cdktn's `Fn` cannot record itself on a cdktf stack.
 *
 * A config loads in a tsx namespace, which gives some of cdktf's files a second copy (`…js?namespace=…`)
 * while others stay shared. So each hook goes into every copy of its file found in require.cache
 * before a synthesis, and their state is one per thread (on globalThis).
 */
interface LiteralState {
  active: LiteralTable | undefined;
  trustDepth: number;
  /** The exports of each hooked cdktf file copy. */
  hooked: WeakSet<object>;
  /** Each copy's TFExpression and its library: a token of any copy may be resolved by another copy's resolver. */
  expressions: Map<Function, CdkName>;
  /** The library the active synthesis runs on. */
  activeCdk: CdkName | undefined;
  /** require.cache size at the last scan for copies. */
  scanned: number;
  nonce: string;
  /** Token keys registered before the hooks (a config that made tokens while loading). */
  earlier: Set<string> | undefined;
  /** Which of the hooked files (`<library>/<path>`) have at least one copy hooked. */
  kinds: Set<string>;
}
const STATE = Symbol.for("cdktf-sync.literal-text.v2");
const state: LiteralState = ((globalThis as Record<symbol, unknown>)[STATE] ??= {
  active: undefined,
  trustDepth: 0,
  hooked: new WeakSet(),
  expressions: new Map(),
  activeCdk: undefined,
  scanned: -1,
  nonce: randomBytes(9).toString("base64url").replace(/[^A-Za-z0-9]/g, "x"),
  earlier: undefined,
  kinds: new Set(),
} satisfies LiteralState) as LiteralState;

/**
 * Marks literal text during `fn` (a synthesis on library `cdk`) with a new table; hooks the copies
 * of cdktf and cdktn loaded by then, and refuses if `cdk`'s are not all hooked.
 */
export function withLiteralTable<R>(cdk: CdkName, fn: (table: LiteralTable) => R): R {
  hookLoadedCdks(cdk);
  const previous = state.active;
  const previousCdk = state.activeCdk;
  const savedDepth = state.trustDepth;
  const table = new LiteralTable();
  state.active = table;
  state.activeCdk = cdk;
  state.trustDepth = 0;
  try {
    return fn(table);
  } finally {
    state.active = previous;
    state.activeCdk = previousCdk;
    state.trustDepth = savedDepth;
  }
}

/** The library the synthesis running now uses (undefined outside one). */
export function activeCdk(): CdkName | undefined {
  return state.activeCdk;
}

const VERBATIM = Symbol.for("cdktf-sync.verbatim");

/** A value cdktf writes as it is, without resolving it (plain JSON that is already Terraform text). */
export function verbatim(cdktf: typeof Cdktf, value: unknown): unknown {
  const resolvable = { [VERBATIM]: true, creationStack: [] as string[], resolve: () => value, toString: () => "<verbatim>" };
  return typeof value === "string" ? cdktf.Token.asString(resolvable) : cdktf.Token.asAny(resolvable);
}

type Patcher = (exports: any, cdk: CdkName) => void;

/** Files with hooks, by their path under cdktf/lib (and cdktn/lib). */
const PATCHERS: Record<string, Patcher> = {
  "tokens/private/encoding.js": patchEncoding,
  "tokens/resolvable.js": patchResolver,
  "tfExpression.js": patchExpressions,
  "functions/helpers.js": patchFunctionHelpers,
  "tokens/private/token-map.js": patchTokenMap,
};
const FILE = /[\\/](cdktf|cdktn)[\\/]lib[\\/](tokens[\\/]private[\\/]encoding|tokens[\\/]resolvable|tfExpression|functions[\\/]helpers|tokens[\\/]private[\\/]token-map)\.js(\?.*)?$/;

const moduleCache = createRequire(import.meta.url).cache;

/**
 * Hooks every copy of cdktf's and cdktn's hooked files in require.cache not hooked yet; throws
 * unless every hooked file of `required` (the library a synthesis is about to run on) is hooked.
 */
export function hookLoadedCdks(required: CdkName): void {
  const cache = moduleCache;
  const keys = Object.keys(cache);
  if (keys.length !== state.scanned) {
    for (const key of keys) {
      const m = FILE.exec(key);
      const exports = m && cache[key]?.exports;
      if (!m || !exports || state.hooked.has(exports)) continue;
      const cdk = m[1] as CdkName;
      const kind = `${m[2]!.replace(/\\/g, "/")}.js`;
      PATCHERS[kind]!(exports, cdk);
      state.hooked.add(exports);
      state.kinds.add(`${cdk}/${kind}`);
    }
    state.scanned = keys.length;
  }
  // Fail closed: a synthesis with an unhooked part of its library would write literal text as code.
  const missing = Object.keys(PATCHERS).filter((k) => !state.kinds.has(`${required}/${k}`));
  if (missing.length > 0) throw new CtsError("CTS_INTERNAL", "internal", `${required}'s ${missing.join(", ")} was not found loaded, so literal text cannot be marked and nothing is synthesized. Report this with your ${required} version (cts needs cdktf 0.21 or cdktn 0.24).`);
}

/** Whether `s` holds a marker of one of our tokens (what cdktf's `test()` should have meant). */
function hasOwnToken(s: string, re: RegExp): boolean {
  // cdktf asks this of every string and object key it resolves: most hold no marker at all.
  if (!s.includes("TfToken[")) return false;
  let scan = scans.get(re.source);
  if (!scan) scans.set(re.source, (scan = new RegExp(re.source, "g")));
  scan.lastIndex = 0;
  for (let m = scan.exec(s); m; m = scan.exec(s)) if (ownKey(m[1] ?? "")) return true;
  return false;
}
const scans = new Map<string, RegExp>();

function ownKey(key: string): boolean {
  return key.includes(`.${state.nonce}.`) || (state.earlier?.has(key) ?? false);
}

/**
 * Text that reads the same wherever cdktf writes it (template text, or quoted in an expression by
 * cdktf's own escapeString, which writes `\n` as `\\n`), so it needs no placeholder: no lead, brace,
 * quote, backslash, marker or control character but newline, and nothing cdktf's number-token scan
 * could take for a number token. Most strings are like this.
 */
const PLAIN = /^[^$%{}"\\\u0000-\u0009\u000b-\u001f\u007f\uE000-\uE002]*$/;
const NUMBER_LIKE = /[-|\d.+]e[-|\d.eE+]/;
function plainText(s: string): boolean {
  return PLAIN.test(s) && !NUMBER_LIKE.test(s);
}

/** The library whose expression `t` is (undefined: not an expression). */
function expressionCdk(t: unknown): CdkName | undefined {
  for (const [C, cdk] of state.expressions) if (t instanceof C) return cdk;
  return undefined;
}

/**
 * TokenString: every string resolve() meets is split (resolve.js is the only caller passing the
 * escape flags); elsewhere a string "is a token" only when it holds one of ours.
 */
function patchEncoding(encoding: any): void {
  const TokenString = encoding.TokenString;
  const ownTokensOnly = (ts: { re: RegExp; test(): boolean }, s: string) => {
    if (typeof s === "string") ts.test = () => hasOwnToken(s, ts.re);
    return ts;
  };
  const forString = TokenString.forString;
  TokenString.forString = function (s: string, ...flags: boolean[]) {
    if (!state.active) return forString.call(this, s, ...flags);
    if (flags.length === 0) return ownTokensOnly(forString.call(this, s), s);
    const ts = forString.call(this, s, flags[0], false);
    if (s.length > 0 && !plainText(s)) ts.test = () => true;
    return ts;
  };
  for (const name of ["forListToken", "forMapToken"]) {
    const original = TokenString[name];
    TokenString[name] = function (s: string) {
      const ts = original.call(this, s);
      return state.active ? ownTokensOnly(ts, s) : ts;
    };
  }
}

interface Fragment {
  type: "literal" | "token" | "escape" | "intrinsic";
  lit?: string;
  kind?: "open" | "close";
}

/** The resolver: literal fragments become placeholders; an expression's rendering is trusted. */
function patchResolver(resolvable: any, cdk: CdkName): void {
  const resolver = resolvable.DefaultTokenResolver.prototype;
  const resolveString = resolver.resolveString;
  resolver.resolveString = function (fragments: { fragments: Fragment[]; constructor: new () => { fragments: Fragment[] } }, context: unknown) {
    const table = state.active;
    if (!table || state.trustDepth > 0) return resolveString.call(this, fragments, context);
    const only = fragments.fragments.length === 1 ? fragments.fragments[0]! : undefined;
    if (only?.type === "literal") return table.mark(only.lit ?? "");
    const marked = new fragments.constructor();
    for (const f of fragments.fragments) {
      if (f.type === "literal") marked.fragments.push({ type: "literal", lit: table.mark(f.lit ?? "") });
      else if (f.type === "escape") marked.fragments.push({ type: "literal", lit: table.mark(f.kind === "open" ? "${" : "}") });
      else marked.fragments.push(f);
    }
    return resolveString.call(this, marked, context);
  };

  const resolveToken = resolver.resolveToken;
  resolver.resolveToken = function (t: any, context: any, postProcessor: any) {
    if (t?.[VERBATIM]) return t.resolve();
    const table = state.active;
    if (!table) return resolveToken.call(this, t, context, postProcessor);
    const saved = state.trustDepth;
    state.trustDepth = 0;
    try {
      const from = expressionCdk(t);
      if (!from) return resolveToken.call(this, t, context, postProcessor);
      if (from !== cdk) throw mixedExpression(from, cdk, t);
      let resolved = t.resolve(context);
      if (typeof resolved !== "string") return postProcessor.postProcess(context.resolve(resolved), context);
      state.trustDepth = 1;
      resolved = context.resolve(resolved);
      state.trustDepth = 0;
      resolved = postProcessor.postProcess(resolved, context);
      // cdktf resolves strings again later: behind a placeholder, this text stays cdktf's.
      return typeof resolved === "string" ? table.trusted(resolved) : resolved;
    } finally {
      state.trustDepth = saved;
    }
  };
}

/** A task passed an expression of one library to constructs of the other. */
function mixedExpression(from: CdkName, stack: CdkName, t: unknown): CtsError {
  // A reference knows its identifier, a function call its name; toString would register a token.
  const e = t as { constructor?: { name?: string }; identifier?: unknown; name?: unknown };
  const label = typeof e.identifier === "string" ? e.identifier : typeof e.name === "string" ? `${e.name}()` : "";
  const what = `${e.constructor?.name ?? "expression"}${label ? ` ${label}` : ""}`;
  return new CtsError(
    "TASK_CDK_MIXED",
    "usage",
    `mixes two CDK libraries: a ${from} expression (${what.slice(0, 80)}) is used in constructs of ${stack}. A task's constructs, references and Fn calls must all come from one library: import them all from ${CDK_PACKAGES[stack]}, or all from ${CDK_PACKAGES[from]}.`,
    { detail: { cdks: [stack, from] } },
  );
}

/** TFExpression: quoting a literal and writing a map key mark the text instead of pasting it. */
function patchExpressions(expressions: any, cdk: CdkName): void {
  // TFExpression is not exported; every cdktf expression (rawString's RawString too) extends it.
  const TFExpression = Object.getPrototypeOf(Object.getPrototypeOf(expressions.rawString(""))).constructor;
  if (typeof TFExpression !== "function" || typeof TFExpression.prototype.escapeString !== "function")
    throw new Error(`${cdk}'s TFExpression was not found: the literal-text hooks need cdktf 0.21 or cdktn 0.24`);
  state.expressions.set(TFExpression, cdk);

  const escapeString = TFExpression.prototype.escapeString;
  TFExpression.prototype.escapeString = function (str: string) {
    if (!state.active) return escapeString.call(this, str);
    return plainText(str) ? escapeString.call(this, str) : state.active.mark(str);
  };

  const resolveExpressionPart = TFExpression.prototype.resolveExpressionPart;
  TFExpression.prototype.resolveExpressionPart = function (context: any, arg: any) {
    const table = state.active;
    if (!table || arg === null || typeof arg !== "object" || Array.isArray(arg) || typeof arg.resolve === "function")
      return resolveExpressionPart.call(this, context, arg);
    const resolvedArg = context.resolve(arg);
    if (resolvedArg === null || typeof resolvedArg !== "object" || Array.isArray(resolvedArg)) return resolveExpressionPart.call(this, context, arg);
    const entries = Object.keys(arg)
      .filter((key) => arg[key] !== undefined)
      .map((key) => `"${table.mark(key)}" = ${this.resolveArg(context, arg[key])}`);
    return `{${entries.join(", ")}}`;
  };
}

/** Fn argument validation: a `"` is a value, and list items are not pre-quoted. */
function patchFunctionHelpers(helpers: any): void {
  const stringValue = helpers.stringValue;
  helpers.stringValue = function (value: unknown) {
    return state.active && typeof value === "string" ? { value } : stringValue(value);
  };
  // cdktf puts quotes around each string of a list argument when Fn is called, so `"` in it ended
  // the literal. Strings stay unquoted here; resolveArg quotes and the writer escapes them.
  const listOf = helpers.listOf;
  helpers.listOf = function (type: unknown) {
    const validate = listOf(type);
    return (value: unknown) => {
      const checked = validate(value);
      if (!state.active || !Array.isArray(value) || !Array.isArray(checked.value)) return checked;
      const items = value.filter((item) => item !== undefined && item !== null);
      return { value: checked.value.map((v: unknown, i: number) => (typeof items[i] === "string" && v === `"${items[i]}"` ? items[i] : v)) };
    };
  };
  // variadic() calls listOf through its own module binding, not the export.
  helpers.variadic = function (type: unknown) {
    return (value: unknown) => ({ value: helpers.listOf(type)(value).value, variadic: true });
  };
}

/** Token keys: a nonce the catalog cannot guess; a key that is not ours is text, not a lookup. */
function patchTokenMap(tokenMapModule: any): void {
  // One map for every copy (cdktf keeps it on globalThis): it is patched once.
  const map = tokenMapModule.TokenMap.instance();
  if (map[STATE]) return;
  map[STATE] = true;
  state.earlier = new Set<string>(map.stringTokenMap.keys());
  const registerStringKey = map.registerStringKey;
  map.registerStringKey = function (token: unknown, displayHint?: string) {
    return registerStringKey.call(this, token, `${displayHint || "TOKEN"}.${state.nonce}`);
  };
  const lookupToken = map.lookupToken;
  map.lookupToken = function (key: string) {
    if (!ownKey(key)) return undefined;
    return lookupToken.call(this, key);
  };
}
