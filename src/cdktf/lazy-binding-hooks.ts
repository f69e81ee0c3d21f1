import { LAZY_INDEX_ENTRY, LAZY_INDEX_MARKER } from "./binding-roots.ts";

// Node's ESM loader imports a CommonJS module by running it and then reading every export it
// found, so `import * as aws from "@cdktf/provider-aws"` would call every getter of a lazy index
// too. The load hook below answers for a binding's root with a small ES module instead: one named
// export per namespace, each a stand-in that requires its folder on first use, and the lazy index
// as the default export (what `import aws from` gives for CommonJS). The source is text, handed to
// `module.register` as a data: URL, so no build step has to copy a hook file into dist/.

/** The stand-in for one namespace: a Proxy that loads the namespace's module on its first touch. */
const NAMESPACE_STAND_IN = `
function standIn(lazy, name) {
  // The module's properties are copied onto the Proxy's target when first touched: Proxy invariants
  // (a non-configurable __esModule, ownKeys) then hold, and every trap answers from that copy.
  const target = {};
  let loaded = false;
  const ready = () => {
    if (!loaded) {
      const real = lazy[name];
      Object.defineProperties(target, Object.getOwnPropertyDescriptors(real));
      Object.setPrototypeOf(target, Object.getPrototypeOf(real));
      loaded = true;
    }
    return target;
  };
  const handler = {};
  for (const trap of Object.getOwnPropertyNames(Reflect)) handler[trap] = (_t, ...args) => Reflect[trap](ready(), ...args);
  return new Proxy(target, handler);
}`;

/** The hooks' source: `load` answers for binding roots that have a lazy index, and passes everything else on. */
export const LAZY_BINDING_HOOKS = `
import { readFileSync } from "node:fs";
const MARKER = new RegExp(${JSON.stringify(LAZY_INDEX_MARKER.source)}, "m");
const ENTRY = new RegExp(${JSON.stringify(LAZY_INDEX_ENTRY.source)}, "gm");
const roots = new Map();

// The namespace names of the lazy index beside a root lib/index.js, or undefined (no lazy index).
function namespacesOf(url) {
  const path = url.split("?")[0];
  if (!path.startsWith("file:") || !path.endsWith("/lib/index.js")) return undefined;
  if (!roots.has(path)) {
    let names;
    try {
      const text = readFileSync(new URL(path.slice(0, -"index.js".length) + "lazy-index.js"), "utf8");
      if (MARKER.test(text)) names = [...text.matchAll(ENTRY)].map((m) => m[1]);
    } catch {}
    roots.set(path, names);
  }
  return roots.get(path);
}

export async function load(url, context, next) {
  const names = context.format === "commonjs" || context.format == null ? namespacesOf(url) : undefined;
  if (!names) return next(url, context);
  const lines = [
    'import { createRequire } from "node:module";',
    // Required, not imported: the namespaces are the same module objects a require or a deep import gets.
    "const lazy = createRequire(" + JSON.stringify(url.split("?")[0]) + ")('./lazy-index.js');",
    ${JSON.stringify(NAMESPACE_STAND_IN)},
    "export default lazy;",
    ...names.map((name, i) => "const n" + i + " = standIn(lazy, " + JSON.stringify(name) + ");"),
    "export { " + names.map((name, i) => "n" + i + " as " + JSON.stringify(name)).join(", ") + " };",
  ];
  return { format: "module", source: lines.join("\\n"), shortCircuit: true };
}
`;
